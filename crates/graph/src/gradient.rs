//! The gradient pass: a backward graph built from each operator's own
//! gradient.
//!
//! A gradient *rule* (written with operators) is run on traced arrays
//! standing for the forward entries, so its operator calls become graph
//! nodes: the backward graph is made of ordinary operators and can itself
//! be differentiated. A backward *kernel* (custom operators, library
//! operators) becomes one `_backward_<op>` node reading the arrays the
//! operator declared it needs; it shares the forward node's state, which
//! [`GradGraph::shared_state`] records for the executor.

use crate::indexed::IndexedGraph;
use crate::node::{Entry, Node};
use crate::symbol::Symbol;
use crate::trace::{run_traced, Tracer};
use oxnet_core::op::{BackwardArgs, Gradient, OpDef};
use oxnet_core::{invoke1, DType, Device, Error, GradCtx, NDArray, Result, Shape};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

/// A backward graph.
pub struct GradGraph {
    /// Heads: the gradient of each requested variable, in order. Its
    /// variables are the forward graph's, the output gradients
    /// (`head_grads`) and the constants.
    pub symbol: Symbol,
    /// Variables for the gradients flowing into each forward head.
    pub head_grads: Vec<Entry>,
    /// Real arrays the gradient rules captured, as variables with their values.
    pub constants: Vec<(Entry, NDArray)>,
    /// `(backward node, forward node)` pairs whose operator state is shared.
    pub shared_state: Vec<(Arc<Node>, Arc<Node>)>,
}

