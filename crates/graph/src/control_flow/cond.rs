//! `_cond`: one of two branches chosen by a condition (MXNet's
//! `mx.sym.contrib.cond`).
//!
//! The node holds three subgraphs: `cond` (one output; nonzero picks
//! `then`), `then` and `else` (the same number of outputs). As in MXNet,
//! `cond_input_locs`, `then_input_locs` and `else_input_locs` give the node
//! input feeding each input of the three graphs. Only the chosen branch
//! runs, and only its inputs get gradients. Both branches must give their
//! outputs the same shapes and types, checked by inference.

use super::{
    accumulate, body, body_gradient, body_shapes, body_types, check_locs, count, input_names, join_into,
    merge_into, only_needed, positions, run, truth, with_backward_kernel, Fact,
};
use crate::partition::Subgraph;
use oxnet_core::op::{GradCtx, OpDef};
use oxnet_core::{autograd, AttrKind, AttrSpec, Attrs, DType, Error, NDArray, OpContext, Result, Shape};
use std::sync::Arc;

/// The operator's name.
pub const COND: &str = "_cond";

/// The subgraph attributes, in MXNet's `subgraphs` order.
pub const SUBGRAPHS: [&str; 3] = ["cond_sym_json", "then_sym_json", "else_sym_json"];

const LOCS: [&str; 3] = ["cond_input_locs", "then_input_locs", "else_input_locs"];

/// The branch's layout, from its attributes: the three graphs and the node
/// inputs feeding each one's inputs.
struct Cond {
    graphs: [Arc<Subgraph>; 3],
    locs: [Vec<usize>; 3],
    n_inputs: usize,
    n_outputs: usize,
}

fn parse(attrs: &Attrs) -> Result<Cond> {
    let graphs = [body(attrs, SUBGRAPHS[0])?, body(attrs, SUBGRAPHS[1])?, body(attrs, SUBGRAPHS[2])?];
    let n_inputs = count(attrs, "num_args")?
        .checked_sub(3)
        .ok_or_else(|| Error::attr("num_args", "counts the three subgraphs, so it is at least 3"))?;
    let locs = [positions(attrs, LOCS[0])?, positions(attrs, LOCS[1])?, positions(attrs, LOCS[2])?];
    for ((key, l), g) in LOCS.iter().zip(&locs).zip(&graphs) {
        check_locs(COND, key, l, g, n_inputs)?;
    }
    if graphs[0].symbol.num_outputs() != 1 {
        return Err(Error::attr(
            SUBGRAPHS[0],
            format!("cond has {} outputs; it needs one", graphs[0].symbol.num_outputs()),
        ));
    }
    let n_outputs = count(attrs, "num_outputs")?;
    let (n_then, n_else) = (graphs[1].symbol.num_outputs(), graphs[2].symbol.num_outputs());
    if n_then != n_outputs || n_else != n_outputs {
        return Err(Error::attr(
            "num_outputs",
            format!("is {n_outputs}, but the then branch has {n_then} outputs and the else branch {n_else}"),
        ));
    }
    Ok(Cond { graphs, locs, n_inputs, n_outputs })
}

fn prepared(attrs: &Attrs) -> Result<&Cond> {
    attrs.prepared::<Cond>().ok_or_else(|| Error::Invalid("the branch's attributes were not prepared".into()))
}

impl Cond {
    /// The inputs of graph `which` from the node's.
    fn inputs_of(&self, which: usize, inputs: &[NDArray]) -> Vec<NDArray> {
        self.locs[which].iter().map(|&l| inputs[l].clone()).collect()
    }

    /// The branch the condition picks: 1 (then) or 2 (else).
    fn branch(&self, inputs: &[NDArray]) -> Result<usize> {
        let c = run(&self.graphs[0], &self.inputs_of(0, inputs))?;
        Ok(if truth(COND, &c[0])? { 1 } else { 2 })
    }
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let c = prepared(ctx.attrs)?;
    let _quiet = autograd::pause();
    let _mode = if ctx.is_train { autograd::train_mode() } else { autograd::predict_mode() };
    let b = c.branch(inputs)?;
    let values = run(&c.graphs[b], &c.inputs_of(b, inputs))?;
    for (k, ((o, req), v)) in outputs.iter().zip(ctx.req).zip(&values).enumerate() {
        if o.shape() != v.shape() {
            return Err(Error::Shape(format!(
                "`{COND}`: output {k} of the {} branch has shape {:?}, but shape inference gave {:?}",
                if b == 1 { "then" } else { "else" },
                v.shape(),
                o.shape()
            )));
        }
        oxnet_core::custom::assign(o, *req, v)?;
    }
    Ok(())
}

