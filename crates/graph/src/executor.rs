//! [`Executor`]: a symbol bound to arrays (MXNet's `bind`/`simple_bind`).
//!
//! Binding infers every entry's shape and dtype once and allocates every
//! operator output once; `forward` then runs the nodes in topological order
//! through the same operator kernels eager calls use, writing into those
//! buffers. For training, `forward(is_train=true)` records the run on
//! oxnet's autograd tape with the bound arguments as variables (their
//! gradient buffers and requests `write`/`add`/`null`), and `backward` walks
//! it: each operator differentiates by its own gradient, exactly as
//! imperative code does.

use crate::indexed::IndexedGraph;
use crate::infer::{infer_dtypes, infer_shapes, is_complete};
use crate::node::in_node;
use crate::symbol::{shape_string, Symbol};
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::{DType, Device, Error, NDArray, Req, Result};
use std::collections::HashMap;

/// A callback shown each operator output after it is computed:
/// `(output name, array)`.
pub type MonitorFn = Box<dyn FnMut(&str, &NDArray) + Send>;

/// A symbol bound to argument, gradient and auxiliary arrays.
pub struct Executor {
    symbol: Symbol,
    graph: IndexedGraph,
    device: Device,
    arg_names: Vec<String>,
    aux_names: Vec<String>,
    args: Vec<NDArray>,
    grads: Vec<Option<NDArray>>,
    reqs: Vec<Req>,
    aux: Vec<NDArray>,
    /// Where each variable node's value comes from: (is aux, position).
    var_slot: HashMap<usize, (bool, usize)>,
    /// One buffer per operator output (allocated at bind).
    buffers: Vec<Option<NDArray>>,
    outputs: Vec<NDArray>,
    monitor: Option<MonitorFn>,
    recorded: bool,
}

/// Gradient requests for [`simple_bind`]: one for all arguments or one per argument name.
#[derive(Debug, Clone)]
pub enum GradReqs {
    /// The same request for every argument.
    All(Req),
    /// A request per argument name; arguments not named get `null`.
    ByName(HashMap<String, Req>),
}

impl GradReqs {
    fn get(&self, name: &str) -> Req {
        match self {
            GradReqs::All(r) => *r,
            GradReqs::ByName(m) => m.get(name).copied().unwrap_or(Req::Null),
        }
    }
}

/// Binds `sym` with freshly allocated (zeroed) arrays whose shapes are
/// inferred from `shapes` (by variable name); dtypes from `types`, float32
/// for arguments that declare none (MXNet's `simple_bind`).
pub fn simple_bind(
    sym: &Symbol,
    device: Device,
    grad_req: &GradReqs,
    types: &HashMap<String, DType>,
    shapes: &HashMap<String, Vec<usize>>,
) -> Result<Executor> {
    let g = sym.indexed()?;
    let entry_shapes = infer_shapes(&g, shapes)?;
    let mut given_types = types.clone();
    for n in g.variables() {
        let node = &g.nodes[n];
        if node.attr("__dtype__").is_none() {
            given_types.entry(node.name.clone()).or_insert(DType::F32);
        }
    }
    let entry_types = infer_dtypes(&g, &given_types)?;
    let unknown: Vec<String> = g
        .variables()
        .into_iter()
        .filter(|&n| !is_complete(&entry_shapes[g.entry(n, 0)]))
        .map(|n| g.nodes[n].name.clone())
        .collect();
    if !unknown.is_empty() {
        return Err(Error::Shape(format!(
            "simple_bind: cannot infer the shapes of {}; give them as keyword shapes",
            unknown.join(", ")
        )));
    }
    let alloc = |n: usize| -> Result<NDArray> {
        let e = g.entry(n, 0);
        let shape = entry_shapes[e].clone().expect("complete");
        NDArray::zeros(&shape, entry_types[e].unwrap_or(DType::F32), device)
    };
    let mut args = Vec::new();
    let mut grads = Vec::new();
    let mut reqs = Vec::new();
    for n in g.arguments() {
        let a = alloc(n)?;
        let req = grad_req.get(&g.nodes[n].name);
        grads.push(if req == Req::Null { None } else { Some(NDArray::zeros_like(&a)?) });
        reqs.push(req);
        args.push(a);
    }
    let aux = g.aux_states().into_iter().map(alloc).collect::<Result<Vec<_>>>()?;
    Executor::new(sym, device, args, grads, reqs, aux)
}

