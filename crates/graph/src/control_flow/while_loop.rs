//! `_while_loop`: a loop that runs while a condition holds (MXNet's
//! `mx.sym.contrib.while_loop`).
//!
//! The node holds two subgraphs: `cond` (one output, nonzero to go on) and
//! `func`, whose outputs are the step outputs followed by the new loop
//! variables. As in MXNet, `cond_input_locs` and `func_input_locs` give the
//! node input feeding each input of the two graphs, and `func_var_locs` the
//! inputs of `func` that are loop variables (in loop-variable order). At
//! each step the loop variables (in both graphs) take the values `func`
//! returned. At most `max_iterations` steps run.
//!
//! Outputs: each step output stacked over the steps on a new axis 0 and
//! padded with zeros to `max_iterations` rows, then the final loop
//! variables. MXNet learns the step outputs' shapes only by running the
//! loop; here they are inferred from `func`, so the node's outputs have
//! static shapes and a loop that stops at once still gives zero-filled
//! outputs of the right shape.

use super::{
    accumulate, body, body_gradient, body_shapes, body_types, check_locs, count, element, input_names,
    join_into, merge_into, only_needed, positions, run, stack, truth, with_backward_kernel, zeros_like,
};
use crate::partition::Subgraph;
use oxnet_core::op::{GradCtx, OpDef};
use oxnet_core::{
    autograd, invoke1, AttrKind, AttrSpec, Attrs, DType, Error, NDArray, OpContext, Result, Shape,
};
use std::sync::Arc;

/// The operator's name.
pub const WHILE_LOOP: &str = "_while_loop";

/// The subgraph attributes, in MXNet's `subgraphs` order.
pub const SUBGRAPHS: [&str; 2] = ["cond_sym_json", "func_sym_json"];

/// The loop's layout, from its attributes.
struct WhileLoop {
    cond: Arc<Subgraph>,
    func: Arc<Subgraph>,
    cond_locs: Vec<usize>,
    func_locs: Vec<usize>,
    /// The positions among `func`'s inputs of the loop variables.
    var_locs: Vec<usize>,
    /// For each loop variable, its position among `cond`'s inputs, if any.
    var_in_cond: Vec<Option<usize>>,
    n_inputs: usize,
    n_out_data: usize,
    max_iterations: usize,
}

/// One step: `func`'s inputs and outputs.
struct Step {
    inputs: Vec<NDArray>,
    outputs: Vec<NDArray>,
}

fn parse(attrs: &Attrs) -> Result<WhileLoop> {
    let cond = body(attrs, SUBGRAPHS[0])?;
    let func = body(attrs, SUBGRAPHS[1])?;
    let n_inputs = count(attrs, "num_args")?
        .checked_sub(2)
        .ok_or_else(|| Error::attr("num_args", "counts the two subgraphs, so it is at least 2"))?;
    let (cond_locs, func_locs, var_locs) = (
        positions(attrs, "cond_input_locs")?,
        positions(attrs, "func_input_locs")?,
        positions(attrs, "func_var_locs")?,
    );
    check_locs(WHILE_LOOP, "cond_input_locs", &cond_locs, &cond, n_inputs)?;
    check_locs(WHILE_LOOP, "func_input_locs", &func_locs, &func, n_inputs)?;
    let mut seen = vec![false; func_locs.len()];
    for &v in &var_locs {
        if v >= func_locs.len() || std::mem::replace(&mut seen[v], true) {
            return Err(Error::attr(
                "func_var_locs",
                format!("{var_locs:?} must name distinct inputs among func's {}", func_locs.len()),
            ));
        }
    }
    if cond.symbol.num_outputs() != 1 {
        return Err(Error::attr(
            SUBGRAPHS[0],
            format!("cond has {} outputs; it needs one", cond.symbol.num_outputs()),
        ));
    }
    let n_out_data = count(attrs, "num_out_data")?;
    let n_outputs = count(attrs, "num_outputs")?;
    let func_outputs = func.symbol.num_outputs();
    if n_outputs != func_outputs || n_out_data + var_locs.len() != func_outputs {
        return Err(Error::attr(
            "num_outputs",
            format!(
                "func has {func_outputs} outputs; num_outputs is {n_outputs} and they must be num_out_data ({n_out_data}) step outputs and {} loop variables",
                var_locs.len()
            ),
        ));
    }
    let max_iterations = count(attrs, "max_iterations")?;
    if max_iterations == 0 {
        return Err(Error::attr("max_iterations", "must be at least 1"));
    }
    let var_in_cond = var_locs.iter().map(|&v| cond_locs.iter().position(|&c| c == func_locs[v])).collect();
    Ok(WhileLoop {
        cond,
        func,
        cond_locs,
        func_locs,
        var_locs,
        var_in_cond,
        n_inputs,
        n_out_data,
        max_iterations,
    })
}

