//! Control flow in graphs: loops and branches whose bodies are subgraphs
//! held by the node, as MXNet 1.9.1's `mx.sym.contrib.foreach`,
//! `while_loop` and `cond` build them.
//!
//! - [`foreach`]: `_foreach`, a loop over axis 0 of sequences with states;
//! - [`while_loop`]: `_while_loop`, a loop while a condition graph holds,
//!   at most `max_iterations` times;
//! - [`cond`]: `_cond`, one of two branch graphs chosen by a condition graph.
//!
//! Each body is NNVM JSON in an attribute (in MXNet's JSON, the node's
//! `subgraphs` list; see [`subgraph_attrs`]). Bodies run with the cached
//! graph executor; gradients run the forward again and go back through the
//! bodies' own gradient graphs. Shapes are inferred through the bodies, so a
//! loop's outputs have static shapes (a while loop's step outputs are padded
//! to `max_iterations` rows, as MXNet pads them).

pub mod cond;
pub mod foreach;
pub mod while_loop;

use crate::cached::graph_gradient;
use crate::infer::{infer_dtypes_with_heads, infer_shapes_with_heads, is_complete};
use crate::partition::{subgraph_of, Subgraph};
use oxnet_core::op::{BackwardArgs, BackwardDeps, GradCtx, OpDef};
use oxnet_core::{
    autograd, invoke1, registry, AttrValue, Attrs, DType, Error, NDArray, OpContext, Req, Result, Shape,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The attributes holding the subgraphs of a control-flow operator, in the
/// order of MXNet's per-node `subgraphs` list; `None` for other operators.
pub fn subgraph_attrs(op: &str) -> Option<&'static [&'static str]> {
    match op {
        foreach::FOREACH => Some(&[crate::partition::SUBGRAPH_ATTR]),
        while_loop::WHILE_LOOP => Some(&while_loop::SUBGRAPHS),
        cond::COND => Some(&cond::SUBGRAPHS),
        _ => None,
    }
}

/// The body in attribute `key`: parsed, without auxiliary states.
fn body(attrs: &Attrs, key: &str) -> Result<Arc<Subgraph>> {
    let sub = subgraph_of(attrs.str(key)?).map_err(|e| Error::attr(key, e))?;
    if !sub.aux_positions.is_empty() {
        return Err(Error::attr(key, "a body with auxiliary states is not supported"));
    }
    Ok(sub)
}

/// A list of non-negative positions.
fn positions(attrs: &Attrs, key: &str) -> Result<Vec<usize>> {
    attrs
        .ints(key)?
        .iter()
        .map(|&i| {
            usize::try_from(i).map_err(|_| Error::attr(key, format!("holds the negative position {i}")))
        })
        .collect()
}

/// A non-negative integer attribute.
fn count(attrs: &Attrs, key: &str) -> Result<usize> {
    usize::try_from(attrs.int(key)?).map_err(|_| Error::attr(key, "must not be negative"))
}

/// Checks that `locs` (node input positions of a body's inputs) name as
/// many positions as the body has inputs, each below `n_inputs`.
fn check_locs(op: &str, key: &str, locs: &[usize], sub: &Subgraph, n_inputs: usize) -> Result<()> {
    let wanted = sub.call_order.len();
    if locs.len() != wanted {
        return Err(Error::attr(
            key,
            format!("`{op}`: {} positions given for a body of {wanted} inputs", locs.len()),
        ));
    }
    if let Some(&bad) = locs.iter().find(|&&l| l >= n_inputs) {
        return Err(Error::attr(
            key,
            format!("`{op}`: position {bad} is beyond the node's {n_inputs} inputs"),
        ));
    }
    Ok(())
}

/// The name of each of a node's `n_inputs` inputs: the name of the first
/// graph input it feeds (`data{i}` for one that feeds none).
fn input_names(n_inputs: usize, graphs: &[(&Subgraph, &[usize])]) -> Result<Vec<String>> {
    let mut names: Vec<Option<String>> = vec![None; n_inputs];
    for (graph, locs) in graphs {
        for (name, &p) in graph.symbol.list_inputs()?.into_iter().zip(locs.iter()) {
            names[p].get_or_insert(name);
        }
    }
    Ok(names.into_iter().enumerate().map(|(i, n)| n.unwrap_or_else(|| format!("data{i}"))).collect())
}

/// Runs a body on its inputs (in its `list_inputs` order).
fn run(sub: &Subgraph, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    let refs: Vec<&NDArray> = sub.call_order.iter().map(|&i| &inputs[i]).collect();
    sub.cached.call(&refs)
}

