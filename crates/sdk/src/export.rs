//! The library table and the `extern "C"` trampolines that call the
//! traits, catching panics at every boundary.

use crate::abi;
use crate::graph_export::{describe, GraphDescs, PassEntry};
use crate::partition::Partitioner;
use crate::pass::PassResource;
use crate::traits::{OpResult, Operator, Req, State, StatefulOperator};
use crate::{Attrs, DType, Resource, Tensor, TensorMut};
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

enum Kind {
    Stateless(Box<dyn Operator>),
    Stateful(Box<dyn StatefulOperator>),
}

struct Entry {
    name: CString,
    kind: Kind,
    subgraph: bool,
}

impl Entry {
    fn signature(&self) -> &dyn crate::Signature {
        match &self.kind {
            Kind::Stateless(o) => o.as_ref(),
            Kind::Stateful(o) => o.as_ref(),
        }
    }
}

type InitFn = Box<dyn Fn(i32) -> OpResult<()> + Send + Sync>;

/// The operators, partitioners and graph passes of a library, and its
/// `initialize` hook.
#[derive(Default)]
pub struct LibraryBuilder {
    ops: Vec<Entry>,
    partitioners: Vec<Partitioner>,
    passes: Vec<PassEntry>,
    init: Option<InitFn>,
}

impl LibraryBuilder {
    /// An empty library.
    pub fn new() -> LibraryBuilder {
        LibraryBuilder::default()
    }

    /// Adds a stateless operator under `name`.
    pub fn op(mut self, name: &str, op: impl Operator) -> Self {
        self.ops.push(Entry { name: c_name(name), kind: Kind::Stateless(Box::new(op)), subgraph: false });
        self
    }

    /// Adds a stateful operator under `name`.
    pub fn stateful_op(mut self, name: &str, op: impl StatefulOperator) -> Self {
        self.ops.push(Entry { name: c_name(name), kind: Kind::Stateful(Box::new(op)), subgraph: false });
        self
    }

    /// Adds a stateless operator marked as a subgraph operator (the operator
    /// a partitioner's strategy puts in place of each subgraph).
    pub fn subgraph_op(mut self, name: &str, op: impl Operator) -> Self {
        self.ops.push(Entry { name: c_name(name), kind: Kind::Stateless(Box::new(op)), subgraph: true });
        self
    }

    /// Adds a stateful operator marked as a subgraph operator.
    pub fn stateful_subgraph_op(mut self, name: &str, op: impl StatefulOperator) -> Self {
        self.ops.push(Entry { name: c_name(name), kind: Kind::Stateful(Box::new(op)), subgraph: true });
        self
    }

    /// Adds a partitioner (MXNet's backend) with its strategies.
    pub fn partitioner(mut self, p: Partitioner) -> Self {
        self.partitioners.push(p);
        self
    }

    /// Adds a graph pass under `name`: `f(graph_json, options, resource)`
    /// returns the rewritten graph's JSON (see [`Graph`](crate::Graph)); the
    /// resource creates new parameters.
    pub fn pass(
        mut self,
        name: &str,
        f: impl Fn(&str, &Attrs, &mut PassResource) -> OpResult<String> + Send + Sync + 'static,
    ) -> Self {
        self.passes.push(PassEntry { name: c_name(name), f: Box::new(f) });
        self
    }

    /// A hook receiving oxnet's version (major*10000 + minor*100 + patch);
    /// an error refuses the load.
    pub fn initialize(mut self, f: impl Fn(i32) -> OpResult<()> + Send + Sync + 'static) -> Self {
        self.init = Some(Box::new(f));
        self
    }
}

pub(crate) fn c_name(name: &str) -> CString {
    CString::new(name.replace('\0', "")).unwrap_or_default()
}

struct Table {
    lib: abi::Library,
    _descs: Vec<abi::Op>,
    _entries: Vec<Entry>,
    _graph: Option<GraphDescs>,
    _partitioners: Vec<Partitioner>,
    _passes: Vec<PassEntry>,
    /// Why the library cannot be used (reported by `initialize`).
    broken: Option<String>,
    init: Option<InitFn>,
}
// SAFETY: the table is immutable after construction; operators are Send + Sync.
unsafe impl Send for Table {}
unsafe impl Sync for Table {}

static TABLE: OnceLock<Option<Table>> = OnceLock::new();

/// Builds (once) and returns the library table; used by [`export_library!`](crate::export_library).
///
/// # Safety
/// `host` is NULL or the host's table.
pub unsafe fn entry(host: *const abi::Host, build: fn() -> LibraryBuilder) -> *const abi::Library {
    let _ = host;
    let table = TABLE.get_or_init(|| catch_unwind(|| make_table(build())).ok());
    match table {
        Some(t) => &t.lib,
        None => std::ptr::null(),
    }
}