fn prepared(attrs: &Attrs) -> Result<&WhileLoop> {
    attrs
        .prepared::<WhileLoop>()
        .ok_or_else(|| Error::Invalid("the loop's attributes were not prepared".into()))
}

impl WhileLoop {
    /// Runs the loop: every step's `func` inputs and outputs.
    fn run(&self, inputs: &[NDArray]) -> Result<Vec<Step>> {
        let mut cond_in: Vec<NDArray> = self.cond_locs.iter().map(|&l| inputs[l].clone()).collect();
        let mut func_in: Vec<NDArray> = self.func_locs.iter().map(|&l| inputs[l].clone()).collect();
        let mut steps = Vec::new();
        while steps.len() < self.max_iterations {
            let go = run(&self.cond, &cond_in)?;
            if !truth(WHILE_LOOP, &go[0])? {
                break;
            }
            let outputs = run(&self.func, &func_in)?;
            let t = steps.len();
            let next = func_in.clone();
            for (k, &v) in self.var_locs.iter().enumerate() {
                let new = &outputs[self.n_out_data + k];
                if new.shape() != func_in[v].shape() {
                    return Err(Error::Shape(format!(
                        "`{WHILE_LOOP}`: loop variable {k} has shape {:?} before step {t} and {:?} after it; loop variables keep their shapes",
                        func_in[v].shape(),
                        new.shape()
                    )));
                }
                func_in[v] = new.clone();
                if let Some(c) = self.var_in_cond[k] {
                    cond_in[c] = new.clone();
                }
            }
            steps.push(Step { inputs: next, outputs });
        }
        Ok(steps)
    }

    /// The final value of loop variable `k`.
    fn final_var(&self, inputs: &[NDArray], steps: &[Step], k: usize) -> NDArray {
        match steps.last() {
            Some(s) => s.outputs[self.n_out_data + k].clone(),
            None => inputs[self.func_locs[self.var_locs[k]]].clone(),
        }
    }
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let l = prepared(ctx.attrs)?;
    let _quiet = autograd::pause();
    let _mode = if ctx.is_train { autograd::train_mode() } else { autograd::predict_mode() };
    let steps = l.run(inputs)?;
    for (k, (o, req)) in outputs.iter().zip(ctx.req).enumerate() {
        let value = if k < l.n_out_data {
            padded(o, &steps.iter().map(|s| s.outputs[k].clone()).collect::<Vec<_>>(), l.max_iterations)?
        } else {
            l.final_var(inputs, &steps, k - l.n_out_data)
        };
        oxnet_core::custom::assign(o, *req, &value)?;
    }
    Ok(())
}

