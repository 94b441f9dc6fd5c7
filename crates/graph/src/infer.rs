//! Shape and dtype inference over a whole graph: each operator's own
//! (bidirectional) inference, applied forward and backward over the nodes
//! until nothing changes.
//!
//! Shapes are partial as in MXNet 1.x: `None` is an unknown shape and a
//! dimension of 0 an unknown extent (so `(64, 0)` is a weight whose input
//! size is still to be learnt). An operator sees a shape only once it is
//! complete; what it fills in is checked against what is already known, and
//! a conflict is an error naming the node, its operator and both shapes.

use crate::indexed::IndexedGraph;
use crate::symbol::{parse_shape, shape_string};
use oxnet_core::{DType, Error, Result, Shape};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A partially known shape: `None` unknown, 0 an unknown dimension.
pub type PartialShape = Option<Vec<usize>>;

/// True when every dimension of `s` is known.
pub fn is_complete(s: &PartialShape) -> bool {
    s.as_ref().is_some_and(|d| !d.contains(&0))
}

/// Merges `new` into `old`; `Ok(true)` when `old` learnt something,
/// `Err(())` on a conflict.
fn unify_shape(old: &mut PartialShape, new: &[usize]) -> std::result::Result<bool, ()> {
    match old {
        None => {
            *old = Some(new.to_vec());
            Ok(true)
        }
        Some(have) => {
            if have.len() != new.len() {
                return Err(());
            }
            let mut changed = false;
            for (h, n) in have.iter_mut().zip(new) {
                if *h == 0 && *n != 0 {
                    *h = *n;
                    changed = true;
                } else if *n != 0 && *h != *n {
                    return Err(());
                }
            }
            Ok(changed)
        }
    }
}

fn show(s: &PartialShape) -> String {
    s.as_ref().map_or("unknown".into(), |d| shape_string(d))
}

/// Shapes of every entry of `g`, from the variables' `__shape__` attributes
/// and `given` shapes by variable name. Entries left unknown are `None` or
/// hold 0 dimensions (MXNet's `infer_shape_partial`).
pub fn infer_shapes(g: &IndexedGraph, given: &HashMap<String, Vec<usize>>) -> Result<Vec<PartialShape>> {
    let mut shapes: Vec<PartialShape> = vec![None; g.num_entries()];
    for n in g.variables() {
        let node = &g.nodes[n];
        let e = g.entry(n, 0);
        if let Some(text) = node.attr("__shape__") {
            let s =
                parse_shape(&text).map_err(|err| Error::Shape(format!("variable `{}`: {err}", node.name)))?;
            if !s.is_empty() {
                shapes[e] = Some(s);
            }
        }
        if let Some(s) = given.get(&node.name) {
            unify_shape(&mut shapes[e], s).map_err(|_| {
                Error::Shape(format!(
                    "variable `{}` is declared with shape {} but given {}",
                    node.name,
                    show(&shapes[e]),
                    shape_string(s)
                ))
            })?;
        }
    }
    fixed_point(g, &mut shapes, infer_node_shape)?;
    Ok(shapes)
}

/// Dtypes of every entry of `g`, from the variables' `__dtype__` attributes
/// and `given` dtypes by variable name.
pub fn infer_dtypes(g: &IndexedGraph, given: &HashMap<String, DType>) -> Result<Vec<Option<DType>>> {
    let mut types: Vec<Option<DType>> = vec![None; g.num_entries()];
    for n in g.variables() {
        let node = &g.nodes[n];
        let e = g.entry(n, 0);
        if let Some(code) = node.attr("__dtype__") {
            let d = code
                .trim()
                .parse::<i32>()
                .map_err(|_| ())
                .and_then(|c| DType::from_code(c).map_err(|_| ()))
                .or_else(|_| DType::from_name(code.trim()).map_err(|_| ()))
                .map_err(|_| {
                    Error::DType(format!("variable `{}` has an unknown __dtype__ `{code}`", node.name))
                })?;
            types[e] = Some(d);
        }
        if let Some(d) = given.get(&node.name) {
            match types[e] {
                Some(have) if have != *d => {
                    return Err(Error::DType(format!(
                        "variable `{}` is declared with dtype {have} but given {d}",
                        node.name
                    )))
                }
                _ => types[e] = Some(*d),
            }
        }
    }
    fixed_point(g, &mut types, infer_node_dtype)?;
    Ok(types)
}

/// Runs `step` over the operator nodes forward, then backward, until a
/// sweep changes nothing.
fn fixed_point<T>(
    g: &IndexedGraph,
    facts: &mut [T],
    step: fn(&IndexedGraph, usize, &mut [T]) -> Result<bool>,
) -> Result<()> {
    let ops: Vec<usize> = (0..g.nodes.len()).filter(|&n| !g.nodes[n].is_variable()).collect();
    // Each useful sweep learns at least one fact, so this bound is never the reason to stop early.
    for sweep in 0..=2 * g.num_entries() + 2 {
        let mut changed = false;
        if sweep % 2 == 0 {
            for &n in &ops {
                changed |= step(g, n, facts)?;
            }
        } else {
            for &n in ops.iter().rev() {
                changed |= step(g, n, facts)?;
            }
        }
        if !changed && sweep > 0 {
            break;
        }
    }
    Ok(())
}

