//! The descriptors and `extern "C"` trampolines of a library's partitioners
//! and graph passes, catching panics at every boundary.
//!
//! The ABI passes a strategy's callbacks only its partitioner's
//! `user_data`, so each strategy slot gets its own monomorphised
//! trampolines (`::<I>`, I < [`MAX_STRATEGIES`]).

use crate::abi;
use crate::export::{guard, slice, slice_mut};
use crate::partition::{Partitioner, Selection, Selector, Strategy, MAX_STRATEGIES};
use crate::pass::{PassFn, PassResource};
use crate::traits::OpResult;
use crate::Attrs;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A registered graph pass.
pub(crate) struct PassEntry {
    pub name: CString,
    pub f: PassFn,
}

/// The ABI descriptors; they point into the partitioners and passes, which
/// must not move while the library is loaded.
pub(crate) struct GraphDescs {
    pub partitioners: Vec<abi::Partitioner>,
    pub passes: Vec<abi::Pass>,
    _strategies: Vec<Vec<abi::Strategy>>,
}

macro_rules! per_slot {
    ($f:ident) => {
        [$f::<0>, $f::<1>, $f::<2>, $f::<3>, $f::<4>, $f::<5>, $f::<6>, $f::<7>]
    };
}

/// Builds the descriptors, or says why the library cannot be exported.
pub(crate) fn describe(parts: &[Partitioner], passes: &[PassEntry]) -> Result<GraphDescs, String> {
    let supported: [abi::SupportedOpsFn; MAX_STRATEGIES] = per_slot!(supported_ops_tramp);
    let create: [abi::CreateSelectorFn; MAX_STRATEGIES] = per_slot!(create_selector_tramp);
    let review: [abi::ReviewSubgraphFn; MAX_STRATEGIES] = per_slot!(review_tramp);
    let mut strategies = Vec::new();
    let mut partitioners = Vec::new();
    for p in parts {
        if p.strategies.len() > MAX_STRATEGIES {
            return Err(format!(
                "partitioner `{}` has {} strategies; the Rust SDK supports at most {MAX_STRATEGIES}",
                p.name.to_string_lossy(),
                p.strategies.len()
            ));
        }
        let descs: Vec<abi::Strategy> = p
            .strategies
            .iter()
            .enumerate()
            .map(|(i, s)| abi::Strategy {
                name: s.name.as_ptr(),
                subgraph_op_name: s.subgraph_op.as_ptr(),
                supported_ops: matches!(s.selection, Selection::SupportedOps(_)).then_some(supported[i]),
                create_selector: matches!(s.selection, Selection::Selector(_)).then_some(create[i]),
                review_subgraph: s.review.as_ref().map(|_| review[i]),
            })
            .collect();
        partitioners.push(abi::Partitioner {
            struct_size: std::mem::size_of::<abi::Partitioner>() as u32,
            num_strategies: descs.len() as i32,
            name: p.name.as_ptr(),
            user_data: p as *const Partitioner as *mut c_void,
            strategies: descs.as_ptr(),
        });
        strategies.push(descs);
    }
    let passes = passes
        .iter()
        .map(|e| abi::Pass {
            struct_size: std::mem::size_of::<abi::Pass>() as u32,
            reserved: 0,
            name: e.name.as_ptr(),
            user_data: e as *const PassEntry as *mut c_void,
            run: Some(pass_tramp),
        })
        .collect();
    Ok(GraphDescs { partitioners, passes, _strategies: strategies })
}

unsafe fn strategy<'a, const I: usize>(user: *mut c_void) -> OpResult<&'a Strategy> {
    let p = (user as *const Partitioner).as_ref().ok_or("missing user data")?;
    p.strategies.get(I).ok_or_else(|| format!("no strategy {I}"))
}

unsafe fn text<'a>(p: *const c_char, what: &str) -> OpResult<&'a str> {
    if p.is_null() {
        return Err(format!("no {what}"));
    }
    CStr::from_ptr(p).to_str().map_err(|_| format!("the {what} is not UTF-8"))
}

unsafe fn push(sink: *mut abi::Sink, key: Option<&str>, value: &str) -> OpResult<()> {
    let s = sink.as_ref().ok_or("the host gave no place for the result")?;
    let f = s.push.ok_or("the host's sink has no push function")?;
    let v = CString::new(value).map_err(|_| "a result contains a NUL byte")?;
    let k = key.map(CString::new).transpose().map_err(|_| "an attribute name contains a NUL byte")?;
    f(s.host_data, k.as_ref().map_or(std::ptr::null(), |k| k.as_ptr()), v.as_ptr());
    Ok(())
}

unsafe extern "C" fn supported_ops_tramp<const I: usize>(
    user: *mut c_void,
    graph_json: *const c_char,
    ids: *mut i32,
    num_nodes: i32,
    options: *const abi::Attrs,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let Selection::SupportedOps(f) = &strategy::<I>(user)?.selection else {
            return Err("this strategy uses a selector".into());
        };
        f(text(graph_json, "graph JSON")?, slice_mut(ids, num_nodes), &Attrs::from_abi(options))
    })
}

/// The boxed trait object behind a selector pointer.
type SelectorBox = Box<dyn Selector>;

unsafe extern "C" fn create_selector_tramp<const I: usize>(
    user: *mut c_void,
    graph_json: *const c_char,
    options: *const abi::Attrs,
    out: *mut abi::Selector,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let Selection::Selector(f) = &strategy::<I>(user)?.selection else {
            return Err("this strategy has no selector".into());
        };
        let out = out.as_mut().ok_or("no place for the selector")?;
        let sel: SelectorBox = f(text(graph_json, "graph JSON")?, &Attrs::from_abi(options))?;
        *out = abi::Selector {
            selector: Box::into_raw(Box::new(sel)) as *mut c_void,
            select: Some(select_tramp),
            select_input: Some(select_input_tramp),
            select_output: Some(select_output_tramp),
            filter: Some(filter_tramp),
            reset: Some(reset_tramp),
            destroy: Some(destroy_tramp),
        };
        Ok(())
    })
}