/// The rows of one step output stacked and padded with zeros to `rows`
/// (the shape of `out`, the node's output).
fn padded(out: &NDArray, rows_given: &[NDArray], rows: usize) -> Result<NDArray> {
    let zeros = |n: usize| {
        let mut shape = out.shape().to_vec();
        shape[0] = n;
        NDArray::zeros(&shape, out.dtype(), out.device())
    };
    if rows_given.is_empty() {
        return zeros(rows);
    }
    let stacked = stack(rows_given)?;
    if stacked.shape()[1..] != out.shape()[1..] {
        return Err(Error::Shape(format!(
            "`{WHILE_LOOP}`: a step output has shape {:?}, but shape inference gave {:?}",
            &stacked.shape()[1..],
            &out.shape()[1..]
        )));
    }
    if rows_given.len() == rows {
        return Ok(stacked);
    }
    let pad = zeros(rows - rows_given.len())?;
    invoke1("Concat", &[&stacked, &pad], &[("num_args", 2i64.into()), ("dim", 0i64.into())])
}

/// Runs the loop again and goes back through the steps with `func`'s
/// gradient graph: the loop variables' gradients carried from step to step,
/// the other inputs' summed. `cond` gets no gradient (as in MXNet).
fn gradient(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let l = prepared(g.attrs)?;
    let steps = {
        let _quiet = autograd::pause();
        l.run(g.inputs)?
    };
    let mut d_vars: Vec<NDArray> = g.out_grads[l.n_out_data..].to_vec();
    let mut result: Vec<Option<NDArray>> = vec![None; l.n_inputs];
    for (t, step) in steps.iter().enumerate().rev() {
        let mut heads = Vec::with_capacity(step.outputs.len());
        for k in 0..l.n_out_data {
            heads.push(element(&g.out_grads[k], t)?);
        }
        heads.extend(d_vars.iter().cloned());
        let grads = body_gradient(&l.func, g, &step.inputs, &step.outputs, &heads)?;
        let grad_of = |p: usize| -> Result<NDArray> {
            match &grads[p] {
                Some(gr) => Ok(gr.clone()),
                None => zeros_like(&step.inputs[p]),
            }
        };
        d_vars = l.var_locs.iter().map(|&p| grad_of(p)).collect::<Result<_>>()?;
        for (p, gr) in grads.iter().enumerate() {
            if let (false, Some(gr)) = (l.var_locs.contains(&p), gr) {
                accumulate(&mut result[l.func_locs[p]], gr.clone())?;
            }
        }
    }
    for (&v, d) in l.var_locs.iter().zip(d_vars) {
        accumulate(&mut result[l.func_locs[v]], d)?;
    }
    Ok(only_needed(result, g.needs_grad))
}

/// Shapes: `func` inferred from the node's inputs; a step output gets
/// `max_iterations` rows; a loop variable's output and input share a shape.
fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
    partial: bool,
) -> Result<()> {
    let l = prepared(attrs)?;
    for _ in 0..2 {
        // a loop variable's shape, known on one side, holds on the other
        for (k, &v) in l.var_locs.iter().enumerate() {
            let (i, o) = (l.func_locs[v], l.n_out_data + k);
            let conflict = |a: &Shape, b: &Shape| {
                Error::Shape(format!(
                    "`{WHILE_LOOP}`: loop variable {k} has shape {:?} and func makes it {:?}; loop variables keep their shapes",
                    a.as_slice(),
                    b.as_slice()
                ))
            };
            join_into(&mut outs[o], ins[i].clone(), partial, conflict)?;
            join_into(&mut ins[i], outs[o].clone(), partial, conflict)?;
        }
        let given: Vec<Option<Shape>> = l.func_locs.iter().map(|&p| ins[p].clone()).collect();
        let (func_ins, func_outs) = body_shapes(&l.func, &given, partial)?;
        for (k, s) in func_outs.into_iter().enumerate() {
            let found = s.map(|s| {
                if k < l.n_out_data {
                    std::iter::once(l.max_iterations).chain(s.iter().copied()).collect()
                } else {
                    s
                }
            });
            join_into(&mut outs[k], found, partial, |a, b| {
                let (a, b) = (a.as_slice(), b.as_slice());
                Error::Shape(if k < l.n_out_data {
                    format!("`{WHILE_LOOP}`: step output {k} has shape {a:?} and func makes it {b:?}")
                } else {
                    format!(
                        "`{WHILE_LOOP}`: loop variable {} has shape {a:?} and func makes it {b:?}; loop variables keep their shapes",
                        k - l.n_out_data
                    )
                })
            })?;
        }
        merge_into(WHILE_LOOP, "shape", ins, &l.func_locs, func_ins, partial)?;
        let given: Vec<Option<Shape>> = l.cond_locs.iter().map(|&p| ins[p].clone()).collect();
        let (cond_ins, _) = body_shapes(&l.cond, &given, partial)?;
        merge_into(WHILE_LOOP, "shape", ins, &l.cond_locs, cond_ins, partial)?;
    }
    Ok(())
}

