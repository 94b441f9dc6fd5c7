//! Partitioners and graph passes of MXNet-style libraries, presented through
//! oxnet's partitioner and pass ABI. Graphs cross as NNVM JSON on both sides,
//! so the JSON passes through unchanged.
//!
//! Differences forced by MXNet's functions: the host passes no parameter
//! arrays to reviews and passes (oxnet's graphs do not bind them yet); a
//! selector's functions return nothing, so an exception in one fails the
//! host's call with the message printed as a warning; MXNet offers no way to
//! free a selector, so the library's selector object is left to it (as MXNet
//! did).

use super::library::MxLibrary;
use super::symbols::{LibFn, NdMalloc, PartitionerSymbols, PassSymbols};
use super::{pairs, status};
use crate::host::c_str;
use oxnet_abi as abi;
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::null;

/// Calls `$f` (`_partCallReviewSubgraph` or `_passCallGraphPass`) with `$head`,
/// then no parameter arrays (arguments, then auxiliary states: names, count,
/// data, shapes, ndims, dtypes, version ids, device types and ids), then
/// `$tail`: oxnet's graphs bind no parameters yet.
macro_rules! without_params {
    ($f:expr; $($head:expr),+; $($tail:expr),*) => {
        $f(
            $($head,)+
            null(), 0, null(), null(), null(), null(), null(), null(), null(),
            null(), 0, null(), null(), null(), null(), null(), null(), null(),
            $($tail),*
        )
    };
}
use std::sync::Arc;

/// One strategy of a partitioner.
pub(crate) struct MxStrategy {
    lib: Arc<MxLibrary>,
    syms: PartitionerSymbols,
    name: CString,
    op_name: CString,
    supported_ops: LibFn,
    create_selector: LibFn,
    review: LibFn,
}

// SAFETY: the library's functions, callable from any thread per MXNet's API.
unsafe impl Send for MxStrategy {}
unsafe impl Sync for MxStrategy {}

/// One graph pass.
pub(crate) struct MxPass {
    lib: Arc<MxLibrary>,
    syms: PassSymbols,
    name: CString,
    body: LibFn,
}

// SAFETY: as for MxStrategy.
unsafe impl Send for MxPass {}
unsafe impl Sync for MxPass {}

/// A selector the library created.
struct MxSelector {
    lib: Arc<MxLibrary>,
    syms: PartitionerSymbols,
    raw: *mut c_void,
}

fn cstring(s: String, what: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} has a NUL byte"))
}

/// A partitioner's name and its strategies.
pub(crate) fn read_partitioner(
    lib: &Arc<MxLibrary>,
    syms: PartitionerSymbols,
    idx: c_int,
) -> Result<(CString, Vec<MxStrategy>), String> {
    let mut name = std::ptr::null();
    let mut count = 0;
    let get_count = syms.reg_get_count;
    lib.call_void(|| count = unsafe { get_count(idx, &mut name) })?;
    // SAFETY: the library's registered name.
    let name = cstring(unsafe { c_str(name) }, "a partitioner's name")?;
    let mut strategies = Vec::new();
    for s in 0..count.max(0) {
        let (mut sname, mut op_name) = (std::ptr::null(), std::ptr::null());
        let (mut supported_ops, mut create_selector, mut review) =
            (std::ptr::null(), std::ptr::null(), std::ptr::null());
        let get = syms.reg_get;
        lib.call_void(|| unsafe {
            get(idx, s, &mut sname, &mut supported_ops, &mut create_selector, &mut review, &mut op_name)
        })?;
        strategies.push(MxStrategy {
            lib: lib.clone(),
            syms,
            // SAFETY: the library's registered strings.
            name: cstring(unsafe { c_str(sname) }, "a strategy's name")?,
            op_name: cstring(unsafe { c_str(op_name) }, "a subgraph operator's name")?,
            supported_ops,
            create_selector,
            review,
        });
    }
    Ok((name, strategies))
}

impl MxStrategy {
    /// The ABI strategy calling this one (the host passes `self` as the
    /// callbacks' user data; `self` must stay in place).
    pub(crate) fn descriptor(&self) -> abi::Strategy {
        abi::Strategy {
            name: self.name.as_ptr(),
            subgraph_op_name: self.op_name.as_ptr(),
            supported_ops: if self.supported_ops.is_null() { None } else { Some(supported_ops) },
            create_selector: if self.create_selector.is_null() { None } else { Some(create_selector) },
            review_subgraph: if self.review.is_null() { None } else { Some(review_subgraph) },
        }
    }
}

/// A pass's registration.
pub(crate) fn read_pass(lib: &Arc<MxLibrary>, syms: PassSymbols, idx: c_int) -> Result<MxPass, String> {
    let mut body = std::ptr::null();
    let mut name = std::ptr::null();
    let get = syms.reg_get;
    lib.call_void(|| unsafe { get(idx, &mut body, &mut name) })?;
    Ok(MxPass {
        lib: lib.clone(),
        syms,
        // SAFETY: the library's registered name.
        name: cstring(unsafe { c_str(name) }, "a graph pass's name")?,
        body,
    })
}

