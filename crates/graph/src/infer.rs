//! Shape and dtype inference over a whole graph: each operator's own
//! (bidirectional) inference, applied forward and backward over the nodes
//! until nothing changes.
//!
//! Shapes are partial as in MXNet 1.x: `None` is an unknown shape and a
//! dimension of 0 an unknown extent (so `(64, 0)` is a weight whose input
//! size is still to be learnt), except in the shapes of real arrays given
//! to [`infer_complete`] and what operators infer from those alone, where
//! 0 is a zero-size axis. An operator with partial inference
//! (`OpDef::infer_shape_partial`) sees every shape known so far; any other
//! sees a shape only once it is complete. What an operator fills in is
//! checked against what is already known, and a conflict is an error naming
//! the node, its operator and both shapes.

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
    infer_shapes_with_heads(g, given, &[])
}

/// Like [`infer_shapes`], with the shapes of the heads known too (`None`
/// where unknown): inference runs backward from them as well.
pub fn infer_shapes_with_heads(
    g: &IndexedGraph,
    given: &HashMap<String, Vec<usize>>,
    heads: &[PartialShape],
) -> Result<Vec<PartialShape>> {
    Ok(infer_shape_facts(g, given, heads, false)?.into_iter().map(|f| f.shape).collect())
}

/// What inference knows of one entry: its partial shape, and whether that
/// shape is exact (a 0 extent in it is a real zero-size axis, not an
/// unknown one).
#[derive(Clone, Debug, Default)]
struct ShapeFact {
    shape: PartialShape,
    exact: bool,
}

impl ShapeFact {
    /// Whether every extent is known: exact, or with no 0 extent.
    fn known(&self) -> bool {
        self.shape.is_some() && (self.exact || is_complete(&self.shape))
    }
}

/// Shape facts of every entry; with `given_exact`, the `given` shapes are
/// those of real arrays (a bound executor's), exact even where they hold a
/// 0 extent, and so is whatever operators infer from exact inputs alone.
fn infer_shape_facts(
    g: &IndexedGraph,
    given: &HashMap<String, Vec<usize>>,
    heads: &[PartialShape],
    given_exact: bool,
) -> Result<Vec<ShapeFact>> {
    let mut facts: Vec<ShapeFact> = vec![ShapeFact::default(); g.num_entries()];
    for n in g.variables() {
        let node = &g.nodes[n];
        let e = g.entry(n, 0);
        // a shape given for this call overrides the declared one, as in MXNet
        if let Some(s) = given.get(&node.name) {
            facts[e] = ShapeFact { shape: Some(s.clone()), exact: given_exact };
        } else if let Some(text) = node.attr("__shape__") {
            let s =
                parse_shape(&text).map_err(|err| Error::Shape(format!("variable `{}`: {err}", node.name)))?;
            if !s.is_empty() {
                facts[e].shape = Some(s);
            }
        }
    }
    for (&(n, k), h) in g.heads.iter().zip(heads) {
        if let Some(h) = h {
            unify_shape(&mut facts[g.entry(n, k)].shape, h).map_err(|_| {
                Error::Shape(format!("output {} of the graph: shape conflict", slot_label(g, n, k)))
            })?;
        }
    }
    fixed_point(g, &mut facts, infer_node_shape)?;
    Ok(facts)
}

/// Dtypes of every entry of `g`, from `given` dtypes by variable name and,
/// for variables not given, their `__dtype__` attributes.
pub fn infer_dtypes(g: &IndexedGraph, given: &HashMap<String, DType>) -> Result<Vec<Option<DType>>> {
    infer_dtypes_with_heads(g, given, &[])
}