fn infer_type(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let l = prepared(attrs)?;
    for (k, &v) in l.var_locs.iter().enumerate() {
        let (i, o) = (l.func_locs[v], l.n_out_data + k);
        if ins[i].is_none() {
            ins[i] = outs[o];
        }
    }
    let given: Vec<Option<DType>> = l.func_locs.iter().map(|&p| ins[p]).collect();
    let (func_ins, func_outs) = body_types(&l.func, &given)?;
    for (slot, t) in outs.iter_mut().zip(func_outs) {
        if t.is_some() {
            *slot = t;
        }
    }
    merge_into(WHILE_LOOP, "type", ins, &l.func_locs, func_ins, false)?;
    let given: Vec<Option<DType>> = l.cond_locs.iter().map(|&p| ins[p]).collect();
    let (cond_ins, _) = body_types(&l.cond, &given)?;
    merge_into(WHILE_LOOP, "type", ins, &l.cond_locs, cond_ins, false)?;
    Ok(())
}

/// The `_while_loop` operator.
pub fn while_loop_op() -> OpDef {
    let locs = |name: &str, doc: &str| AttrSpec::optional(name, AttrKind::Ints, Vec::<i64>::new(), doc);
    let op = OpDef::new(WHILE_LOOP)
        .doc("A loop running the subgraph `func_sym_json` while the subgraph `cond_sym_json` gives a nonzero value, at most `max_iterations` times (MXNet's while_loop).")
        .attr(AttrSpec::optional(SUBGRAPHS[0], AttrKind::Str, "", "the condition as NNVM JSON"))
        .attr(AttrSpec::optional(SUBGRAPHS[1], AttrKind::Str, "", "the loop body as NNVM JSON"))
        .attr(AttrSpec::required("num_args", AttrKind::Int, "the node's inputs and its two subgraphs (MXNet counts them)"))
        .attr(AttrSpec::required("num_outputs", AttrKind::Int, "the node's outputs"))
        .attr(AttrSpec::required("num_out_data", AttrKind::Int, "step outputs (the rest are loop variables)"))
        .attr(AttrSpec::required("max_iterations", AttrKind::Int, "the most steps the loop runs"))
        .attr(locs("cond_input_locs", "the node input feeding each input of cond"))
        .attr(locs("func_input_locs", "the node input feeding each input of func"))
        .attr(locs("func_var_locs", "the inputs of func that are loop variables"))
        .prepare(|attrs| Ok(Arc::new(parse(attrs)?) as Arc<dyn std::any::Any + Send + Sync>))
        .arguments_fn(|a| {
            let l = prepared(a)?;
            input_names(l.n_inputs, &[(&l.func, &l.func_locs), (&l.cond, &l.cond_locs)])
        })
        .outputs_fn(|a| {
            let l = prepared(a)?;
            Ok((0..l.n_out_data + l.var_locs.len()).map(|k| format!("output{k}")).collect())
        })
        .arity_fn(|a| {
            let l = prepared(a)?;
            Ok([l.n_inputs, 0, l.n_out_data + l.var_locs.len()])
        })
        .infer_shape(|a, i, o| infer_shape(a, i, o, false))
        .infer_shape_partial(|a, i, o| infer_shape(a, i, o, true))
        .infer_type(infer_type)
        .forward(forward);
    with_backward_kernel(op, gradient, |a| prepared(a).map(|l| (l.n_inputs, l.n_out_data + l.var_locs.len())))
}