/// Runs operator inference, turning a panic into an error.
fn guarded(f: impl FnOnce() -> Result<()>) -> Result<()> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(Error::Invalid("inference panicked".into())),
    }
}

fn slot_names(g: &IndexedGraph, n: usize) -> (Vec<String>, Vec<String>) {
    let call = g.nodes[n].op.as_ref().expect("operator node");
    (
        call.input_names().unwrap_or_default(),
        (0..g.num_outputs(n)).map(|i| g.nodes[n].output_name(i).unwrap_or_default()).collect(),
    )
}

fn infer_node_shape(g: &IndexedGraph, n: usize, shapes: &mut [PartialShape]) -> Result<bool> {
    let node = &g.nodes[n];
    let call = node.op.as_ref().expect("operator node");
    let in_entries: Vec<usize> = g.inputs[n].iter().map(|&(m, i)| g.entry(m, i)).collect();
    let out_entries: Vec<usize> = (0..g.num_outputs(n)).map(|i| g.entry(n, i)).collect();
    if in_entries.iter().chain(&out_entries).all(|&e| is_complete(&shapes[e])) {
        return Ok(false);
    }
    let full = |e: &usize| is_complete(&shapes[*e]).then(|| Shape::from_slice(shapes[*e].as_ref().unwrap()));
    let mut ins: Vec<Option<Shape>> = in_entries.iter().map(full).collect();
    let mut outs: Vec<Option<Shape>> = out_entries.iter().map(full).collect();
    let all_inputs_known = ins.iter().all(Option::is_some);
    if let Err(e) = guarded(|| (call.op.infer_shape)(&call.attrs, &mut ins, &mut outs)) {
        if all_inputs_known {
            return Err(Error::Shape(format!("node `{}` ({}): {e}", node.name, call.op.name)));
        }
        // Not enough is known yet; a later sweep may know more.
        return Ok(false);
    }
    let (in_names, out_names) = slot_names(g, n);
    let mut changed = false;
    for (k, (slot, &e)) in ins.iter().zip(&in_entries).chain(outs.iter().zip(&out_entries)).enumerate() {
        let Some(s) = slot else { continue };
        let before = shapes[e].clone();
        match unify_shape(&mut shapes[e], s) {
            Ok(c) => changed |= c,
            Err(()) => {
                let what = if k < in_entries.len() {
                    format!("input `{}`", in_names.get(k).cloned().unwrap_or_else(|| k.to_string()))
                } else {
                    format!("output `{}`", out_names.get(k - in_entries.len()).cloned().unwrap_or_default())
                };
                return Err(Error::Shape(format!(
                    "node `{}` ({}): {what} has shape {} but the operator infers {}",
                    node.name,
                    call.op.name,
                    show(&before),
                    shape_string(s)
                )));
            }
        }
    }
    Ok(changed)
}

fn infer_node_dtype(g: &IndexedGraph, n: usize, types: &mut [Option<DType>]) -> Result<bool> {
    let node = &g.nodes[n];
    let call = node.op.as_ref().expect("operator node");
    let in_entries: Vec<usize> = g.inputs[n].iter().map(|&(m, i)| g.entry(m, i)).collect();
    let out_entries: Vec<usize> = (0..g.num_outputs(n)).map(|i| g.entry(n, i)).collect();
    if in_entries.iter().chain(&out_entries).all(|&e| types[e].is_some()) {
        return Ok(false);
    }
    let mut ins: Vec<Option<DType>> = in_entries.iter().map(|&e| types[e]).collect();
    let mut outs: Vec<Option<DType>> = out_entries.iter().map(|&e| types[e]).collect();
    let all_inputs_known = ins.iter().all(Option::is_some);
    if let Err(e) = guarded(|| (call.op.infer_type)(&call.attrs, &mut ins, &mut outs)) {
        if all_inputs_known {
            return Err(Error::DType(format!("node `{}` ({}): {e}", node.name, call.op.name)));
        }
        return Ok(false);
    }
    let (in_names, out_names) = slot_names(g, n);
    let mut changed = false;
    for (k, (slot, &e)) in ins.iter().zip(&in_entries).chain(outs.iter().zip(&out_entries)).enumerate() {
        let Some(d) = slot else { continue };
        match types[e] {
            None => {
                types[e] = Some(*d);
                changed = true;
            }
            Some(have) if have != *d => {
                let what = if k < in_entries.len() {
                    format!("input `{}`", in_names.get(k).cloned().unwrap_or_default())
                } else {
                    format!("output `{}`", out_names.get(k - in_entries.len()).cloned().unwrap_or_default())
                };
                return Err(Error::DType(format!(
                    "node `{}` ({}): {what} has dtype {have} but the operator infers {d}",
                    node.name, call.op.name
                )));
            }
            Some(_) => {}
        }
    }
    Ok(changed)
}
