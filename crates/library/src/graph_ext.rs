//! Calling a loaded library's partitioners and graph passes.
//!
//! The graph layer's `optimize_for` makes these calls (each loaded
//! partitioner and pass is registered there as a backend; see
//! `backends.rs`). Graphs cross the ABI as NNVM graph JSON text. A [`PartitionStrategy`] marks the
//! nodes it supports (through `supported_ops`, or by driving the library's
//! selector over the graph's edges) and reviews each subgraph; a
//! [`GraphPass`] rewrites a graph and may create parameters through the
//! host. Every failure is an error naming the library, the partitioner or
//! pass, the callback and the library's message; nothing unwinds across
//! the boundary.

use crate::convert::{dtype_code, dtype_of_code, CAttrs};
use crate::graph_json;
use crate::host::{c_str, checked};
use crate::loader::LibraryCode;
use crate::selector::{grow, SelectorGuard};
use oxnet_abi as abi;
use oxnet_core::{DType, Device, Error, NDArray, Result};
use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// One strategy of a library's partitioner, callable by the host.
#[derive(Clone)]
pub struct PartitionStrategy {
    inner: Arc<StrategyInner>,
}

struct StrategyInner {
    library: String,
    partitioner: String,
    name: String,
    subgraph_op: String,
    user_data: *mut c_void,
    desc: abi::Strategy,
    _code: Arc<LibraryCode>,
}

// SAFETY: the descriptor and user data belong to the library's immutable
// table, which the ABI requires to be usable from any thread.
unsafe impl Send for StrategyInner {}
unsafe impl Sync for StrategyInner {}

impl std::fmt::Debug for PartitionStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionStrategy")
            .field("library", &self.inner.library)
            .field("partitioner", &self.inner.partitioner)
            .field("name", &self.inner.name)
            .field("subgraph_op", &self.inner.subgraph_op)
            .finish()
    }
}

fn fault(library: &str, who: &str, msg: impl std::fmt::Display) -> Error {
    Error::Custom { msg: format!("library `{library}`: {who}: {msg}"), source: None }
}

fn owned(options: &[(&str, &str)]) -> Vec<(String, String)> {
    options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn c_text(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::Invalid(format!("{what} contains a NUL byte")))
}

/// Collects what a callback pushes through an `oxnet_ext_sink`.
#[derive(Default)]
struct SinkData {
    entries: Vec<(Option<String>, String)>,
}

unsafe extern "C" fn sink_push(host: *mut c_void, key: *const c_char, value: *const c_char) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `host` is the SinkData of the running call (see `SinkData::abi`).
        if let Some(sink) = (host as *mut SinkData).as_mut() {
            let key = if key.is_null() { None } else { Some(c_str(key)) };
            sink.entries.push((key, c_str(value)));
        }
    }));
}

impl SinkData {
    /// The ABI view; valid while `self` is neither moved nor dropped.
    fn abi(&mut self) -> abi::Sink {
        abi::Sink { host_data: self as *mut SinkData as *mut c_void, push: Some(sink_push) }
    }
}

impl PartitionStrategy {
    pub(crate) fn new(
        library: &str,
        partitioner: &str,
        user_data: *mut c_void,
        desc: abi::Strategy,
        lib: Arc<LibraryCode>,
    ) -> PartitionStrategy {
        // SAFETY: NULL or NUL-terminated strings of the library's table.
        let (name, subgraph_op) = unsafe { (c_str(desc.name), c_str(desc.subgraph_op_name)) };
        PartitionStrategy {
            inner: Arc::new(StrategyInner {
                library: library.to_string(),
                partitioner: partitioner.to_string(),
                name,
                subgraph_op,
                user_data,
                desc,
                _code: lib,
            }),
        }
    }

    /// The partitioner's name (MXNet's backend name).
    pub fn partitioner(&self) -> &str {
        &self.inner.partitioner
    }

    /// The strategy's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The operator that replaces each accepted subgraph.
    pub fn subgraph_op_name(&self) -> &str {
        &self.inner.subgraph_op
    }

    /// The path of the library that declared it.
    pub fn library(&self) -> &str {
        &self.inner.library
    }

    /// True when the strategy selects through a selector object rather than `supported_ops`.
    pub fn uses_selector(&self) -> bool {
        self.inner.desc.create_selector.is_some()
    }

    /// True when the library reviews subgraphs (otherwise every subgraph is accepted).
    pub fn reviews_subgraphs(&self) -> bool {
        self.inner.desc.review_subgraph.is_some()
    }