/// Runs `f` on the selector; a panic, a NULL pointer or a negative id is a failure status.
unsafe fn with_selector(sel: *mut c_void, ids: &[i32], f: impl FnOnce(&mut SelectorBox) -> bool) -> i32 {
    let Some(s) = (sel as *mut SelectorBox).as_mut() else { return abi::FAIL };
    if ids.iter().any(|&i| i < 0) {
        return abi::FAIL;
    }
    match catch_unwind(AssertUnwindSafe(|| f(s))) {
        Ok(true) => abi::OK,
        _ => abi::FAIL,
    }
}

unsafe fn answer(out: *mut i32, v: bool) -> bool {
    match out.as_mut() {
        Some(o) => {
            *o = v as i32;
            true
        }
        None => false,
    }
}

unsafe extern "C" fn select_tramp(sel: *mut c_void, node: i32, selected: *mut i32) -> i32 {
    with_selector(sel, &[node], |s| answer(selected, s.select(node as usize)))
}

unsafe extern "C" fn select_input_tramp(sel: *mut c_void, node: i32, input: i32, selected: *mut i32) -> i32 {
    with_selector(sel, &[node, input], |s| answer(selected, s.select_input(node as usize, input as usize)))
}

unsafe extern "C" fn select_output_tramp(
    sel: *mut c_void,
    node: i32,
    output: i32,
    selected: *mut i32,
) -> i32 {
    with_selector(sel, &[node, output], |s| answer(selected, s.select_output(node as usize, output as usize)))
}

unsafe extern "C" fn filter_tramp(
    sel: *mut c_void,
    candidates: *const i32,
    num_candidates: i32,
    keep: *mut i32,
    num_keep: *mut i32,
) -> i32 {
    let cands = slice(candidates, num_candidates);
    with_selector(sel, cands, |s| {
        let c: Vec<usize> = cands.iter().map(|&c| c as usize).collect();
        let kept = s.filter(&c);
        let room = slice_mut(keep, num_candidates);
        if kept.len() > room.len() || num_keep.is_null() {
            return false;
        }
        for (slot, &k) in room.iter_mut().zip(&kept) {
            *slot = k as i32;
        }
        *num_keep = kept.len() as i32;
        true
    })
}

unsafe extern "C" fn reset_tramp(sel: *mut c_void) {
    with_selector(sel, &[], |s| {
        s.reset();
        true
    });
}

unsafe extern "C" fn destroy_tramp(sel: *mut c_void) {
    if !sel.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(sel as *mut SelectorBox))));
    }
}

unsafe extern "C" fn review_tramp<const I: usize>(
    user: *mut c_void,
    subgraph_json: *const c_char,
    subgraph_id: i32,
    options: *const abi::Attrs,
    accept: *mut i32,
    attrs_out: *mut abi::Sink,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let f = strategy::<I>(user)?.review.as_ref().ok_or("this strategy has no review")?;
        let r = f(text(subgraph_json, "subgraph JSON")?, subgraph_id, &Attrs::from_abi(options))?;
        for (k, v) in &r.attrs {
            push(attrs_out, Some(k), v)?;
        }
        *accept.as_mut().ok_or("no place for the verdict")? = r.accept as i32;
        Ok(())
    })
}

unsafe extern "C" fn pass_tramp(
    user: *mut c_void,
    graph_json: *const c_char,
    options: *const abi::Attrs,
    out: *mut abi::Sink,
    res: *const abi::PassResource,
    err: *mut abi::Error,
) -> i32 {
    guard(err, || {
        let e = (user as *const PassEntry).as_ref().ok_or("missing user data")?;
        let mut res = PassResource::new(res);
        let new = (e.f)(text(graph_json, "graph JSON")?, &Attrs::from_abi(options), &mut res)?;
        push(out, None, &new)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(k: i32) -> Strategy {
        Strategy::supported_ops("s", "_sg", move |_, ids: &mut [i32], _| {
            ids.fill(k);
            Ok(())
        })
    }

    #[test]
    fn each_strategy_slot_calls_its_own_strategy() {
        let p = Partitioner::new("p").strategy(marks(10)).strategy(marks(11)).strategy(marks(12));
        let parts = [p];
        let d = describe(&parts, &[]).unwrap();
        assert_eq!(d.partitioners[0].num_strategies, 3);
        let strategies = unsafe { slice(d.partitioners[0].strategies, 3) };
        for (i, s) in strategies.iter().enumerate() {
            assert!(s.create_selector.is_none() && s.review_subgraph.is_none());
            let f = s.supported_ops.unwrap();
            let mut ids = [-1i32; 2];
            let status = unsafe {
                f(
                    d.partitioners[0].user_data,
                    c"{}".as_ptr(),
                    ids.as_mut_ptr(),
                    2,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(status, abi::OK);
            assert_eq!(ids, [10 + i as i32; 2]);
        }
    }

    #[test]
    fn too_many_strategies_is_an_error_naming_the_partitioner() {
        let mut p = Partitioner::new("crowded");
        for _ in 0..=MAX_STRATEGIES {
            p = p.strategy(marks(0));
        }
        let e = describe(&[p], &[]).err().unwrap();
        assert!(e.contains("`crowded` has 9 strategies") && e.contains("at most 8"), "{e}");
    }
}