/// The chosen branch's gradient graph, its gradients summed into the node
/// inputs feeding it.
fn gradient(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let c = prepared(g.attrs)?;
    let b = {
        let _quiet = autograd::pause();
        c.branch(g.inputs)?
    };
    let inputs = c.inputs_of(b, g.inputs);
    let grads = body_gradient(&c.graphs[b], g, &inputs, g.outputs, g.out_grads)?;
    let mut result: Vec<Option<NDArray>> = vec![None; c.n_inputs];
    for (&l, gr) in c.locs[b].iter().zip(grads) {
        if let Some(gr) = gr {
            accumulate(&mut result[l], gr)?;
        }
    }
    Ok(only_needed(result, g.needs_grad))
}

/// Joins a branch's outputs into the node's; the branches must agree.
fn merge_outputs<T: Fact>(
    what: &str,
    outs: &mut [Option<T>],
    found: Vec<Option<T>>,
    partial: bool,
) -> Result<()> {
    for (k, (slot, f)) in outs.iter_mut().zip(found).enumerate() {
        join_into(slot, f, partial, |a, b| {
            Error::Shape(format!(
                "`{COND}`: output {k} has {what} {a:?} in one branch and {b:?} in the other; both branches must agree"
            ))
        })?;
    }
    Ok(())
}

fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
    partial: bool,
) -> Result<()> {
    let c = prepared(attrs)?;
    for (which, graph) in c.graphs.iter().enumerate() {
        let given: Vec<Option<Shape>> = c.locs[which].iter().map(|&p| ins[p].clone()).collect();
        let (found_ins, found_outs) = body_shapes(graph, &given, partial)?;
        if which > 0 {
            merge_outputs("shape", outs, found_outs, partial)?;
        }
        merge_into(COND, "shape", ins, &c.locs[which], found_ins, partial)?;
    }
    Ok(())
}

fn infer_type(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let c = prepared(attrs)?;
    for (which, graph) in c.graphs.iter().enumerate() {
        let given: Vec<Option<DType>> = c.locs[which].iter().map(|&p| ins[p]).collect();
        let (found_ins, found_outs) = body_types(graph, &given)?;
        if which > 0 {
            merge_outputs("type", outs, found_outs, false)?;
        }
        merge_into(COND, "type", ins, &c.locs[which], found_ins, false)?;
    }
    Ok(())
}

/// The `_cond` operator.
pub fn cond_op() -> OpDef {
    let locs = |name: &str, doc: &str| AttrSpec::optional(name, AttrKind::Ints, Vec::<i64>::new(), doc);
    let graph = |name: &str, doc: &str| AttrSpec::optional(name, AttrKind::Str, "", doc);
    let op = OpDef::new(COND)
        .doc("Runs the subgraph `then_sym_json` if the subgraph `cond_sym_json` gives a nonzero value, else `else_sym_json` (MXNet's cond).")
        .attr(graph(SUBGRAPHS[0], "the condition as NNVM JSON"))
        .attr(graph(SUBGRAPHS[1], "the then branch as NNVM JSON"))
        .attr(graph(SUBGRAPHS[2], "the else branch as NNVM JSON"))
        .attr(AttrSpec::required("num_args", AttrKind::Int, "the node's inputs and its three subgraphs (MXNet counts them)"))
        .attr(AttrSpec::required("num_outputs", AttrKind::Int, "the node's outputs"))
        .attr(locs(LOCS[0], "the node input feeding each input of cond"))
        .attr(locs(LOCS[1], "the node input feeding each input of the then branch"))
        .attr(locs(LOCS[2], "the node input feeding each input of the else branch"))
        .prepare(|attrs| Ok(Arc::new(parse(attrs)?) as Arc<dyn std::any::Any + Send + Sync>))
        .arguments_fn(|a| {
            let c = prepared(a)?;
            let graphs: Vec<(&Subgraph, &[usize])> =
                c.graphs.iter().map(|g| &**g).zip(c.locs.iter().map(|l| l.as_slice())).collect();
            input_names(c.n_inputs, &graphs)
        })
        .outputs_fn(|a| Ok((0..prepared(a)?.n_outputs).map(|k| format!("output{k}")).collect()))
        .arity_fn(|a| {
            let c = prepared(a)?;
            Ok([c.n_inputs, 0, c.n_outputs])
        })
        .infer_shape(|a, i, o| infer_shape(a, i, o, false))
        .infer_shape_partial(|a, i, o| infer_shape(a, i, o, true))
        .infer_type(infer_type)
        .forward(forward);
    with_backward_kernel(op, gradient, |a| prepared(a).map(|c| (c.n_inputs, c.n_outputs)))
}
