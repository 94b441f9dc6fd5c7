//! `_foreach`: a loop over sequences inside a graph (MXNet's `mx.sym.contrib.foreach`).
//!
//! The node holds its body as a subgraph (attribute `subgraph_sym_json`;
//! in MXNet's JSON the node's `subgraphs` field) whose outputs are the
//! step's outputs followed by the next states. As in MXNet, the node's
//! inputs are the sequences, then the initial states, then the body's other
//! inputs (free variables such as weights), and `in_data_locs`,
//! `in_state_locs` and `remain_locs` give the body input (in its
//! `list_inputs` order) each of them feeds. Step `t` runs the body on
//! element `t` of each sequence (axis 0); the outputs are the step outputs
//! stacked along a new axis 0, then the final states.
//!
//! The gradient runs the loop again for each step's inputs and goes back
//! through the steps with the body's own gradient graph, carrying the
//! states' gradients and summing the free variables'.

use super::{
    accumulate, body, body_gradient, body_shapes, body_types, count, element, join_into, merge_into,
    only_needed, positions, stack, zeros_like,
};
use crate::partition::{Subgraph, SUBGRAPH_ATTR};
use oxnet_core::op::{GradCtx, OpDef};
use oxnet_core::{autograd, AttrKind, AttrSpec, Attrs, Error, NDArray, Result, Shape};
use std::sync::Arc;

/// The operator's name.
pub const FOREACH: &str = "_foreach";

/// One list of arrays per step.
type StepArrays = Vec<Vec<NDArray>>;

/// The loop's layout, from its attributes.
struct Loop {
    body: Arc<Subgraph>,
    /// The body inputs fed by the sequences, the states and the other inputs.
    data_locs: Vec<usize>,
    state_locs: Vec<usize>,
    remain_locs: Vec<usize>,
    /// For each node input, the body input it feeds (the three lists in a row).
    pos: Vec<usize>,
    n_out_data: usize,
}

fn parse(attrs: &Attrs) -> Result<Loop> {
    let body = body(attrs, SUBGRAPH_ATTR)?;
    let (data_locs, state_locs, remain_locs) = (
        positions(attrs, "in_data_locs")?,
        positions(attrs, "in_state_locs")?,
        positions(attrs, "remain_locs")?,
    );
    let n_inputs = body.symbol.list_inputs()?.len();
    let n_outputs = body.symbol.num_outputs();
    let n_out_data = count(attrs, "num_out_data")?;
    let mut seen = vec![false; n_inputs];
    for &l in data_locs.iter().chain(&state_locs).chain(&remain_locs) {
        if l >= n_inputs || std::mem::replace(&mut seen[l], true) {
            return Err(Error::attr(
                "in_data_locs",
                format!(
                    "the positions {data_locs:?}, {state_locs:?}, {remain_locs:?} do not name each of the body's {n_inputs} inputs once"
                ),
            ));
        }
    }
    if seen.contains(&false) {
        return Err(Error::attr("remain_locs", format!("some of the body's {n_inputs} inputs are not fed")));
    }
    if data_locs.is_empty() || n_out_data + state_locs.len() != n_outputs {
        return Err(Error::attr(
            "num_out_data",
            format!(
                "a loop needs a sequence, and its body's {n_outputs} outputs must be {n_out_data} step outputs and {} states",
                state_locs.len()
            ),
        ));
    }
    let pos = data_locs.iter().chain(&state_locs).chain(&remain_locs).copied().collect();
    Ok(Loop { body, data_locs, state_locs, remain_locs, pos, n_out_data })
}

fn prepared(attrs: &Attrs) -> Result<&Loop> {
    attrs.prepared::<Loop>().ok_or_else(|| Error::Invalid("the loop's attributes were not prepared".into()))
}

impl Loop {
    fn n_states(&self) -> usize {
        self.state_locs.len()
    }

    fn n_data(&self) -> usize {
        self.data_locs.len()
    }

    /// The body's inputs (in its order) of step `t`, with `states`.
    fn step_inputs(&self, inputs: &[NDArray], t: usize, states: &[NDArray]) -> Result<Vec<NDArray>> {
        let mut body: Vec<Option<NDArray>> = vec![None; self.pos.len()];
        for (j, x) in inputs.iter().enumerate() {
            let value = if j < self.n_data() {
                element(x, t)?
            } else if j < self.n_data() + self.n_states() {
                states[j - self.n_data()].clone()
            } else {
                x.clone()
            };
            body[self.pos[j]] = Some(value);
        }
        Ok(body.into_iter().map(|b| b.expect("every body input is fed (checked in parse)")).collect())
    }