impl MxPass {
    /// The ABI pass calling this one (`self` must stay in place).
    pub(crate) fn descriptor(&self) -> abi::Pass {
        abi::Pass {
            struct_size: std::mem::size_of::<abi::Pass>() as u32,
            reserved: 0,
            name: self.name.as_ptr(),
            user_data: self as *const MxPass as *mut c_void,
            run: if self.body.is_null() { None } else { Some(run_pass) },
        }
    }
}

/// MXNet's subgraph ids in oxnet's form: -2 (unsupported) becomes -1, -1
/// ("any subgraph") one fresh id shared by all such nodes, others stay.
fn map_ids(ids: &mut [c_int]) -> Result<(), String> {
    if let Some(bad) = ids.iter().find(|&&v| v < -2) {
        return Err(format!(
            "supportedOps gave the id {bad} (use -2: not supported, -1: any subgraph, >= 0)"
        ));
    }
    let any = ids.iter().copied().max().unwrap_or(-1).max(-1) + 1;
    for v in ids.iter_mut() {
        *v = match *v {
            -2 => -1,
            -1 => any,
            id => id,
        };
    }
    Ok(())
}

unsafe extern "C" fn supported_ops(
    user: *mut c_void,
    graph_json: *const c_char,
    ids: *mut i32,
    num_nodes: i32,
    opts: *const abi::Attrs,
    err: *mut abi::Error,
) -> i32 {
    let s = &*(user as *const MxStrategy);
    let (keys, values, n) = pairs(opts);
    let mut v = vec![-2 as c_int; num_nodes.max(0) as usize];
    let f = s.syms.supported_ops;
    let r = s
        .lib
        .call(|| f(s.supported_ops, graph_json, num_nodes, v.as_mut_ptr(), keys, values, n))
        .and_then(|()| {
            map_ids(&mut v)?;
            std::ptr::copy_nonoverlapping(v.as_ptr(), ids, v.len());
            Ok(())
        });
    status(err, r)
}

unsafe extern "C" fn create_selector(
    user: *mut c_void,
    graph_json: *const c_char,
    opts: *const abi::Attrs,
    out: *mut abi::Selector,
    err: *mut abi::Error,
) -> i32 {
    let s = &*(user as *const MxStrategy);
    let (keys, values, n) = pairs(opts);
    let mut raw: *mut c_void = std::ptr::null_mut();
    let f = s.syms.create_selector;
    let r = s.lib.call(|| f(s.create_selector, graph_json, &mut raw, keys, values, n)).and_then(|()| {
        if raw.is_null() {
            return Err("createSelector succeeded but created no selector".to_string());
        }
        let sel = Box::new(MxSelector { lib: s.lib.clone(), syms: s.syms, raw });
        *out = abi::Selector {
            selector: Box::into_raw(sel) as *mut c_void,
            select: Some(select),
            select_input: Some(select_input),
            select_output: Some(select_output),
            filter: Some(filter),
            reset: Some(reset),
            destroy: Some(destroy),
        };
        Ok(())
    });
    status(err, r)
}

/// A selector call's status; its failure is printed (no error sink exists).
fn selector_status(r: Result<(), String>) -> i32 {
    match r {
        Ok(()) => abi::OK,
        Err(e) => {
            eprintln!("oxnet: warning: a selector of an MXNet-style library failed: {e}");
            abi::FAIL
        }
    }
}

unsafe extern "C" fn select(sel: *mut c_void, node: i32, selected: *mut i32) -> i32 {
    let s = &*(sel as *const MxSelector);
    let f = s.syms.select;
    selector_status(s.lib.call_void(|| f(s.raw, node, selected)))
}

unsafe extern "C" fn select_input(sel: *mut c_void, node: i32, input: i32, selected: *mut i32) -> i32 {
    let s = &*(sel as *const MxSelector);
    let f = s.syms.select_input;
    selector_status(s.lib.call_void(|| f(s.raw, node, input, selected)))
}

unsafe extern "C" fn select_output(sel: *mut c_void, node: i32, output: i32, selected: *mut i32) -> i32 {
    let s = &*(sel as *const MxSelector);
    let f = s.syms.select_output;
    selector_status(s.lib.call_void(|| f(s.raw, node, output, selected)))
}

unsafe extern "C" fn filter(
    sel: *mut c_void,
    candidates: *const i32,
    num_candidates: i32,
    keep: *mut i32,
    num_keep: *mut i32,
) -> i32 {
    let s = &*(sel as *const MxSelector);
    let n = num_candidates.max(0) as usize;
    let mut cands: Vec<c_int> =
        if n == 0 { Vec::new() } else { std::slice::from_raw_parts(candidates, n).to_vec() };
    let (mut kept, mut count): (*mut c_int, c_int) = (std::ptr::null_mut(), 0);
    let f = s.syms.filter;
    let r = s.lib.call_void(|| f(s.raw, cands.as_mut_ptr(), num_candidates, &mut kept, &mut count)).and_then(
        |()| {
            let r = if count < 0 || count as usize > n || (count > 0 && kept.is_null()) {
                Err(format!("filter kept {count} of {n} candidates"))
            } else {
                std::ptr::copy_nonoverlapping(kept, keep, count as usize);
                *num_keep = count;
                Ok(())
            };
            s.lib.free(kept);
            r
        },
    );
    selector_status(r)
}