impl Executor {
    /// Binds `sym` to arrays given in `list_arguments` and
    /// `list_auxiliary_states` order, with one gradient buffer (or none) and
    /// one request per argument (MXNet's `bind`).
    pub fn new(
        sym: &Symbol,
        device: Device,
        args: Vec<NDArray>,
        grads: Vec<Option<NDArray>>,
        reqs: Vec<Req>,
        aux: Vec<NDArray>,
    ) -> Result<Executor> {
        let graph = sym.indexed()?;
        let arg_ids = graph.arguments();
        let aux_ids = graph.aux_states();
        let arg_names: Vec<String> = arg_ids.iter().map(|&n| graph.nodes[n].name.clone()).collect();
        let aux_names: Vec<String> = aux_ids.iter().map(|&n| graph.nodes[n].name.clone()).collect();
        let count = |what: &str, got: usize, names: &[String]| -> Result<()> {
            if got != names.len() {
                return Err(Error::Invalid(format!(
                    "bind: {got} {what} given, the symbol has {} ({})",
                    names.len(),
                    names.join(", ")
                )));
            }
            Ok(())
        };
        count("argument arrays", args.len(), &arg_names)?;
        count("gradient entries", grads.len(), &arg_names)?;
        count("gradient requests", reqs.len(), &arg_names)?;
        count("auxiliary arrays", aux.len(), &aux_names)?;
        for (i, (r, g)) in reqs.iter().zip(&grads).enumerate() {
            if *r != Req::Null && g.is_none() {
                return Err(Error::Invalid(format!(
                    "bind: argument `{}` has grad_req {r} but no gradient array",
                    arg_names[i]
                )));
            }
            if let Some(g) = g {
                if g.shape() != args[i].shape() {
                    return Err(Error::Shape(format!(
                        "bind: the gradient of `{}` has shape {}, the argument {}",
                        arg_names[i],
                        shape_string(g.shape()),
                        shape_string(args[i].shape())
                    )));
                }
            }
        }
        let mut given_shapes = HashMap::new();
        let mut given_types = HashMap::new();
        for (name, a) in arg_names.iter().zip(&args).chain(aux_names.iter().zip(&aux)) {
            given_shapes.insert(name.clone(), a.shape().to_vec());
            given_types.insert(name.clone(), a.dtype());
        }
        let shapes = infer_shapes(&graph, &given_shapes).map_err(|e| bind_error(e))?;
        let types = infer_dtypes(&graph, &given_types).map_err(|e| bind_error(e))?;

        let mut var_slot = HashMap::new();
        for (i, &n) in arg_ids.iter().enumerate() {
            var_slot.insert(n, (false, i));
        }
        for (i, &n) in aux_ids.iter().enumerate() {
            var_slot.insert(n, (true, i));
        }
        let mut buffers: Vec<Option<NDArray>> = vec![None; graph.num_entries()];
        for (n, node) in graph.nodes.iter().enumerate() {
            let Some(call) = &node.op else { continue };
            if call.op.forward_dynamic.is_some() {
                continue; // allocates its own outputs at run time
            }
            for k in 0..graph.num_outputs(n) {
                let e = graph.entry(n, k);
                let (Some(s), Some(d)) = (&shapes[e], types[e]) else {
                    return Err(Error::Shape(format!(
                        "bind: node `{}` ({}): the shape or dtype of output {k} cannot be inferred",
                        node.name, call.op.name
                    )));
                };
                if !is_complete(&shapes[e]) {
                    return Err(Error::Shape(format!(
                        "bind: node `{}` ({}): output {k} has the incomplete shape {}",
                        node.name,
                        call.op.name,
                        shape_string(s)
                    )));
                }
                buffers[e] = Some(NDArray::zeros(s, d, device)?);
            }
        }
        let mut exe = Executor {
            symbol: sym.clone(),
            graph,
            device,
            arg_names,
            aux_names,
            args,
            grads,
            reqs,
            aux,
            var_slot,
            buffers,
            outputs: Vec::new(),
            monitor: None,
            recorded: false,
        };
        exe.outputs = exe.head_arrays(&exe.bound_values(false)?)?;
        Ok(exe)
    }