/// Builds the graph of the gradients of `g`'s heads with respect to the
/// variable nodes `wrt`, given the shapes and dtypes of every entry of `g`.
pub fn gradient(
    g: &IndexedGraph,
    shapes: &[Vec<usize>],
    dtypes: &[DType],
    wrt: &[usize],
    device: Device,
) -> Result<GradGraph> {
    let tracer = Rc::new(RefCell::new(Tracer::new()));
    // a traced array for every forward entry
    let mut values: Vec<NDArray> = Vec::with_capacity(g.num_entries());
    for (n, node) in g.nodes.iter().enumerate() {
        for k in 0..g.num_outputs(n) {
            let e = g.entry(n, k);
            let a = NDArray::meta(&shapes[e], dtypes[e], device);
            tracer.borrow_mut().bind(&a, Entry { node: node.clone(), index: k });
            values.push(a);
        }
    }
    // which entries depend on a variable we differentiate for
    let wrt_set: HashSet<usize> = wrt.iter().copied().collect();
    let mut live = vec![false; g.num_entries()];
    for (n, node) in g.nodes.iter().enumerate() {
        let on = if node.is_variable() {
            wrt_set.contains(&n)
        } else {
            g.inputs[n].iter().any(|&(m, k)| live[g.entry(m, k)])
        };
        for k in 0..g.num_outputs(n) {
            live[g.entry(n, k)] = on;
        }
    }

    let mut head_grads = Vec::new();
    let mut grads: HashMap<usize, NDArray> = HashMap::new();
    for (i, &(n, k)) in g.heads.iter().enumerate() {
        let e = g.entry(n, k);
        let name = format!("_head_grad{i}");
        let mut attrs = BTreeMap::new();
        attrs.insert("__shape__".to_string(), crate::symbol::shape_string(&shapes[e]));
        attrs.insert("__dtype__".to_string(), (dtypes[e] as i32).to_string());
        let a = NDArray::meta(&shapes[e], dtypes[e], device);
        let var = Entry { node: Node::variable(&name, attrs), index: 0 };
        tracer.borrow_mut().bind(&a, var.clone());
        head_grads.push(var);
        accumulate(&tracer, &mut grads, e, a)?;
    }

    let mut shared_state = Vec::new();
    for n in (0..g.nodes.len()).rev() {
        let node = &g.nodes[n];
        let Some(call) = &node.op else { continue };
        let outs: Vec<usize> = (0..g.num_outputs(n)).map(|k| g.entry(n, k)).collect();
        if outs.iter().all(|e| !grads.contains_key(e)) {
            continue;
        }
        let ins: Vec<usize> = g.inputs[n].iter().map(|&(m, k)| g.entry(m, k)).collect();
        let needs: Vec<bool> = ins.iter().map(|&e| live[e]).collect();
        if !needs.iter().any(|x| *x) {
            continue;
        }
        let wrap = |e: Error| e.in_node(&node.name, &call.op.name);
        let in_grads: Vec<Option<NDArray>> = match &call.op.gradient {
            Gradient::None => {
                return Err(wrap(Error::Autograd("this operator is not differentiable".into())));
            }
            Gradient::Zero => vec![None; ins.len()],
            Gradient::Rule(rule) => {
                let inputs: Vec<NDArray> = ins.iter().map(|&e| values[e].clone()).collect();
                let outputs: Vec<NDArray> = outs.iter().map(|&e| values[e].clone()).collect();
                let rule = rule.clone();
                let gs = run_traced(&tracer, || {
                    let out_grads = outs
                        .iter()
                        .map(|&e| match grads.get(&e) {
                            Some(gr) => Ok(gr.clone()),
                            None => invoke1("zeros_like", &[&values[e]], &[]),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    let ctx = GradCtx {
                        attrs: &call.attrs,
                        inputs: &inputs,
                        outputs: &outputs,
                        out_grads: &out_grads,
                        needs_grad: &needs,
                        state: None,
                        is_train: true,
                        grad_into: None,
                    };
                    rule(&ctx)
                })
                .map_err(wrap)?;
                if gs.len() != ins.len() {
                    return Err(wrap(Error::Autograd(format!(
                        "the gradient rule returned {} entries for {} inputs",
                        gs.len(),
                        ins.len()
                    ))));
                }
                gs
            }
            Gradient::Kernel { deps, backward } => {
                let d = deps(&call.attrs);
                let mut inputs = Vec::new();
                for &i in &d.out_grads {
                    let e = outs[i];
                    let gr = match grads.get(&e) {
                        Some(gr) => gr.clone(),
                        None => {
                            run_traced(&tracer, || invoke1("zeros_like", &[&values[e]], &[])).map_err(wrap)?
                        }
                    };
                    inputs.push(tracer.borrow_mut().entry_of(&gr)?);
                }
                for &i in &d.inputs {
                    inputs.push(tracer.borrow_mut().entry_of(&values[ins[i]])?);
                }
                for &i in &d.outputs {
                    inputs.push(tracer.borrow_mut().entry_of(&values[outs[i]])?);
                }
                let in_meta: Vec<(Shape, DType)> =
                    ins.iter().map(|&e| (Shape::from_slice(&shapes[e]), dtypes[e])).collect();
                let op =
                    Arc::new(backward_op(&call.op, d.clone(), backward.clone(), outs.len(), in_meta.clone()));
                let results =
                    tracer.borrow_mut().add_node(&op, &call.attrs, inputs, &in_meta, device).map_err(wrap)?;
                let bnode = tracer.borrow_mut().entry_of(&results[0])?.node;
                shared_state.push((bnode, node.clone()));
                results.into_iter().zip(&needs).map(|(r, need)| need.then_some(r)).collect()
            }
        };
        for ((gr, &e), need) in in_grads.into_iter().zip(&ins).zip(&needs) {
            if let (Some(gr), true) = (gr, *need) {
                if gr.shape() != shapes[e].as_slice() {
                    return Err(wrap(Error::Shape(format!(
                        "the gradient of an input has shape {:?}, the input has {:?}",
                        gr.shape(),
                        shapes[e]
                    ))));
                }
                accumulate(&tracer, &mut grads, e, gr)?;
            }
        }
    }

    let mut heads = Vec::with_capacity(wrt.len());
    for &v in wrt {
        let e = g.entry(v, 0);
        let gr = match grads.get(&e) {
            Some(gr) => gr.clone(),
            None => run_traced(&tracer, || invoke1("zeros_like", &[&values[e]], &[]))?,
        };
        heads.push(tracer.borrow_mut().entry_of(&gr)?);
    }
    let constants = tracer.borrow().constant_entries();
    Ok(GradGraph { symbol: Symbol::from_entries(heads), head_grads, constants, shared_state })
}

/// Adds `gr` to the gradient of entry `e` (an `elemwise_add` node when there
/// is one already).
fn accumulate(
    tracer: &Rc<RefCell<Tracer>>,
    grads: &mut HashMap<usize, NDArray>,
    e: usize,
    gr: NDArray,
) -> Result<()> {
    let total = match grads.remove(&e) {
        Some(prev) => run_traced(tracer, || invoke1("elemwise_add", &[&prev, &gr], &[]))?,
        None => gr,
    };
    grads.insert(e, total);
    Ok(())
}

/// The `_backward_<op>` operator of a node whose gradient is a backward
/// kernel: inputs are the declared output gradients, inputs and outputs (in
/// that order), outputs one gradient per forward input. It runs with the
/// forward node's state.
fn backward_op(
    forward: &OpDef,
    deps: oxnet_core::BackwardDeps,
    kernel: oxnet_core::op::BackwardFn,
    n_out: usize,
    in_meta: Vec<(Shape, DType)>,
) -> OpDef {
    let n_in = in_meta.len();
    let n_args = deps.out_grads.len() + deps.inputs.len() + deps.outputs.len();
    let arg_names: Vec<String> = deps
        .out_grads
        .iter()
        .map(|i| format!("out_grad{i}"))
        .chain(deps.inputs.iter().map(|i| format!("in_data{i}")))
        .chain(deps.outputs.iter().map(|i| format!("out_data{i}")))
        .collect();
    let out_names: Vec<String> = (0..n_in).map(|i| format!("in_grad{i}")).collect();
    let shapes: Vec<Shape> = in_meta.iter().map(|(s, _)| s.clone()).collect();
    let types: Vec<DType> = in_meta.iter().map(|(_, d)| *d).collect();
    let mut def = OpDef::new(&format!("_backward_{}", forward.name))
        .doc("The backward kernel of an operator, as a graph node sharing the forward node's state.")
        .allow_extra_attrs()
        .arguments_fn(move |_| Ok(arg_names.clone()))
        .outputs_fn(move |_| Ok(out_names.clone()))
        .arity_fn(move |_| Ok([n_args, 0, n_in]))
        .infer_shape(move |_, _, outs| {
            for (o, s) in outs.iter_mut().zip(&shapes) {
                *o = Some(s.clone());
            }
            Ok(())
        })
        .infer_type(move |_, _, outs| {
            for (o, d) in outs.iter_mut().zip(&types) {
                *o = Some(*d);
            }
            Ok(())
        });
    let run = move |ctx: &oxnet_core::OpContext,
                    inputs: &[oxnet_core::NDArray],
                    outputs: &[oxnet_core::NDArray]| {
        let mut it = inputs.iter().cloned();
        let mut out_grads = vec![None; n_out];
        for &i in &deps.out_grads {
            out_grads[i] = it.next();
        }
        let mut fwd_in = vec![None; n_in];
        for &i in &deps.inputs {
            fwd_in[i] = it.next();
        }
        let mut fwd_out = vec![None; n_out];
        for &i in &deps.outputs {
            fwd_out[i] = it.next();
        }
        let args = BackwardArgs { out_grads: &out_grads, inputs: &fwd_in, outputs: &fwd_out };
        kernel(ctx, &args, outputs)
    };
    // a kernel that takes GPU arrays runs there too; otherwise GPU calls
    // run it on host copies (the dispatcher's fallback)
    def = if forward.backward_on_gpu {
        let run = Arc::new(run);
        let on_gpu = run.clone();
        def.forward(move |c, i, o| run(c, i, o)).forward_on(Device::Gpu(0), move |c, i, o| on_gpu(c, i, o))
    } else {
        def.forward(run)
    };
    // Parameters of the forward operator are kept as given.
    def.attrs = forward.attrs.clone();
    def.prepare = forward.prepare.clone();
    def
}