    fn who(&self) -> String {
        format!("partitioner `{}` strategy `{}`", self.inner.partitioner, self.inner.name)
    }

    fn fail(&self, e: impl std::fmt::Display) -> Error {
        fault(&self.inner.library, &self.who(), e)
    }

    /// Which nodes of `graph_json` (an NNVM graph with `num_nodes` nodes) the
    /// strategy takes: per node, -1 (not taken) or the id (>= 0) of the
    /// subgraph it joins. With `supported_ops` the ids are the library's; with
    /// a selector (used when a strategy has both) the host grows subgraphs as
    /// MXNet does: each node not yet
    /// taken, in graph order, that `select` accepts seeds a subgraph, which
    /// grows breadth-first into input and output nodes that `select_input` /
    /// `select_output` accept, shrinks until it does not feed itself through
    /// outside nodes, and is `filter`ed; each connected group of the nodes kept
    /// gets the next subgraph id; `reset` follows each seed. Variables
    /// (`"op": "null"`) are never offered to a selector.
    pub fn supported_ops(
        &self,
        graph_json: &str,
        num_nodes: usize,
        options: &[(&str, &str)],
    ) -> Result<Vec<i32>> {
        let graph = graph_json::read(graph_json).map_err(|e| self.fail(format!("the graph given: {e}")))?;
        if graph.nodes.len() != num_nodes {
            return Err(self.fail(format!(
                "the graph given has {} nodes, but num_nodes is {num_nodes}",
                graph.nodes.len()
            )));
        }
        let n = i32::try_from(num_nodes).map_err(|_| self.fail("the graph has too many nodes"))?;
        let json = c_text("the graph JSON", graph_json).map_err(|e| self.fail(e))?;
        let opts = CAttrs::new(&owned(options)).map_err(|e| self.fail(e))?;
        let user = self.inner.user_data;
        if let Some(create) = self.inner.desc.create_selector {
            let mut sel = SelectorGuard(abi::Selector {
                selector: std::ptr::null_mut(),
                select: None,
                select_input: None,
                select_output: None,
                filter: None,
                reset: None,
                destroy: None,
            });
            checked("create_selector", |err| unsafe {
                create(user, json.as_ptr(), &opts.abi(), &mut sel.0, err)
            })
            .map_err(|e| self.fail(e))?;
            return grow(&graph, &sel.0).map_err(|e| self.fail(e));
        }
        let f = self.inner.desc.supported_ops.ok_or_else(|| self.fail("it selects no nodes"))?;
        let mut ids = vec![-1i32; num_nodes];
        checked("supported_ops", |err| unsafe {
            f(user, json.as_ptr(), ids.as_mut_ptr(), n, &opts.abi(), err)
        })
        .map_err(|e| self.fail(e))?;
        if let Some((i, id)) = ids.iter().enumerate().find(|(_, &id)| id < -1) {
            return Err(
                self.fail(format!("supported_ops gave node {i} the subgraph id {id} (ids are -1 or >= 0)"))
            );
        }
        Ok(ids)
    }

    /// Asks the library whether to keep subgraph `id` (`subgraph_json`, an
    /// NNVM graph) and which attributes its subgraph node gets. Without a
    /// review callback every subgraph is kept with no attributes.
    pub fn review_subgraph(
        &self,
        subgraph_json: &str,
        id: i32,
        options: &[(&str, &str)],
    ) -> Result<(bool, Vec<(String, String)>)> {
        graph_json::read(subgraph_json).map_err(|e| self.fail(format!("the subgraph given: {e}")))?;
        let Some(f) = self.inner.desc.review_subgraph else { return Ok((true, Vec::new())) };
        let json = c_text("the subgraph JSON", subgraph_json).map_err(|e| self.fail(e))?;
        let opts = CAttrs::new(&owned(options)).map_err(|e| self.fail(e))?;
        let mut accept = 0i32;
        let mut sink = SinkData::default();
        let mut out = sink.abi();
        checked("review_subgraph", |err| unsafe {
            f(self.inner.user_data, json.as_ptr(), id, &opts.abi(), &mut accept, &mut out, err)
        })
        .map_err(|e| self.fail(e))?;
        let mut attrs = Vec::new();
        for (k, v) in sink.entries {
            let k = k.ok_or_else(|| {
                self.fail(format!(
                    "review_subgraph pushed the value `{v}` without a key (attributes are key/value pairs)"
                ))
            })?;
            attrs.push((k, v));
        }
        Ok((accept != 0, attrs))
    }
}