    /// The value of every variable node's entry (marked as autograd
    /// variables when `record`).
    fn bound_values(&self, record: bool) -> Result<HashMap<usize, NDArray>> {
        let mut values = HashMap::new();
        for (&n, &(is_aux, i)) in &self.var_slot {
            let v = if is_aux {
                self.aux[i].clone()
            } else if record && self.reqs[i] != Req::Null {
                let handle = self.args[i].detach();
                let grad = self.grads[i].as_ref().expect("checked at bind");
                autograd::mark_variables(&[&handle], &[grad], &[self.reqs[i]])?;
                handle
            } else {
                self.args[i].detach()
            };
            values.insert(self.graph.entry(n, 0), v);
        }
        Ok(values)
    }

    fn head_arrays(&self, values: &HashMap<usize, NDArray>) -> Result<Vec<NDArray>> {
        self.graph
            .heads
            .iter()
            .map(|&(n, k)| {
                let e = self.graph.entry(n, k);
                values.get(&e).cloned().or_else(|| self.buffers[e].clone()).ok_or_else(|| {
                    Error::Invalid(format!("output of node `{}` is not computed yet", self.graph.nodes[n].name))
                })
            })
            .collect()
    }

    /// Runs the graph. With `is_train` and some gradient request other than
    /// `null`, the run is recorded for [`Executor::backward`].
    pub fn forward(&mut self, is_train: bool) -> Result<&[NDArray]> {
        let record = is_train && self.reqs.iter().any(|r| *r != Req::Null);
        let _mode = if record { autograd::record_with(true) } else { autograd::pause() };
        let _train = if is_train { autograd::train_mode() } else { autograd::predict_mode() };
        let mut values = self.bound_values(record)?;
        for (n, node) in self.graph.nodes.iter().enumerate() {
            let Some(call) = &node.op else { continue };
            let inputs: Vec<NDArray> = self.graph.inputs[n]
                .iter()
                .map(|&(m, k)| {
                    let e = self.graph.entry(m, k);
                    values.get(&e).cloned().or_else(|| self.buffers[e].clone()).expect("inputs run first")
                })
                .collect();
            let refs: Vec<&NDArray> = inputs.iter().collect();
            let n_out = self.graph.num_outputs(n);
            let first = self.graph.entry(n, 0);
            let outs = if call.op.forward_dynamic.is_some() {
                oxnet_core::invoke_op(&call.op, &refs, &call.attrs)
            } else {
                let outs: Vec<NDArray> =
                    (0..n_out).map(|k| self.buffers[first + k].clone().expect("allocated at bind")).collect();
                let reqs = vec![Req::Write; n_out];
                oxnet_core::invoke_into(&call.op, &refs, &call.attrs, &outs, &reqs).map(|_| outs)
            }
            .map_err(|e| in_node(e, &node.name, &call.op.name))?;
            if let Some(monitor) = self.monitor.as_mut() {
                for (k, o) in outs.iter().enumerate().take(call.visible_outputs()?) {
                    monitor(&node.output_name(k)?, o);
                }
            }
            for (k, o) in outs.into_iter().enumerate() {
                values.insert(first + k, o);
            }
        }
        self.outputs = self.head_arrays(&values)?;
        self.recorded = record;
        Ok(&self.outputs)
    }

    /// Back-propagates from the outputs of the last `forward(is_train=true)`
    /// with `out_grads` (ones where a head has none) into the gradient
    /// buffers, honouring each argument's request.
    pub fn backward(&mut self, out_grads: &[Option<NDArray>]) -> Result<()> {
        if !self.recorded {
            return Err(Error::Autograd(
                "backward needs a forward(is_train=True) first (and an argument with grad_req other than null)".into(),
            ));
        }
        if !out_grads.is_empty() && out_grads.len() != self.outputs.len() {
            return Err(Error::Invalid(format!(
                "backward: {} output gradients given for {} outputs",
                out_grads.len(),
                self.outputs.len()
            )));
        }
        for (g, r) in self.grads.iter().zip(&self.reqs) {
            if let (Some(g), Req::Write | Req::Inplace) = (g, r) {
                g.fill(0.0)?;
            }
        }
        let mut heads = Vec::new();
        let mut head_grads = Vec::new();
        for (i, h) in self.outputs.iter().enumerate() {
            if !h.takes_part_in_autograd() {
                continue;
            }
            heads.push(h);
            head_grads.push(out_grads.get(i).and_then(|g| g.as_ref()));
        }
        if heads.is_empty() {
            return Ok(());
        }
        let opts = BackwardOptions { retain_graph: true, create_graph: false, train_mode: true };
        autograd::backward(&heads, &head_grads, opts)
    }

    /// Sets a callback that sees every operator output during `forward`.
    pub fn set_monitor_callback(&mut self, monitor: Option<MonitorFn>) {
        self.monitor = monitor;
    }