    /// Runs every step: each step's body inputs and outputs.
    fn run(&self, inputs: &[NDArray]) -> Result<(StepArrays, StepArrays)> {
        let steps = inputs[0].shape().first().copied().unwrap_or(0);
        for (i, x) in inputs[..self.n_data()].iter().enumerate() {
            if x.shape().first() != Some(&steps) {
                return Err(Error::Shape(format!(
                    "`_foreach`: sequence {i} has shape {:?}; every sequence needs {steps} steps on axis 0",
                    x.shape()
                )));
            }
        }
        if steps == 0 {
            return Err(Error::Shape("`_foreach`: the sequences have no steps".into()));
        }
        let mut states: Vec<NDArray> = inputs[self.n_data()..self.n_data() + self.n_states()].to_vec();
        let (mut ins, mut outs) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
        for t in 0..steps {
            let step = self.step_inputs(inputs, t, &states)?;
            let out = super::run(&self.body, &step)?;
            for (j, (new, old)) in out[self.n_out_data..].iter().zip(&states).enumerate() {
                if new.shape() != old.shape() {
                    return Err(Error::Shape(format!(
                        "`_foreach`: state {j} has shape {:?} before step {t} and {:?} after it; a loop's states keep their shapes",
                        old.shape(),
                        new.shape()
                    )));
                }
            }
            states = out[self.n_out_data..].to_vec();
            ins.push(step);
            outs.push(out);
        }
        Ok((ins, outs))
    }
}

fn forward(ctx: &oxnet_core::OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let l = prepared(ctx.attrs)?;
    let _quiet = autograd::pause();
    let _mode = if ctx.is_train { autograd::train_mode() } else { autograd::predict_mode() };
    let (_, outs) = l.run(inputs)?;
    let last = outs.last().expect("at least one step");
    for (k, (o, req)) in outputs.iter().zip(ctx.req).enumerate() {
        let value = if k < l.n_out_data {
            stack(&outs.iter().map(|s| s[k].clone()).collect::<Vec<_>>())?
        } else {
            last[k].clone()
        };
        oxnet_core::custom::assign(o, *req, &value)?;
    }
    Ok(())
}

fn gradient(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let l = prepared(g.attrs)?;
    let (ins, outs) = {
        let _quiet = autograd::pause();
        l.run(g.inputs)?
    };
    let steps = ins.len();
    let mut d_states: Vec<NDArray> = g.out_grads[l.n_out_data..].to_vec();
    let mut d_remain: Vec<Option<NDArray>> = vec![None; l.remain_locs.len()];
    let mut d_data: Vec<Vec<NDArray>> = vec![Vec::with_capacity(steps); l.data_locs.len()];
    for t in (0..steps).rev() {
        let mut heads = Vec::with_capacity(outs[t].len());
        for k in 0..l.n_out_data {
            heads.push(element(&g.out_grads[k], t)?);
        }
        heads.extend(d_states.iter().cloned());
        let grads = body_gradient(&l.body, g, &ins[t], &outs[t], &heads)?;
        let grad_of = |p: usize| -> Result<NDArray> {
            match &grads[p] {
                Some(gr) => Ok(gr.clone()),
                None => zeros_like(&ins[t][p]),
            }
        };
        for (d, &p) in d_data.iter_mut().zip(&l.data_locs) {
            d.push(grad_of(p)?);
        }
        d_states = l.state_locs.iter().map(|&p| grad_of(p)).collect::<Result<_>>()?;
        for (acc, &p) in d_remain.iter_mut().zip(&l.remain_locs) {
            accumulate(acc, grad_of(p)?)?;
        }
    }
    let mut result: Vec<Option<NDArray>> = Vec::with_capacity(g.inputs.len());
    for mut d in d_data {
        d.reverse();
        result.push(Some(stack(&d)?));
    }
    result.extend(d_states.into_iter().map(Some));
    result.extend(d_remain);
    Ok(only_needed(result, g.needs_grad))
}