fn make_table(b: LibraryBuilder) -> Table {
    // never resized after this point: descriptors point at the entries
    let entries: Vec<Entry> = b.ops;
    let descs: Vec<abi::Op> = entries
        .iter()
        .map(|e| {
            let (forward, backward, create_state) = match &e.kind {
                Kind::Stateless(o) => (
                    Some(forward_tramp as abi::KernelFn),
                    if o.has_backward() { Some(backward_tramp as abi::KernelFn) } else { None },
                    None,
                ),
                Kind::Stateful(_) => (None, None, Some(create_state_tramp as abi::CreateStateFn)),
            };
            abi::Op {
                struct_size: std::mem::size_of::<abi::Op>() as u32,
                is_subgraph_op: e.subgraph as i32,
                name: e.name.as_ptr(),
                user_data: e as *const Entry as *mut c_void,
                parse_attrs: Some(parse_attrs_tramp),
                infer_type: Some(infer_type_tramp),
                infer_shape: Some(infer_shape_tramp),
                mutate_inputs: Some(mutate_inputs_tramp),
                forward: [forward, None],
                backward: [backward, None],
                create_state: [create_state, None],
            }
        })
        .collect();
    let mut lib = abi::Library::empty();
    lib.ops = descs.as_ptr();
    lib.num_ops = descs.len() as i32;
    lib.initialize = Some(initialize_tramp);
    // never resized after this point: the graph descriptors point at them
    let (partitioners, passes) = (b.partitioners, b.passes);
    let (graph, broken) = match describe(&partitioners, &passes) {
        Ok(g) => {
            lib.partitioners = g.partitioners.as_ptr();
            lib.num_partitioners = g.partitioners.len() as i32;
            lib.passes = g.passes.as_ptr();
            lib.num_passes = g.passes.len() as i32;
            (Some(g), None)
        }
        Err(why) => (None, Some(why)),
    };
    Table {
        lib,
        _descs: descs,
        _entries: entries,
        _graph: graph,
        _partitioners: partitioners,
        _passes: passes,
        broken,
        init: b.init,
    }
}

/// Runs `f`, turning an error or a panic into a failure status with its message.
pub(crate) fn guard(err: *mut abi::Error, f: impl FnOnce() -> OpResult<()>) -> i32 {
    let msg = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return abi::OK,
        Ok(Err(m)) => m,
        Err(p) => {
            let text = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".into());
            format!("panicked: {text}")
        }
    };
    // SAFETY: `err` is the sink of the current call (or NULL).
    if let Some(e) = unsafe { err.as_ref() } {
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { e.set(&msg) }));
    }
    abi::FAIL
}

unsafe fn entry_of<'a>(user: *mut c_void) -> OpResult<&'a Entry> {
    (user as *const Entry).as_ref().ok_or_else(|| "missing user data".to_string())
}

unsafe extern "C" fn initialize_tramp(version: i32, err: *mut abi::Error) -> i32 {
    guard(err, || {
        let table = TABLE.get().and_then(|t| t.as_ref());
        if let Some(why) = table.and_then(|t| t.broken.as_ref()) {
            return Err(why.clone());
        }
        match table.and_then(|t| t.init.as_ref()) {
            Some(f) => f(version),
            None => Ok(()),
        }
    })
}

unsafe extern "C" fn parse_attrs_tramp(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    num_in: *mut i32,
    num_out: *mut i32,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let e = entry_of(user)?;
        let (i, o) = e.signature().parse_attrs(&Attrs::from_abi(attrs))?;
        *num_in = i32::try_from(i).map_err(|_| "too many inputs")?;
        *num_out = i32::try_from(o).map_err(|_| "too many outputs")?;
        Ok(())
    })
}

pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, n: i32) -> &'a mut [T] {
    if n <= 0 || p.is_null() {
        &mut []
    } else {
        std::slice::from_raw_parts_mut(p, n as usize)
    }
}

pub(crate) unsafe fn slice<'a, T>(p: *const T, n: i32) -> &'a [T] {
    if n <= 0 || p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p, n as usize)
    }
}

unsafe extern "C" fn infer_type_tramp(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    in_types: *mut i32,
    num_in: i32,
    out_types: *mut i32,
    num_out: i32,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let e = entry_of(user)?;
        let it = slice_mut(in_types, num_in);
        let ot = slice_mut(out_types, num_out);
        let mut ins: Vec<Option<DType>> = it.iter().map(|&c| DType::from_code(c)).collect();
        let mut outs: Vec<Option<DType>> = ot.iter().map(|&c| DType::from_code(c)).collect();
        e.signature().infer_type(&Attrs::from_abi(attrs), &mut ins, &mut outs)?;
        for (c, d) in it.iter_mut().zip(&ins).chain(ot.iter_mut().zip(&outs)) {
            *c = d.map(|d| d.code()).unwrap_or(abi::DTYPE_UNKNOWN);
        }
        Ok(())
    })
}

fn shape_in(s: &abi::Shape) -> Option<Vec<i64>> {
    if s.ndim < 0 || s.ndim as usize > abi::MAX_NDIM {
        return None;
    }
    let d = &s.dims[..s.ndim as usize];
    if d.iter().any(|&x| x < 0) {
        None
    } else {
        Some(d.to_vec())
    }
}

