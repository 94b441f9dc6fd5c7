//! Binding: [`simple_bind`], [`Executor::new`] and the work they share
//! (inference, the backward graph, the memory plan, the resolved steps),
//! [`Executor::reshape`] and [`Executor::copy_params_from`].

use super::Executor;
use crate::gradient::gradient;
use crate::infer::{infer_complete, infer_dtypes, infer_shapes, is_complete};
use crate::plan::plan_memory;
use crate::symbol::{shape_string, Symbol};
use oxnet_core::shape::numel;
use oxnet_core::{DType, Device, Error, NDArray, Req, Result};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
        Self::build(sym, device, args, grads, reqs, aux, true, &[])
    }

    /// An executor whose gradients are only read through
    /// [`backward_values`](Self::backward_values) (a cached graph's): no
    /// gradient arrays are bound, `reqs` only say which gradients to compute.
    pub(crate) fn without_gradient_arrays(
        sym: &Symbol,
        device: Device,
        args: Vec<NDArray>,
        reqs: Vec<Req>,
        aux: Vec<NDArray>,
    ) -> Result<Executor> {
        let grads = vec![None; args.len()];
        Self::build(sym, device, args, grads, reqs, aux, false, &[])
    }

    /// Builds an executor; its planned memory blocks reuse `shared_blocks`
    /// (an executor it is reshaped from) block by block where they hold
    /// enough bytes, as MXNet's shared memory pool does.
    #[allow(clippy::too_many_arguments)]
    fn build(
        sym: &Symbol,
        device: Device,
        args: Vec<NDArray>,
        grads: Vec<Option<NDArray>>,
        reqs: Vec<Req>,
        aux: Vec<NDArray>,
        grads_bound: bool,
        shared_blocks: &[NDArray],
    ) -> Result<Executor> {
        let original = sym;
        // bound executors run the graph passes MXNet's do (cached graphs keep theirs)
        let optimized = if grads_bound && crate::cse::enabled_by_env() {
            crate::cse::eliminate_common_expr(sym)?
        } else {
            sym.clone()
        };
        let sym = &optimized;
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
            if grads_bound && *r != Req::Null && g.is_none() {
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
        let fwd = sym.indexed()?;
        let (shapes, types) = infer_complete(&fwd, &given_shapes, &given_types).map_err(bind_error)?;

        // the backward graph of the arguments that want gradients
        let wrt: Vec<usize> =
            arg_ids.iter().zip(&reqs).filter(|(_, r)| **r != Req::Null).map(|(&n, _)| n).collect();
        let grad = if wrt.is_empty() { None } else { Some(gradient(&fwd, &shapes, &types, &wrt, device)?) };
        let full_symbol = match &grad {
            Some(gg) => Symbol::group(&[sym.clone(), gg.symbol.clone()]),
            None => sym.clone(),
        };
        // the gradient heads are visited last argument first: the steps then
        // compute the later layers' gradients as soon as they can, and a
        // data-parallel trainer starts summing them while the earlier
        // layers' still compute
        let n_out = sym.num_outputs();
        let visit: Vec<usize> = (0..n_out).chain((n_out..full_symbol.num_outputs()).rev()).collect();
        let graph = full_symbol.indexed_visiting(&visit)?;
        let id_of: HashMap<usize, usize> =
            graph.nodes.iter().enumerate().map(|(i, n)| (Arc::as_ptr(n) as usize, i)).collect();
        // (a head gradient or constant the backward graph does not read is not in it)
        let id = |n: &Arc<crate::node::Node>| id_of.get(&(Arc::as_ptr(n) as usize)).copied();

        // shapes of every entry of the full graph: the forward part's as
        // inferred, the backward part's from its operators
        let mut var_values: Vec<Option<NDArray>> = vec![None; graph.nodes.len()];
        let mut var_nodes = Vec::new();
        for (i, &n) in arg_ids.iter().enumerate() {
            if let Some(v) = id(&fwd.nodes[n]) {
                var_values[v] = Some(args[i].clone());
                var_nodes.push((v, (false, i)));
            }
        }
        for (i, &n) in aux_ids.iter().enumerate() {
            if let Some(v) = id(&fwd.nodes[n]) {
                var_values[v] = Some(aux[i].clone());
                var_nodes.push((v, (true, i)));
            }
        }
        let mut head_grad_buffers = Vec::new();
        let mut state_source = HashMap::new();
        if let Some(gg) = &grad {
            for (i, e) in gg.head_grads.iter().enumerate() {
                let (n, k) = fwd.heads[i];
                let fe = fwd.entry(n, k);
                // a head gradient that no backward step reads gets no buffer
                let buf = match id(&e.node) {
                    Some(v) => {
                        let buf = NDArray::zeros(&shapes[fe], types[fe], device)?;
                        var_values[v] = Some(buf.clone());
                        Some(buf)
                    }
                    None => None,
                };
                head_grad_buffers.push(buf);
            }
            for (e, value) in &gg.constants {
                if let Some(v) = id(&e.node) {
                    var_values[v] = Some(value.clone());
                }
            }
            for (b, f) in &gg.shared_state {
                if let (Some(b), Some(f)) = (id(b), id(f)) {
                    state_source.insert(b, f);
                }
            }
        }
        let mut full_shapes = HashMap::new();
        let mut full_types = HashMap::new();
        for (n, v) in var_values.iter().enumerate() {
            if let Some(v) = v {
                full_shapes.insert(graph.nodes[n].name.clone(), v.shape().to_vec());
                full_types.insert(graph.nodes[n].name.clone(), v.dtype());
            }
        }
        let (all_shapes, all_types) =
            infer_complete(&graph, &full_shapes, &full_types).map_err(bind_error)?;

        let n_forward = fwd.nodes.len();
        let ops: Vec<usize> = (0..graph.nodes.len()).filter(|&n| !graph.nodes[n].is_variable()).collect();
        let forward_steps: Vec<usize> = ops.iter().copied().filter(|&n| n < n_forward).collect();
        let backward_steps: Vec<usize> = ops.iter().copied().filter(|&n| n >= n_forward).collect();
        let n_heads = sym.num_outputs();
        let head_entries: Vec<usize> =
            graph.heads[..n_heads].iter().map(|&(n, k)| graph.entry(n, k)).collect();
        let mut grad_entries = vec![None; arg_ids.len()];
        let mut slot = n_heads;
        for (i, r) in reqs.iter().enumerate() {
            if *r != Req::Null {
                let (n, k) = graph.heads[slot];
                grad_entries[i] = Some(graph.entry(n, k));
                slot += 1;
            }
        }
        let keep: HashSet<usize> =
            head_entries.iter().chain(grad_entries.iter().flatten()).copied().collect();
        let entry_bytes: Vec<usize> =
            all_shapes.iter().zip(&all_types).map(|(s, d)| s.iter().product::<usize>() * d.size()).collect();
        let steps: Vec<usize> = forward_steps.iter().chain(&backward_steps).copied().collect();
        // in-place candidates: declared by the operator, same size and dtype,
        // the input an operator output (variables are the user's arrays)
        let inplace: Vec<Vec<(usize, usize)>> = steps
            .iter()
            .map(|&n| {
                let call = graph.nodes[n].op.as_ref().expect("operator node");
                call.op
                    .inplace
                    .iter()
                    .filter_map(|&(i, o)| {
                        // the pairs are declared for any count of inputs and
                        // outputs (multi-tensor updates): skip those past this node's
                        if o >= graph.num_outputs(n) {
                            return None;
                        }
                        let &(m, k) = graph.inputs[n].get(i)?;
                        let (ie, oe) = (graph.entry(m, k), graph.entry(n, o));
                        let same = all_shapes[ie] == all_shapes[oe] && all_types[ie] == all_types[oe];
                        // a backward step never consumes a forward value:
                        // backward may run again without a new forward
                        let same_phase = (m < n_forward) == (n < n_forward);
                        (same && same_phase && !graph.nodes[m].is_variable()).then_some((ie, oe))
                    })
                    .collect()
            })
            .collect();
        // bound `write` gradients that one backward step produces and no step
        // reads are written straight into the bound arrays: they take no
        // planned memory (so a gradient that is all zeros costs none, as in MXNet)
        let read: HashSet<usize> =
            steps.iter().flat_map(|&n| graph.inputs[n].iter().map(|&(m, k)| graph.entry(m, k))).collect();
        let mut external = HashMap::new();
        if grads_bound {
            for (i, e) in grad_entries.iter().enumerate() {
                let (Some(e), Some(dest)) = (*e, grads[i].as_ref()) else { continue };
                let node = graph.row_ptr.partition_point(|&p| p <= e) - 1;
                let others = || {
                    args.iter().chain(&aux).chain(
                        grads.iter().enumerate().filter(|(j, _)| *j != i).filter_map(|(_, g)| g.as_ref()),
                    )
                };
                let usable = matches!(reqs[i], Req::Write | Req::Inplace)
                    && node >= n_forward
                    && !graph.nodes[node].is_variable()
                    && !read.contains(&e)
                    && !head_entries.contains(&e)
                    && grad_entries.iter().filter(|g| **g == Some(e)).count() == 1
                    && dest.shape() == all_shapes[e].as_slice()
                    && dest.dtype() == all_types[e]
                    && dest.device() == device
                    && dest.is_contiguous()
                    && !others().any(|a| a.shares_storage(dest));
                if usable {
                    external.insert(e, dest.clone());
                }
            }
        }
        let external_entries: HashSet<usize> = external.keys().copied().collect();
        let plan = plan_memory(&graph, &steps, &entry_bytes, &keep, &inplace, &external_entries);
        let blocks = plan
            .block_bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| match shared_blocks.get(i) {
                Some(old) if old.size() >= b => Ok(old.clone()),
                _ => NDArray::zeros(&[b.max(1)], DType::U8, device),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut buffers: Vec<Option<NDArray>> = vec![None; graph.num_entries()];
        for (e, b) in plan.block_of.iter().enumerate() {
            if let Some(b) = b {
                buffers[e] = Some(blocks[*b].storage_view(&all_shapes[e], all_types[e])?);
            }
        }
        for (e, dest) in external {
            buffers[e] = Some(dest);
        }
        let states = vec![None; graph.nodes.len()];
        let mut exe = Executor {
            symbol: original.clone(),
            optimized: optimized.clone(),
            graph,
            forward_steps,
            backward_steps,
            device,
            arg_names,
            aux_names,
            args,
            grads,
            reqs,
            aux,
            var_values,
            var_nodes,
            buffers,
            states,
            state_source,
            head_entries,
            grad_entries,
            head_grad_buffers,
            plan,
            blocks,
            steps: Vec::new(),
            var_uses: Vec::new(),
            outputs: Vec::new(),
            monitor: None,
            forwarded: false,
            redirectable: Vec::new(),
            redirected: Vec::new(),
        };
        exe.outputs = exe.head_entries.iter().map(|&e| exe.value(e)).collect::<Result<_>>()?;
        exe.prepare_steps()?;
        exe.redirectable = (0..exe.args.len()).map(|i| exe.redirectable_slot(i)).collect();
        exe.redirected = vec![None; exe.args.len()];
        if grads_bound {
            // bound `write` gradients are written by the steps themselves
            let bound: Vec<Option<NDArray>> = exe.grads.clone();
            exe.redirect_gradients(&bound)?;
        }
        Ok(exe)
    }

    /// Copies `arg_params` and `aux_params` (by name) into the bound arrays.
    /// Names the executor lacks are an error unless `allow_extra`.
    pub fn copy_params_from(
        &self,
        arg_params: &HashMap<String, NDArray>,
        aux_params: &HashMap<String, NDArray>,
        allow_extra: bool,
    ) -> Result<()> {
        for (params, names, arrays, what) in [
            (arg_params, &self.arg_names, &self.args, "argument"),
            (aux_params, &self.aux_names, &self.aux, "aux state"),
        ] {
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

    /// A new executor for new input shapes (MXNet's `Executor.reshape`).
    ///
    /// Arrays whose shape stays are shared with this executor. An array
    /// that shrinks becomes a view of the start of the old one (writing
    /// either writes both); one that grows gets new memory, which needs
    /// `allow_up_sizing`. An argument not named in `shapes` may change
    /// shape only with `partial_shaping`. The new executor's working
    /// memory reuses this one's where it fits, so the two must not run at
    /// once.
    pub fn reshape(
        &self,
        shapes: &HashMap<String, Vec<usize>>,
        partial_shaping: bool,
        allow_up_sizing: bool,
    ) -> Result<Executor> {
        let entry_shapes = infer_shapes(&self.graph, shapes)?;
        let arg_ids = self.graph.arguments();
        let aux_ids = self.graph.aux_states();
        // the array of node `n` in the new shape: `old` itself, a view of
        // its start, or new memory
        let renew = |n: usize, old: &NDArray| -> Result<NDArray> {
            let name = &self.graph.nodes[n].name;
            let e = self.graph.entry(n, 0);
            let new = entry_shapes[e].clone().filter(|_| is_complete(&entry_shapes[e])).ok_or_else(|| {
                Error::Shape(format!("reshape: the new shape of `{name}` cannot be inferred"))
            })?;
            if new == old.shape() {
                return Ok(old.clone());
            }
            if !partial_shaping && !shapes.contains_key(name) {
                return Err(Error::Shape(format!(
                    "reshape: `{name}` would change shape from {} to {}; pass partial_shaping=True to allow it",
                    shape_string(old.shape()),
                    shape_string(&new)
                )));
            }
            if numel(&new) > old.size() {
                if !allow_up_sizing {
                    return Err(Error::Shape(format!(
                        "reshape: `{name}` would grow from {} to {}; making a big executor and then down-sizing \
                         it is more efficient than the reverse; pass allow_up_sizing=True to allocate new arrays",
                        shape_string(old.shape()),
                        shape_string(&new)
                    )));
                }
                return NDArray::zeros(&new, old.dtype(), self.device);
            }
            old.contiguous()?
                .reshape_to(&[old.size()])?
                .slice_axis(0, 0, Some(numel(&new) as i64))?
                .reshape_to(&new)
        };
        let mut args = Vec::new();
        let mut grads = Vec::new();
        for (i, &n) in arg_ids.iter().enumerate() {
            let arg = renew(n, &self.args[i])?;
            grads.push(match &self.grads[i] {
                Some(g) if arg.same_handle(&self.args[i]) => Some(g.clone()),
                Some(g) if arg.shares_storage(&self.args[i]) => Some(renew(n, g)?),
                Some(_) => Some(NDArray::zeros_like(&arg)?),
                None => None,
            });
            args.push(arg);
        }
        let aux =
            aux_ids.iter().enumerate().map(|(i, &n)| renew(n, &self.aux[i])).collect::<Result<Vec<_>>>()?;
        Self::build(&self.symbol, self.device, args, grads, self.reqs.clone(), aux, true, &self.blocks)
    }
}

fn bind_error(e: Error) -> Error {
    Error::Invalid(format!("bind: {e}"))
}