    /// The outputs of the last forward (the output buffers before any).
    pub fn outputs(&self) -> &[NDArray] {
        &self.outputs
    }

    /// The bound symbol.
    pub fn symbol(&self) -> &Symbol {
        &self.symbol
    }

    /// The device the executor runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Argument names, in the order of [`Executor::arg_arrays`].
    pub fn arg_names(&self) -> &[String] {
        &self.arg_names
    }

    /// Aux-state names, in the order of [`Executor::aux_arrays`].
    pub fn aux_names(&self) -> &[String] {
        &self.aux_names
    }

    /// The argument arrays.
    pub fn arg_arrays(&self) -> &[NDArray] {
        &self.args
    }

    /// The gradient arrays (`None` where the request is `null`).
    pub fn grad_arrays(&self) -> &[Option<NDArray>] {
        &self.grads
    }

    /// The gradient requests.
    pub fn grad_reqs(&self) -> &[Req] {
        &self.reqs
    }

    /// The aux-state arrays.
    pub fn aux_arrays(&self) -> &[NDArray] {
        &self.aux
    }

    /// Copies `arg_params` and `aux_params` (by name) into the bound arrays.
    /// Names the executor lacks are an error unless `allow_extra`.
    pub fn copy_params_from(
        &self,
        arg_params: &HashMap<String, NDArray>,
        aux_params: &HashMap<String, NDArray>,
        allow_extra: bool,
    ) -> Result<()> {
        for (params, names, arrays, what) in
            [(arg_params, &self.arg_names, &self.args, "argument"), (aux_params, &self.aux_names, &self.aux, "aux state")]
        {
            for (name, value) in params {
                match names.iter().position(|n| n == name) {
                    Some(i) => arrays[i].assign_from(value).map_err(|e| {
                        Error::Invalid(format!("copy_params_from: {what} `{name}`: {e}"))
                    })?,
                    None if allow_extra => {}
                    None => {
                        return Err(Error::Invalid(format!(
                            "copy_params_from: the executor has no {what} `{name}` (pass allow_extra_params=True to skip it)"
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    /// A new executor for new input shapes. Arrays whose shape does not
    /// change are shared with this one; the others are new (zeroed). An
    /// argument not named in `shapes` that must change shape is an error
    /// unless `partial_shaping`.
    pub fn reshape(&self, shapes: &HashMap<String, Vec<usize>>, partial_shaping: bool) -> Result<Executor> {
        let entry_shapes = infer_shapes(&self.graph, shapes)?;
        let arg_ids = self.graph.arguments();
        let aux_ids = self.graph.aux_states();
        let renew = |n: usize, old: &NDArray| -> Result<Option<NDArray>> {
            let name = &self.graph.nodes[n].name;
            let e = self.graph.entry(n, 0);
            let new = entry_shapes[e].clone().filter(|_| is_complete(&entry_shapes[e])).ok_or_else(|| {
                Error::Shape(format!("reshape: the new shape of `{name}` cannot be inferred"))
            })?;
            if new == old.shape() {
                return Ok(None);
            }
            if !partial_shaping && !shapes.contains_key(name) {
                return Err(Error::Shape(format!(
                    "reshape: `{name}` would change shape from {} to {}; pass partial_shaping=True to allow it",
                    shape_string(old.shape()),
                    shape_string(&new)
                )));
            }
            Ok(Some(NDArray::zeros(&new, old.dtype(), self.device)?))
        };
        let mut args = Vec::new();
        let mut grads = Vec::new();
        for (i, &n) in arg_ids.iter().enumerate() {
            match renew(n, &self.args[i])? {
                None => {
                    args.push(self.args[i].clone());
                    grads.push(self.grads[i].clone());
                }
                Some(a) => {
                    grads.push(match &self.grads[i] {
                        Some(_) => Some(NDArray::zeros_like(&a)?),
                        None => None,
                    });
                    args.push(a);
                }
            }
        }
        let aux = aux_ids
            .iter()
            .enumerate()
            .map(|(i, &n)| Ok(renew(n, &self.aux[i])?.unwrap_or_else(|| self.aux[i].clone())))
            .collect::<Result<Vec<_>>>()?;
        Executor::new(&self.symbol, self.device, args, grads, self.reqs.clone(), aux)
    }
}

fn bind_error(e: Error) -> Error {
    Error::Invalid(format!("bind: {e}"))
}