unsafe extern "C" fn reset(sel: *mut c_void) {
    let s = &*(sel as *const MxSelector);
    let f = s.syms.reset;
    selector_status(s.lib.call_void(|| f(s.raw)));
}

unsafe extern "C" fn destroy(sel: *mut c_void) {
    drop(Box::from_raw(sel as *mut MxSelector));
}

unsafe extern "C" fn review_subgraph(
    user: *mut c_void,
    subgraph_json: *const c_char,
    subgraph_id: i32,
    opts: *const abi::Attrs,
    accept: *mut i32,
    attrs_out: *mut abi::Sink,
    err: *mut abi::Error,
) -> i32 {
    let s = &*(user as *const MxStrategy);
    let (keys, values, n) = pairs(opts);
    let (mut acc, mut count): (c_int, c_int) = (0, 0);
    let (mut akeys, mut avals): (*mut *mut c_char, *mut *mut c_char) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    let f = s.syms.review_subgraph;
    let r = s
        .lib
        .call(|| {
            without_params!(f; s.review, subgraph_json, subgraph_id, &mut acc, keys, values, n,
                &mut akeys, &mut avals, &mut count;)
        })
        .map(|()| {
            *accept = acc;
            let sink = attrs_out.as_ref().and_then(|k| k.push.map(|p| (p, k.host_data)));
            for i in 0..count.max(0) as usize {
                if akeys.is_null() || avals.is_null() {
                    break;
                }
                let (k, v) = (*akeys.add(i), *avals.add(i));
                if let Some((push, host)) = sink {
                    push(host, k, v);
                }
                s.lib.free(k);
                s.lib.free(v);
            }
            s.lib.free(akeys);
            s.lib.free(avals);
        });
    status(err, r)
}

/// `nd_malloc_t` over the ABI pass resource: a new parameter owned by the host.
unsafe extern "C" fn nd_malloc(
    ctx: *const c_void,
    shape: *const i64,
    ndim: c_int,
    dev_type: *const c_char,
    _dev_id: c_int,
    dtype: c_int,
    name: *const c_char,
    is_arg: c_int,
    data: *mut *mut c_void,
) {
    *data = std::ptr::null_mut();
    let Some(res) = (ctx as *const abi::PassResource).as_ref() else { return };
    let Some(alloc) = res.alloc_param else { return };
    if c_str(dev_type) != "cpu" {
        eprintln!(
            "oxnet: warning: a graph pass asked for a parameter on `{}`; oxnet allocates on the CPU only",
            c_str(dev_type)
        );
        return;
    }
    let t = alloc(res.host_data, name, (is_arg == 0) as i32, shape, ndim, dtype);
    if let Some(t) = t.as_ref() {
        *data = (t.data as *mut u8).add(t.byte_offset as usize) as *mut c_void;
    }
}

const ND_MALLOC: NdMalloc = nd_malloc;

unsafe extern "C" fn run_pass(
    user: *mut c_void,
    graph_json: *const c_char,
    opts: *const abi::Attrs,
    out: *mut abi::Sink,
    res: *const abi::PassResource,
    err: *mut abi::Error,
) -> i32 {
    let p = &*(user as *const MxPass);
    let (keys, values, n) = pairs(opts);
    let mut out_graph: *mut c_char = std::ptr::null_mut();
    let f = p.syms.call;
    let r = p
        .lib
        .call(|| {
            without_params!(f; p.body, graph_json, &mut out_graph, keys, values, n, p.name.as_ptr();
                ND_MALLOC, res as *const c_void)
        })
        .and_then(|()| {
            if out_graph.is_null() {
                return Err("the pass succeeded but returned no graph".to_string());
            }
            if let Some(sink) = out.as_ref() {
                if let Some(push) = sink.push {
                    push(sink.host_data, std::ptr::null(), out_graph);
                }
            }
            p.lib.free(out_graph);
            Ok(())
        });
    status(err, r)
}

#[cfg(test)]
mod tests {
    use super::map_ids;

    #[test]
    fn mxnet_ids_map_onto_oxnet_ids() {
        let mut ids = vec![-2, -1, 0, 3, -1];
        map_ids(&mut ids).unwrap();
        assert_eq!(ids, vec![-1, 4, 0, 3, 4]);
        let mut none = vec![-2, -2];
        map_ids(&mut none).unwrap();
        assert_eq!(none, vec![-1, -1]);
        assert!(map_ids(&mut [-3]).unwrap_err().contains("-3"));
    }
}