/// A graph pass of a loaded library, callable by the host.
#[derive(Clone)]
pub struct GraphPass {
    inner: Arc<PassInner>,
}

struct PassInner {
    library: String,
    name: String,
    user_data: *mut c_void,
    run: abi::GraphPassFn,
    _code: Arc<LibraryCode>,
}

// SAFETY: as for `StrategyInner`.
unsafe impl Send for PassInner {}
unsafe impl Sync for PassInner {}

impl std::fmt::Debug for GraphPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphPass")
            .field("library", &self.inner.library)
            .field("name", &self.inner.name)
            .finish()
    }
}

/// A parameter a pass created through the host's `alloc_param`.
#[derive(Debug, Clone)]
pub struct NewParam {
    /// The name the pass gave it (the name of its variable node in the new graph).
    pub name: String,
    /// True for an auxiliary state, false for an argument.
    pub is_aux: bool,
    /// The array, as the pass left it.
    pub array: NDArray,
}

/// What a pass produced: the rewritten graph and the parameters it created.
#[derive(Debug, Clone)]
pub struct PassOutput {
    /// The new graph's NNVM JSON (checked to be a well-formed graph).
    pub graph_json: String,
    /// The parameters created, in the order the pass asked for them.
    pub params: Vec<NewParam>,
}

/// The allocator of [`GraphPass::run_with_zeros`]: a zero-filled CPU array.
pub fn zeros_param(_name: &str, _is_aux: bool, shape: &[usize], dtype: DType) -> Result<NDArray> {
    NDArray::zeros(shape, dtype, Device::Cpu)
}

type Alloc<'a> = dyn FnMut(&str, bool, &[usize], DType) -> Result<NDArray> + 'a;

/// A DLTensor handed to a pass, with the shape and strides it points to.
type HandedTensor = Box<(abi::DLTensor, Vec<i64>, Vec<i64>)>;

/// The state behind one pass call's `oxnet_ext_pass_resource`.
struct PassScope<'a> {
    alloc: &'a mut Alloc<'a>,
    params: Vec<NewParam>,
    /// Each DLTensor handed out, with its shape and strides (boxed: stable addresses).
    tensors: Vec<HandedTensor>,
    /// Why allocations failed (reported with the pass's error).
    failures: Vec<String>,
}

impl PassScope<'_> {
    unsafe fn alloc_param(
        &mut self,
        name: *const c_char,
        is_aux: i32,
        shape: *const i64,
        ndim: i32,
        dtype: i32,
    ) -> std::result::Result<*mut abi::DLTensor, String> {
        if name.is_null() {
            return Err("alloc_param got no name".into());
        }
        let name = c_str(name);
        if name.is_empty() || self.params.iter().any(|p| p.name == name) {
            return Err(format!("alloc_param: the name `{name}` is empty or already taken"));
        }
        if !(0..=abi::MAX_NDIM as i32).contains(&ndim) || (ndim > 0 && shape.is_null()) {
            return Err(format!("alloc_param `{name}`: bad shape (ndim {ndim})"));
        }
        let dims: &[i64] = if ndim == 0 { &[] } else { std::slice::from_raw_parts(shape, ndim as usize) };
        if dims.iter().any(|&d| d < 0) {
            return Err(format!("alloc_param `{name}`: negative extent in {dims:?}"));
        }
        let dt = dtype_of_code(dtype)
            .ok_or_else(|| format!("alloc_param `{name}`: unknown dtype code {dtype}"))?;
        let ushape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let array = (self.alloc)(&name, is_aux != 0, &ushape, dt)
            .map_err(|e| format!("alloc_param `{name}`: {e}"))?;
        if array.shape() != ushape.as_slice() || array.dtype() != dt || !array.is_contiguous() {
            return Err(format!(
                "alloc_param `{name}`: the host's allocator gave a {:?} {:?} array (contiguous: {}) for {ushape:?} {dt:?}",
                array.shape(),
                array.dtype(),
                array.is_contiguous()
            ));
        }
        let mut strides = vec![1i64; ushape.len()];
        for i in (0..ushape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1].max(1);
        }
        let raw = abi::DLTensor {
            data: array.raw_ptr() as *mut c_void,
            device: abi::DLDevice::CPU,
            ndim,
            dtype: abi::dl_dtype_of(dtype_code(dt))
                .ok_or_else(|| format!("alloc_param `{name}`: dtype {dt:?}"))?,
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let mut b = Box::new((raw, dims.to_vec(), strides));
        b.0.shape = b.1.as_mut_ptr();
        b.0.strides = b.2.as_mut_ptr();
        let p: *mut abi::DLTensor = &mut b.0;
        self.tensors.push(b);
        self.params.push(NewParam { name, is_aux: is_aux != 0, array });
        Ok(p)
    }
}