fn shape_out(dst: &mut abi::Shape, s: &Option<Vec<i64>>) -> OpResult<()> {
    match s {
        None => *dst = abi::Shape::UNKNOWN,
        Some(v) => {
            if v.len() > abi::MAX_NDIM {
                return Err(format!("a shape has {} dimensions; the ABI allows {}", v.len(), abi::MAX_NDIM));
            }
            *dst = abi::Shape::UNKNOWN;
            dst.ndim = v.len() as i32;
            dst.dims[..v.len()].copy_from_slice(v);
        }
    }
    Ok(())
}

unsafe extern "C" fn infer_shape_tramp(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    in_shapes: *mut abi::Shape,
    num_in: i32,
    out_shapes: *mut abi::Shape,
    num_out: i32,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let e = entry_of(user)?;
        let is = slice_mut(in_shapes, num_in);
        let os = slice_mut(out_shapes, num_out);
        let mut ins: Vec<Option<Vec<i64>>> = is.iter().map(shape_in).collect();
        let mut outs: Vec<Option<Vec<i64>>> = os.iter().map(shape_in).collect();
        e.signature().infer_shape(&Attrs::from_abi(attrs), &mut ins, &mut outs)?;
        for (d, s) in is.iter_mut().zip(&ins).chain(os.iter_mut().zip(&outs)) {
            shape_out(d, s)?;
        }
        Ok(())
    })
}

unsafe extern "C" fn mutate_inputs_tramp(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    indices: *mut i32,
    capacity: i32,
    count: *mut i32,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let e = entry_of(user)?;
        let idx = e.signature().mutate_inputs(&Attrs::from_abi(attrs))?;
        let out = slice_mut(indices, capacity);
        if idx.len() > out.len() {
            return Err(format!("{} mutated inputs, but the operator has {capacity} inputs", idx.len()));
        }
        for (o, i) in out.iter_mut().zip(&idx) {
            *o = i32::try_from(*i).map_err(|_| "mutated input index too large")?;
        }
        *count = idx.len() as i32;
        Ok(())
    })
}

macro_rules! kernel_tramp {
    ($name:ident, $method:ident) => {
        unsafe extern "C" fn $name(
            user: *mut c_void,
            attrs: *const abi::Attrs,
            inputs: *const abi::DLTensor,
            num_in: i32,
            outputs: *const abi::DLTensor,
            num_out: i32,
            req: *const i32,
            res: *const abi::Resource,
            err: *mut abi::Error,
        ) -> i32 {
            guard(err, || {
                let Kind::Stateless(op) = &entry_of(user)?.kind else {
                    return Err("not a stateless operator".into());
                };
                let req = Req::slice(req, num_out)?;
                let mut res = Resource::new(res);
                let (ins, outs) = (Tensor::slice(inputs, num_in), TensorMut::slice(outputs, num_out));
                op.$method(&Attrs::from_abi(attrs), ins, outs, req, &mut res)
            })
        }
    };
}
kernel_tramp!(forward_tramp, forward);
kernel_tramp!(backward_tramp, backward);

/// A live state object: the boxed trait object behind the ABI's pointer.
type StateBox = Box<dyn State>;

unsafe extern "C" fn create_state_tramp(
    user: *mut c_void,
    attrs: *const abi::Attrs,
    _device: abi::DLDevice,
    in_shapes: *const abi::Shape,
    in_types: *const i32,
    num_in: i32,
    out: *mut abi::State,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let Kind::Stateful(op) = &entry_of(user)?.kind else {
            return Err("not a stateful operator".into());
        };
        let shapes: Vec<Vec<i64>> =
            slice(in_shapes, num_in).iter().map(|s| shape_in(s).unwrap_or_default()).collect();
        let types: Vec<DType> = slice(in_types, num_in)
            .iter()
            .map(|&c| DType::from_code(c).ok_or_else(|| format!("unknown dtype code {c}")))
            .collect::<OpResult<_>>()?;
        let state: StateBox = op.create_state(&Attrs::from_abi(attrs), &shapes, &types)?;
        let out = out.as_mut().ok_or("no place for the state")?;
        out.state = Box::into_raw(Box::new(state)) as *mut c_void;
        out.forward = Some(state_forward_tramp);
        out.backward = Some(state_backward_tramp);
        out.destroy = Some(state_destroy_tramp);
        Ok(())
    })
}

macro_rules! state_tramp {
    ($name:ident, $method:ident) => {
        unsafe extern "C" fn $name(
            state: *mut c_void,
            inputs: *const abi::DLTensor,
            num_in: i32,
            outputs: *const abi::DLTensor,
            num_out: i32,
            req: *const i32,
            res: *const abi::Resource,
            err: *mut abi::Error,
        ) -> i32 {
            guard(err, || {
                let st = (state as *mut StateBox).as_mut().ok_or("missing state")?;
                let req = Req::slice(req, num_out)?;
                let mut res = Resource::new(res);
                st.$method(Tensor::slice(inputs, num_in), TensorMut::slice(outputs, num_out), req, &mut res)
            })
        }
    };
}
state_tramp!(state_forward_tramp, forward);
state_tramp!(state_backward_tramp, backward);

unsafe extern "C" fn state_destroy_tramp(state: *mut c_void) {
    if !state.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(state as *mut StateBox))));
    }
}