/// Like [`infer_dtypes`], with the dtypes of the heads known too (`None`
/// where unknown).
pub fn infer_dtypes_with_heads(
    g: &IndexedGraph,
    given: &HashMap<String, DType>,
    heads: &[Option<DType>],
) -> Result<Vec<Option<DType>>> {
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
        // as in MXNet 1.9.1, a given dtype wins over the declared one
        // (`__dtype__` only fills in a dtype nothing else gives)
        if let Some(d) = given.get(&node.name) {
            types[e] = Some(*d);
        }
    }
    for (&(n, k), h) in g.heads.iter().zip(heads) {
        let e = g.entry(n, k);
        match (types[e], h) {
            (Some(have), Some(want)) if have != *want => {
                return Err(Error::DType(format!(
                    "output {} of the graph is {have}, expected {want}",
                    slot_label(g, n, k)
                )))
            }
            (None, Some(want)) => types[e] = Some(*want),
            _ => {}
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

/// Entry ids of node `n`'s inputs and outputs.
fn node_entries(g: &IndexedGraph, n: usize) -> (Vec<usize>, Vec<usize>) {
    (
        g.inputs[n].iter().map(|&(m, i)| g.entry(m, i)).collect(),
        (0..g.num_outputs(n)).map(|i| g.entry(n, i)).collect(),
    )
}

/// How an error names slot `k` of node `n` (its inputs, then its outputs).
fn slot_label(g: &IndexedGraph, n: usize, k: usize) -> String {
    let node = &g.nodes[n];
    let n_in = g.inputs[n].len();
    if k < n_in {
        let names = node.op.as_ref().and_then(|c| c.input_names().ok()).unwrap_or_default();
        format!("input `{}`", names.get(k).cloned().unwrap_or_else(|| k.to_string()))
    } else {
        format!("output `{}`", node.output_name(k - n_in).unwrap_or_default())
    }
}

/// Runs `infer` (an operator's inference on its slots), turning its failure
/// into an error naming the node only when every input was known (else a
/// later sweep may know more: `Ok(false)`).
fn node_inference<T>(
    g: &IndexedGraph,
    n: usize,
    ins: &[Option<T>],
    infer: impl FnOnce() -> Result<()>,
    wrap: fn(String) -> Error,
) -> Result<bool> {
    match guarded(infer) {
        Ok(()) => Ok(true),
        Err(e) if ins.iter().all(Option::is_some) => {
            let call = g.nodes[n].op.as_ref().expect("operator node");
            Err(wrap(format!("node `{}` ({}): {e}", g.nodes[n].name, call.op.name)))
        }
        Err(_) => Ok(false),
    }
}

fn infer_node_shape(g: &IndexedGraph, n: usize, facts: &mut [ShapeFact]) -> Result<bool> {
    let node = &g.nodes[n];
    let call = node.op.as_ref().expect("operator node");
    let (in_entries, out_entries) = node_entries(g, n);
    if in_entries.iter().chain(&out_entries).all(|&e| facts[e].known()) {
        return Ok(false);
    }
    // exact inputs alone (a zero-size array among them) go to the
    // operator's own complete inference, whose outputs are then exact too
    let all_exact = !in_entries.is_empty() && in_entries.iter().all(|&e| facts[e].exact && facts[e].known());
    let (mut ins, mut outs);
    match &call.op.infer_shape_partial {
        Some(partial) if !all_exact => {
            // The operator reads partial shapes and errs only on a conflict.
            let given = |e: &usize| facts[*e].shape.as_deref().map(Shape::from_slice);
            ins = in_entries.iter().map(given).collect::<Vec<_>>();
            outs = out_entries.iter().map(given).collect::<Vec<_>>();
            guarded(|| partial(&call.attrs, &mut ins, &mut outs))
                .map_err(|e| Error::Shape(format!("node `{}` ({}): {e}", node.name, call.op.name)))?;
        }
        _ => {
            let full =
                |e: &usize| facts[*e].known().then(|| Shape::from_slice(facts[*e].shape.as_ref().unwrap()));
            ins = in_entries.iter().map(full).collect();
            outs = out_entries.iter().map(full).collect();
            let known = ins.clone();
            if !node_inference(
                g,
                n,
                &known,
                || (call.op.infer_shape)(&call.attrs, &mut ins, &mut outs),
                Error::Shape,
            )? {
                return Ok(false);
            }
        }
    }
    let n_in = in_entries.len();
    let mut changed = false;
    for (k, (slot, &e)) in ins.iter().zip(&in_entries).chain(outs.iter().zip(&out_entries)).enumerate() {
        let Some(s) = slot else { continue };
        let before = facts[e].shape.clone();
        let merged = if facts[e].exact {
            // an exact shape takes nothing new, and must agree
            if before.as_deref() == Some(&s[..]) {
                Ok(false)
            } else {
                Err(())
            }
        } else {
            unify_shape(&mut facts[e].shape, s)
        };
        if all_exact && k >= n_in && !facts[e].exact {
            facts[e].exact = true;
            changed = true;
        }
        match merged {
            Ok(c) => changed |= c,
            Err(()) => {
                return Err(Error::Shape(format!(
                    "node `{}` ({}): {} has shape {} but the operator infers {}",
                    node.name,
                    call.op.name,
                    slot_label(g, n, k),
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
    let (in_entries, out_entries) = node_entries(g, n);
    if in_entries.iter().chain(&out_entries).all(|&e| types[e].is_some()) {
        return Ok(false);
    }
    let mut ins: Vec<Option<DType>> = in_entries.iter().map(|&e| types[e]).collect();
    let mut outs: Vec<Option<DType>> = out_entries.iter().map(|&e| types[e]).collect();
    let known = ins.clone();
    if !node_inference(g, n, &known, || (call.op.infer_type)(&call.attrs, &mut ins, &mut outs), Error::DType)?
    {
        return Ok(false);
    }
    let mut changed = false;
    for (k, (slot, &e)) in ins.iter().zip(&in_entries).chain(outs.iter().zip(&out_entries)).enumerate() {
        let Some(d) = slot else { continue };
        match types[e] {
            None => {
                types[e] = Some(*d);
                changed = true;
            }
            Some(have) if have != *d => {
                return Err(Error::DType(format!(
                    "node `{}` ({}): {} has dtype {have} but the operator infers {d}",
                    node.name,
                    call.op.name,
                    slot_label(g, n, k)
                )));
            }
            Some(_) => {}
        }
    }
    Ok(changed)
}

/// Complete shapes and dtypes of every entry of `g` from the variables'
/// (as [`infer_shapes`] and [`infer_dtypes`]), or an error naming the first
/// node whose output stays unknown. The given shapes are those of arrays
/// (a bound executor's), so a 0 extent in them is a zero-size axis, and
/// so is one that operators infer from such shapes.
pub fn infer_complete(
    g: &IndexedGraph,
    shapes: &HashMap<String, Vec<usize>>,
    types: &HashMap<String, DType>,
) -> Result<(Vec<Vec<usize>>, Vec<DType>)> {
    let facts = infer_shape_facts(g, shapes, &[], true)?;
    let t = infer_dtypes(g, types)?;
    let mut out_s = Vec::with_capacity(facts.len());
    let mut out_t = Vec::with_capacity(t.len());
    for (n, node) in g.nodes.iter().enumerate() {
        for k in 0..g.num_outputs(n) {
            let e = g.entry(n, k);
            match (&facts[e].shape, t[e]) {
                (Some(shape), Some(dtype)) if facts[e].known() => {
                    out_s.push(shape.clone());
                    out_t.push(dtype);
                }
                (shape, _) => {
                    return Err(Error::Shape(format!(
                        "node `{}` ({}): output {k} has {} shape and {} dtype",
                        node.name,
                        node.op_name(),
                        shape.as_ref().map_or("an unknown".to_string(), |s| format!(
                            "the incomplete {}",
                            shape_string(s)
                        )),
                        t[e].map_or("an unknown".to_string(), |d| d.name().to_string()),
                    )))
                }
            }
        }
    }
    Ok((out_s, out_t))
}

/// Inference of an operator that runs graph `g` on its inputs (variables
/// `names`, in order): the shapes of `g`'s heads from the inputs' shapes.
pub fn infer_head_shapes(
    g: &IndexedGraph,
    names: &[String],
    ins: &[Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let given: HashMap<String, Vec<usize>> =
        names.iter().zip(ins).filter_map(|(n, s)| s.as_ref().map(|s| (n.clone(), s.to_vec()))).collect();
    let shapes = infer_shapes(g, &given)?;
    for (o, &(n, k)) in outs.iter_mut().zip(&g.heads) {
        let e = g.entry(n, k);
        if is_complete(&shapes[e]) {
            *o = shapes[e].as_deref().map(Shape::from_slice);
        }
    }
    Ok(())
}

/// Like [`infer_head_shapes`], for dtypes.
pub fn infer_head_dtypes(
    g: &IndexedGraph,
    names: &[String],
    ins: &[Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let given: HashMap<String, DType> =
        names.iter().zip(ins).filter_map(|(n, d)| d.map(|d| (n.clone(), d))).collect();
    let types = infer_dtypes(g, &given)?;
    for (o, &(n, k)) in outs.iter_mut().zip(&g.heads) {
        *o = types[g.entry(n, k)];
    }
    Ok(())
}