unsafe extern "C" fn alloc_param_cb(
    host: *mut c_void,
    name: *const c_char,
    is_aux: i32,
    shape: *const i64,
    ndim: i32,
    dtype: i32,
) -> *mut abi::DLTensor {
    let Some(scope) = (host as *mut PassScope).as_mut() else { return std::ptr::null_mut() };
    match catch_unwind(AssertUnwindSafe(|| scope.alloc_param(name, is_aux, shape, ndim, dtype))) {
        Ok(Ok(p)) => p,
        Ok(Err(msg)) => {
            scope.failures.push(msg);
            std::ptr::null_mut()
        }
        Err(_) => {
            scope.failures.push("alloc_param: the host's allocator panicked".into());
            std::ptr::null_mut()
        }
    }
}

impl GraphPass {
    pub(crate) fn new(library: &str, desc: &abi::Pass, lib: Arc<LibraryCode>) -> Option<GraphPass> {
        Some(GraphPass {
            inner: Arc::new(PassInner {
                library: library.to_string(),
                // SAFETY: NULL or a NUL-terminated string of the library's table.
                name: unsafe { c_str(desc.name) },
                user_data: desc.user_data,
                run: desc.run?,
                _code: lib,
            }),
        })
    }

    /// The pass's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The path of the library that declared it.
    pub fn library(&self) -> &str {
        &self.inner.library
    }

    fn fail(&self, e: impl std::fmt::Display) -> Error {
        fault(&self.inner.library, &format!("graph pass `{}`", self.inner.name), e)
    }

    /// Runs the pass on `graph_json` (NNVM JSON) with `options`. Each
    /// parameter the pass asks for is created by `alloc_param(name, is_aux,
    /// shape, dtype)` (a contiguous CPU array the pass then fills) and
    /// returned with the new graph. The library's JSON is checked: malformed
    /// JSON or a malformed graph is an error.
    pub fn run(
        &self,
        graph_json: &str,
        options: &[(&str, &str)],
        mut alloc_param: impl FnMut(&str, bool, &[usize], DType) -> Result<NDArray>,
    ) -> Result<PassOutput> {
        graph_json::read(graph_json).map_err(|e| self.fail(format!("the graph given: {e}")))?;
        let json = c_text("the graph JSON", graph_json).map_err(|e| self.fail(e))?;
        let opts = CAttrs::new(&owned(options)).map_err(|e| self.fail(e))?;
        let mut scope = PassScope {
            alloc: &mut alloc_param,
            params: Vec::new(),
            tensors: Vec::new(),
            failures: Vec::new(),
        };
        let res = abi::PassResource {
            host_data: &mut scope as *mut PassScope as *mut c_void,
            alloc_param: Some(alloc_param_cb),
        };
        let mut sink = SinkData::default();
        let mut out = sink.abi();
        let run = self.inner.run;
        let status = checked("run", |err| unsafe {
            run(self.inner.user_data, json.as_ptr(), &opts.abi(), &mut out, &res, err)
        });
        let PassScope { params, failures, .. } = scope;
        if let Err(e) = status {
            let why = if failures.is_empty() { String::new() } else { format!(" ({})", failures.join("; ")) };
            return Err(self.fail(format!("{e}{why}")));
        }
        let mut text = String::new();
        for (k, v) in sink.entries {
            if let Some(k) = k {
                return Err(
                    self.fail(format!("it pushed the pair `{k}` = `{v}`; a pass pushes graph JSON text"))
                );
            }
            text.push_str(&v);
        }
        if text.is_empty() {
            return Err(self.fail("it returned no graph"));
        }
        graph_json::read(&text).map_err(|e| self.fail(format!("it returned a malformed graph: {e}")))?;
        Ok(PassOutput { graph_json: text, params })
    }

    /// [`run`](Self::run) with zero-filled parameters ([`zeros_param`]).
    pub fn run_with_zeros(&self, graph_json: &str, options: &[(&str, &str)]) -> Result<PassOutput> {
        self.run(graph_json, options, zeros_param)
    }
}