/// Shapes: the body's inputs from the node's (a sequence gives its
/// element's shape), the body inferred, the outputs from its heads and the
/// node's inputs from the body's (a weight's shape found inside the loop).
fn infer_shape(
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
    partial: bool,
) -> Result<()> {
    let l = prepared(attrs)?;
    let steps = ins[..l.n_data()].iter().flatten().find_map(|s| s.first().copied());
    let with_steps =
        |s: &Shape| steps.map(|t| std::iter::once(t).chain(s.iter().copied()).collect::<Shape>());
    let mut given: Vec<Option<Shape>> = vec![None; l.pos.len()];
    for (j, s) in ins.iter().enumerate() {
        given[l.pos[j]] =
            s.as_ref().map(|s| if j < l.n_data() { Shape::from_slice(&s[1..]) } else { s.clone() });
    }
    let (body_ins, body_outs) = body_shapes(&l.body, &given, partial)?;
    for (k, s) in body_outs.into_iter().enumerate() {
        let found = s.and_then(|s| if k < l.n_out_data { with_steps(&s) } else { Some(s) });
        join_into(&mut outs[k], found, partial, |a, b| {
            Error::Shape(format!("`{FOREACH}`: output {k} has shape {a:?}, but the body makes it {b:?}"))
        })?;
    }
    // the node's inputs: sequences keep their length; the rest from the body
    let found: Vec<Option<Shape>> = (0..ins.len())
        .map(|j| {
            let b = body_ins[l.pos[j]].as_ref()?;
            if j < l.n_data() {
                with_steps(b)
            } else {
                Some(b.clone())
            }
        })
        .collect();
    let identity: Vec<usize> = (0..ins.len()).collect();
    merge_into(FOREACH, "shape", ins, &identity, found, partial)?;
    // a state's shape from its step output, and the other way round
    for j in 0..l.n_states() {
        let (p, o) = (l.n_data() + j, l.n_out_data + j);
        let conflict = |a: &Shape, b: &Shape| {
            Error::Shape(format!(
                "`{FOREACH}`: state {j} has shape {:?} and the body makes it {:?}; a loop's states keep their shapes",
                a.as_slice(),
                b.as_slice()
            ))
        };
        join_into(&mut ins[p], outs[o].clone(), partial, conflict)?;
        join_into(&mut outs[o], ins[p].clone(), partial, conflict)?;
    }
    Ok(())
}

fn infer_type(
    attrs: &Attrs,
    ins: &mut [Option<oxnet_core::DType>],
    outs: &mut [Option<oxnet_core::DType>],
) -> Result<()> {
    let l = prepared(attrs)?;
    let mut given = vec![None; l.pos.len()];
    for (j, t) in ins.iter().enumerate() {
        given[l.pos[j]] = *t;
    }
    let (body_ins, body_outs) = body_types(&l.body, &given)?;
    for (slot, t) in outs.iter_mut().zip(body_outs) {
        if t.is_some() {
            *slot = t;
        }
    }
    for (slot, &p) in ins.iter_mut().zip(&l.pos) {
        if body_ins[p].is_some() {
            *slot = body_ins[p];
        }
    }
    Ok(())
}

/// The `_foreach` operator.
pub fn foreach_op() -> OpDef {
    let locs = |name: &str, doc: &str| AttrSpec::optional(name, AttrKind::Ints, Vec::<i64>::new(), doc);
    OpDef::new(FOREACH)
        .doc("A loop over axis 0 of its sequences running the subgraph in `subgraph_sym_json` at each step (MXNet's foreach).")
        .attr(AttrSpec::optional(SUBGRAPH_ATTR, AttrKind::Str, "", "the loop body as NNVM JSON"))
        .attr(AttrSpec::required("num_args", AttrKind::Int, "the node's inputs and its subgraph (MXNet counts it)"))
        .attr(AttrSpec::required("num_outputs", AttrKind::Int, "the node's outputs"))
        .attr(AttrSpec::required("num_out_data", AttrKind::Int, "step outputs (the rest are states)"))
        .attr(locs("in_data_locs", "the body input of each sequence"))
        .attr(locs("in_state_locs", "the body input of each state"))
        .attr(locs("remain_locs", "the body input of each other node input"))
        .prepare(|attrs| Ok(Arc::new(parse(attrs)?) as Arc<dyn std::any::Any + Send + Sync>))
        .arguments_fn(|a| {
            let l = prepared(a)?;
            let names = l.body.symbol.list_inputs()?;
            Ok(l.pos.iter().map(|&p| names[p].clone()).collect())
        })
        .outputs_fn(|a| {
            let l = prepared(a)?;
            Ok((0..l.n_out_data + l.n_states()).map(|k| format!("output{k}")).collect())
        })
        .arity_fn(|a| {
            let l = prepared(a)?;
            Ok([l.pos.len(), 0, l.n_out_data + l.n_states()])
        })
        .infer_shape(|a, i, o| infer_shape(a, i, o, false))
        .infer_shape_partial(|a, i, o| infer_shape(a, i, o, true))
        .infer_type(infer_type)
        .forward(forward)
        .grad_rule(gradient)
}