/// The truth of a condition body's output: one element, nonzero.
fn truth(op: &str, x: &NDArray) -> Result<bool> {
    if x.size() != 1 {
        return Err(Error::Shape(format!(
            "`{op}`: the condition gave shape {:?}; it must give one element",
            x.shape()
        )));
    }
    Ok(x.to_scalar()? != 0.0)
}

/// The gradient of one run of a body: its inputs, outputs, and the
/// gradients of its outputs; a gradient for each input (`None`: zero).
fn body_gradient(
    sub: &Subgraph,
    g: &GradCtx,
    inputs: &[NDArray],
    outputs: &[NDArray],
    heads: &[NDArray],
) -> Result<Vec<Option<NDArray>>> {
    let n_args = sub.symbol.list_arguments()?.len();
    let needs = vec![true; inputs.len()];
    let ctx = GradCtx {
        attrs: g.attrs,
        inputs,
        outputs,
        out_grads: heads,
        needs_grad: &needs,
        state: None,
        is_train: g.is_train,
        grad_into: None,
    };
    graph_gradient(&sub.symbol, n_args, &ctx)
}

/// A gradient computed from whole arrays, run as a backward kernel: at run
/// time, on the values (a while loop's steps and a branch's choice depend
/// on them, so the gradient cannot be traced into a static graph).
type GradientFn = fn(&GradCtx) -> Result<Vec<Option<NDArray>>>;

/// Declares `gradient` as `op`'s backward kernel, reading every input,
/// output and output gradient (`counts`: the node's inputs and outputs).
fn with_backward_kernel(
    op: OpDef,
    gradient: GradientFn,
    counts: fn(&Attrs) -> Result<(usize, usize)>,
) -> OpDef {
    let deps = move |a: &Attrs| {
        let (n_in, n_out) = counts(a).unwrap_or((0, 0));
        BackwardDeps {
            out_grads: (0..n_out).collect(),
            inputs: (0..n_in).collect(),
            outputs: (0..n_out).collect(),
        }
    };
    op.backward(deps, move |ctx: &OpContext, args: &BackwardArgs, in_grads: &[NDArray]| {
        let present = |v: &[Option<NDArray>], what: &str| -> Result<Vec<NDArray>> {
            v.iter()
                .map(|x| {
                    x.clone().ok_or_else(|| {
                        Error::Autograd(format!("`{}`: a forward {what} was freed", ctx.op_name))
                    })
                })
                .collect()
        };
        let (inputs, outputs) = (present(args.inputs, "input")?, present(args.outputs, "output")?);
        let out_grads = args
            .out_grads
            .iter()
            .zip(&outputs)
            .map(|(g, o)| g.clone().map_or_else(|| zeros_like(o), Ok))
            .collect::<Result<Vec<_>>>()?;
        let needs: Vec<bool> = ctx.req.iter().map(|r| *r != Req::Null).collect();
        let _quiet = autograd::pause();
        let g = GradCtx {
            attrs: ctx.attrs,
            inputs: &inputs,
            outputs: &outputs,
            out_grads: &out_grads,
            needs_grad: &needs,
            state: None,
            is_train: ctx.is_train,
            grad_into: None,
        };
        let grads = gradient(&g)?;
        for ((dst, req), gr) in in_grads.iter().zip(ctx.req).zip(grads) {
            if *req != Req::Null {
                let value = match gr {
                    Some(v) => v,
                    None => zeros_like(dst)?,
                };
                oxnet_core::custom::assign(dst, *req, &value)?;
            }
        }
        Ok(())
    })
}

/// `grads` without the ones the caller did not ask for.
fn only_needed(grads: Vec<Option<NDArray>>, needs: &[bool]) -> Vec<Option<NDArray>> {
    grads.into_iter().zip(needs).map(|(gr, need)| gr.filter(|_| *need)).collect()
}

/// Adds `x` into the gradient slot `acc`.
fn accumulate(acc: &mut Option<NDArray>, x: NDArray) -> Result<()> {
    *acc = Some(match acc.take() {
        Some(a) => invoke1("elemwise_add", &[&a, &x], &[])?,
        None => x,
    });
    Ok(())
}

/// The zeros standing for a missing gradient of `x`.
fn zeros_like(x: &NDArray) -> Result<NDArray> {
    NDArray::zeros(x.shape(), x.dtype(), x.device())
}

/// What inference found for a body's inputs and for its outputs (`None`:
/// unknown).
type Found<T> = (Vec<Option<T>>, Vec<Option<T>>);

/// Shapes through a body: given some of its inputs' shapes (in its
/// `list_inputs` order), the shapes inference finds for its inputs and its
/// outputs: complete ones, or with `partial` any it knows in part (a 0
/// dimension unknown, as MXNet's `infer_shape_partial`).
fn body_shapes(sub: &Subgraph, ins: &[Option<Shape>], partial: bool) -> Result<Found<Shape>> {
    let vars = sub.graph.variables();
    let given: HashMap<String, Vec<usize>> = vars
        .iter()
        .zip(ins)
        .filter_map(|(&n, s)| s.as_ref().map(|s| (sub.graph.nodes[n].name.clone(), s.to_vec())))
        .collect();
    let shapes = infer_shapes_with_heads(&sub.graph, &given, &vec![None; sub.graph.heads.len()])?;
    let found = |e: usize| {
        let s = &shapes[e];
        (partial || is_complete(s)).then(|| s.as_deref().map(Shape::from_slice)).flatten()
    };
    let in_shapes = vars.iter().map(|&n| found(sub.graph.entry(n, 0))).collect();
    let out_shapes = sub.graph.heads.iter().map(|&(n, e)| found(sub.graph.entry(n, e))).collect();
    Ok((in_shapes, out_shapes))
}

/// Types through a body, as [`body_shapes`].
fn body_types(sub: &Subgraph, ins: &[Option<DType>]) -> Result<Found<DType>> {
    let vars = sub.graph.variables();
    let given: HashMap<String, DType> =
        vars.iter().zip(ins).filter_map(|(&n, t)| t.map(|t| (sub.graph.nodes[n].name.clone(), t))).collect();
    let types = infer_dtypes_with_heads(&sub.graph, &given, &vec![None; sub.graph.heads.len()])?;
    let in_types = vars.iter().map(|&n| types[sub.graph.entry(n, 0)]).collect();
    let out_types = sub.graph.heads.iter().map(|&(n, e)| types[sub.graph.entry(n, e)]).collect();
    Ok((in_types, out_types))
}

/// What inference knows of one array: its shape or its dtype.
trait Fact: Clone + PartialEq + std::fmt::Debug {
    /// `self` and `other` together, or `None` when they conflict. With
    /// `partial`, a shape's 0 dimensions are unknown and take the other's.
    fn join(&self, other: &Self, partial: bool) -> Option<Self>;
}

impl Fact for Shape {
    fn join(&self, other: &Self, partial: bool) -> Option<Self> {
        if !partial {
            return (self == other).then(|| self.clone());
        }
        let mut merged = self.clone();
        oxnet_core::shape::merge_partial(&mut merged, other).ok().map(|()| merged)
    }
}

impl Fact for DType {
    fn join(&self, other: &Self, _: bool) -> Option<Self> {
        (self == other).then_some(*self)
    }
}

/// Joins `found` into `slot`; a conflict is an error saying `what` ("input
/// 2 has shape") and both values.
fn join_into<T: Fact>(
    slot: &mut Option<T>,
    found: Option<T>,
    partial: bool,
    conflict: impl Fn(&T, &T) -> Error,
) -> Result<()> {
    let Some(found) = found else { return Ok(()) };
    *slot = Some(match slot.as_ref() {
        None => found,
        Some(have) => have.join(&found, partial).ok_or_else(|| conflict(have, &found))?,
    });
    Ok(())
}

/// Joins what a body inferred for its inputs into the node's inputs
/// (`locs[j]`: the node input feeding body input `j`).
fn merge_into<T: Fact>(
    op: &str,
    what: &str,
    node: &mut [Option<T>],
    locs: &[usize],
    body: Vec<Option<T>>,
    partial: bool,
) -> Result<()> {
    for (&l, b) in locs.iter().zip(body) {
        join_into(&mut node[l], b, partial, |a, b| {
            Error::Shape(format!("`{op}`: input {l} has {what} {a:?}, but its body needs {b:?}"))
        })?;
    }
    Ok(())
}

/// Element `t` of `x` along axis 0, by operators (the loop may run inside
/// a traced graph, where views made outside operators are refused).
fn element(x: &NDArray, t: usize) -> Result<NDArray> {
    let one = invoke1(
        "slice_axis",
        &[x],
        &[("axis", 0i64.into()), ("begin", (t as i64).into()), ("end", (t as i64 + 1).into())],
    )?;
    let rest: Vec<i64> = x.shape()[1..].iter().map(|&d| d as i64).collect();
    invoke1("Reshape", &[&one], &[("shape", AttrValue::Ints(rest))])
}

/// `xs` stacked along a new axis 0.
fn stack(xs: &[NDArray]) -> Result<NDArray> {
    let refs: Vec<&NDArray> = xs.iter().collect();
    invoke1("stack", &refs, &[("num_args", (refs.len() as i64).into()), ("axis", 0i64.into())])
}

fn register() {
    registry::register(foreach::foreach_op());
    registry::register(while_loop::while_loop_op());
    registry::register(cond::cond_op());
}

oxnet_core::register_operators!(register);
