//! Calling operators imperatively: validate, infer, allocate, run the
//! kernel, record for autograd.

use crate::attrs::{AttrValue, Attrs};
use crate::autograd;
use crate::op::{OpContext, OpDef, OpState, Req};
use crate::registry::{self, Op};
use crate::shape::Shape;
use crate::{DType, Device, Error, NDArray, Result};
use smallvec::SmallVec;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Calls operator `name` on `inputs` with keyword attributes; returns its outputs.
///
/// ```
/// use oxnet_core::{invoke, registry, AttrKind, AttrSpec, AttrValue, NDArray, OpDef};
/// let by = AttrSpec::optional("by", AttrKind::Float, 0.0, "what to add");
/// registry::register(OpDef::new("shift").attr(by).forward(|ctx, ins, outs| {
///     let by = ctx.attrs.float("by")? as f32;
///     let x = ins[0].as_slice::<f32>()?;
///     outs[0].as_mut_slice::<f32>()?.iter_mut().zip(x).for_each(|(y, x)| *y = x + by);
///     Ok(())
/// }));
/// let x = NDArray::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
/// let y = &invoke("shift", &[&x], &[("by", AttrValue::Float(0.5))]).unwrap()[0];
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.5, -1.5]);
/// ```
pub fn invoke(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)]) -> Result<Vec<NDArray>> {
    let op = registry::get(name)?;
    let attrs = op.parse_attrs(attrs)?;
    invoke_op(&op, inputs, &attrs)
}

/// Calls `name` and returns its single (first) output.
pub fn invoke1(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)]) -> Result<NDArray> {
    let mut outs = invoke(name, inputs, attrs)?;
    if outs.is_empty() {
        return Err(Error::Invalid(format!("operator `{name}` has no outputs")));
    }
    Ok(outs.swap_remove(0))
}

/// Calls an already looked-up operator with already parsed attributes (the
/// fast path: no name look-up, no attribute parsing).
pub fn invoke_op(op: &Op, inputs: &[&NDArray], attrs: &Attrs) -> Result<Vec<NDArray>> {
    run(op, inputs, attrs, None, None).map_err(|e| e.in_op(&op.name))
}

/// Like [`invoke_op`], with the operator instance's state given (shared
/// with another call, as a graph's forward and `_backward_` nodes share it).
pub fn invoke_op_with_state(
    op: &Op,
    inputs: &[&NDArray],
    attrs: &Attrs,
    state: Option<OpState>,
) -> Result<Vec<NDArray>> {
    run(op, inputs, attrs, None, state).map_err(|e| e.in_op(&op.name))
}

/// Calls an operator writing into caller-provided `outputs` under `req`
/// (MXNet's `out=`). Outputs may alias inputs; the result is as if the
/// inputs were read first.
pub fn invoke_into(
    op: &Op,
    inputs: &[&NDArray],
    attrs: &Attrs,
    outputs: &[NDArray],
    req: &[Req],
) -> Result<()> {
    run(op, inputs, attrs, Some((outputs, req)), None).map(|_| ()).map_err(|e| e.in_op(&op.name))
}

/// Like [`invoke_into`], with the operator instance's state given (graph
/// executors create a stateful operator's state once and share it between
/// its forward and backward nodes).
pub fn invoke_into_with_state(
    op: &Op,
    inputs: &[&NDArray],
    attrs: &Attrs,
    outputs: &[NDArray],
    req: &[Req],
    state: Option<OpState>,
) -> Result<()> {
    run(op, inputs, attrs, Some((outputs, req)), state).map(|_| ()).map_err(|e| e.in_op(&op.name))
}

/// True while calls are recorded by autograd or a trace: operator code must
/// then go through the dispatcher rather than call kernels directly.
#[inline]
pub fn calls_are_observed() -> bool {
    autograd::is_recording() || crate::trace::is_tracing()
}

/// Number of (argument, aux, output) entries of `op` under `attrs`.
pub fn arity(op: &OpDef, attrs: &Attrs) -> Result<(usize, usize, usize)> {
    let [a, x, o] = op.fixed_counts;
    if let [Some(a), Some(x), Some(o)] = op.fixed_counts {
        return Ok((a, x, o));
    }
    if let Some(counts) = &op.arity {
        let [a, x, o] = counts(attrs)?;
        return Ok((a, x, o));
    }
    let args = match a {
        Some(n) => n,
        None => (op.arguments)(attrs)?.len(),
    };
    let aux = match x {
        Some(n) => n,
        None => (op.aux_states)(attrs)?.len(),
    };
    let outs = match o {
        Some(n) => n,
        None => (op.outputs)(attrs)?.len(),
    };
    Ok((args, aux, outs))
}

/// Runs shape and dtype inference for inputs of known shapes and dtypes.
pub fn infer_outputs(
    op: &OpDef,
    attrs: &Attrs,
    shapes: &[Shape],
    dtypes: &[DType],
    n_out: usize,
) -> Result<(Vec<Shape>, Vec<DType>)> {
    let mut in_t: SmallVec<[Option<DType>; 4]> = dtypes.iter().map(|d| Some(*d)).collect();
    let mut out_t: SmallVec<[Option<DType>; 2]> = smallvec::smallvec![None; n_out];
    (op.infer_type)(attrs, &mut in_t, &mut out_t)?;
    for (i, (given, inferred)) in dtypes.iter().zip(&in_t).enumerate() {
        if Some(*given) != *inferred {
            return Err(Error::DType(format!(
                "input {i} has dtype {given}, but the operator expects {}",
                inferred.map(|d| d.name()).unwrap_or("?")
            )));
        }
    }
    let out_dtypes = out_t
        .iter()
        .enumerate()
        .map(|(i, d)| d.ok_or_else(|| Error::DType(format!("could not infer the dtype of output {i}"))))
        .collect::<Result<Vec<_>>>()?;

    let mut in_s: SmallVec<[Option<Shape>; 4]> = shapes.iter().map(|s| Some(s.clone())).collect();
    let mut out_s: SmallVec<[Option<Shape>; 2]> = smallvec::smallvec![None; n_out];
    (op.infer_shape)(attrs, &mut in_s, &mut out_s)?;
    for (i, (given, inferred)) in shapes.iter().zip(&in_s).enumerate() {
        if inferred.as_ref() != Some(given) {
            return Err(Error::Shape(format!(
                "input {i} has shape {:?}, but the operator expects {}",
                given.as_slice(),
                inferred.as_ref().map(|s| format!("{:?}", s.as_slice())).unwrap_or("?".into())
            )));
        }
    }
    let out_shapes = out_s
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| Error::Shape(format!("could not infer the shape of output {i}"))))
        .collect::<Result<Vec<_>>>()?;
    Ok((out_shapes, out_dtypes))
}

fn run(
    op: &Op,
    inputs: &[&NDArray],
    attrs: &Attrs,
    provided: Option<(&[NDArray], &[Req])>,
    state: Option<OpState>,
) -> Result<Vec<NDArray>> {
    let (n_args, n_aux, n_out) = arity(op, attrs)?;
    if inputs.len() != n_args + n_aux {
        let names = (op.arguments)(attrs)?;
        let aux = (op.aux_states)(attrs)?;
        return Err(Error::Invalid(format!(
            "expects {} inputs ({}{}), got {}",
            n_args + n_aux,
            names.join(", "),
            if aux.is_empty() { String::new() } else { format!("; aux: {}", aux.join(", ")) },
            inputs.len()
        )));
    }
    // Results go where the first input lives (MXNet's rule; host inputs
    // under different labels mix as in MXNet, devices of different kinds not).
    let device = match inputs.first() {
        Some(x) => x.device(),
        None => provided.and_then(|(o, _)| o.first().map(|a| a.device())).unwrap_or(Device::Cpu),
    }
    .compute_device();
    if let Some(other) = inputs.iter().find(|x| x.device().kernel_device() != device.kernel_device()) {
        return Err(Error::Device(format!(
            "inputs are on different devices: {device} and {}",
            other.device()
        )));
    }
    let tracing = crate::trace::is_tracing();
    if tracing {
        if provided.is_some() {
            return Err(Error::Invalid("writing into given output arrays (out=) cannot be traced".into()));
        }
        if op.forward_dynamic.is_some() {
            return Err(Error::Invalid(
                "its output shapes depend on the input values, so it cannot be traced into a graph".into(),
            ));
        }
    } else if let Some(x) = inputs.iter().find(|x| x.is_meta()) {
        x.check_has_values()?;
    }
    if let Some(dynamic) = &op.forward_dynamic {
        return run_dynamic(op, dynamic, inputs, attrs, provided, n_out, device);
    }

    let in_shapes: SmallVec<[Shape; 4]> = inputs.iter().map(|x| Shape::from_slice(x.shape())).collect();
    let in_dtypes: SmallVec<[DType; 4]> = inputs.iter().map(|x| x.dtype()).collect();
    let (out_shapes, out_dtypes) = infer_outputs(op, attrs, &in_shapes, &in_dtypes, n_out)?;
    if tracing {
        // inference only: the trace sink records the call, no kernel runs
        return crate::trace::record(op, attrs, inputs, &out_shapes, &out_dtypes, device);
    }
    let _profiled = crate::profiler::op_scope(&op.name);
    let (kernel, kernel_device) = crate::gpu::fallback::kernel_for(op, device.kernel_device())?;

    // Inputs the kernel reads: contiguous unless the kernel takes strides.
    let mutated = (op.mutate_inputs)(attrs);
    let mut kin: SmallVec<[NDArray; 4]> = SmallVec::with_capacity(inputs.len());
    for (i, x) in inputs.iter().enumerate() {
        if mutated.contains(&i) {
            x.check_writable()?;
            if !x.is_contiguous() {
                return Err(Error::Invalid(format!("mutated input {i} must be contiguous")));
            }
            kin.push((*x).clone());
        } else if op.accepts_strided || x.is_contiguous() {
            kin.push((*x).clone());
        } else {
            kin.push(x.copy()?);
        }
    }

    let state = match (&op.create_state, state) {
        (_, Some(s)) => Some(s),
        (Some(create), None) => Some(create(attrs, &in_shapes, &in_dtypes, kernel_device)?),
        (None, None) => None,
    };

    // Outputs: fresh buffers, or the caller's (through a temporary where the
    // caller's buffer is strided or aliases an input).
    let (outputs, reqs, copy_back): (Vec<NDArray>, SmallVec<[Req; 2]>, Vec<Option<NDArray>>) = match provided
    {
        None => {
            let outs = out_shapes
                .iter()
                .zip(&out_dtypes)
                .map(|(s, d)| NDArray::empty(s, *d, device))
                .collect::<Result<Vec<_>>>()?;
            (outs, smallvec::smallvec![Req::Write; n_out], vec![])
        }
        Some((outs, req)) => {
            if outs.len() != n_out || req.len() != n_out {
                return Err(Error::Invalid(format!(
                    "expects {n_out} output buffers and requests, got {} and {}",
                    outs.len(),
                    req.len()
                )));
            }
            let mut kout = Vec::with_capacity(n_out);
            let mut back = Vec::with_capacity(n_out);
            let mut reqs: SmallVec<[Req; 2]> = SmallVec::new();
            for (i, o) in outs.iter().enumerate() {
                if o.shape() != out_shapes[i].as_slice() || o.dtype() != out_dtypes[i] {
                    return Err(Error::Shape(format!(
                        "output {i} must have shape {:?} and dtype {}, the buffer has {:?} and {}",
                        out_shapes[i].as_slice(),
                        out_dtypes[i],
                        o.shape(),
                        o.dtype()
                    )));
                }
                if req[i] != Req::Null {
                    o.check_writable()?;
                }
                let aliased = req[i] != Req::Inplace && inputs.iter().any(|x| x.shares_storage(o));
                if aliased && req[i] == Req::Write && writes_in_place(op, inputs, i, o) {
                    kout.push(o.clone());
                    back.push(None);
                    reqs.push(Req::Inplace);
                } else if req[i] != Req::Null && (aliased || !o.is_contiguous()) {
                    let tmp = if req[i] == Req::Add {
                        o.copy()?
                    } else {
                        NDArray::empty(o.shape(), o.dtype(), device)?
                    };
                    kout.push(tmp);
                    back.push(Some(o.clone()));
                    reqs.push(if req[i] == Req::Add { Req::Add } else { Req::Write });
                } else {
                    kout.push(o.clone());
                    back.push(None);
                    reqs.push(req[i]);
                }
            }
            (kout, reqs, back)
        }
    };

    let ctx = OpContext {
        op_name: &op.name,
        attrs,
        req: &reqs,
        is_train: autograd::is_training(),
        device: device.kernel_device(),
        state: state.as_ref(),
    };
    match catch_unwind(AssertUnwindSafe(|| kernel(&ctx, &kin, &outputs))) {
        Ok(result) => result?,
        Err(payload) => return Err(Error::Panic(panic_message(payload.as_ref()))),
    }

    for (tmp, dst) in outputs.iter().zip(&copy_back) {
        if let Some(dst) = dst {
            dst.assign_from(tmp)?;
        }
    }
    let outputs: Vec<NDArray> = match provided {
        Some((outs, _)) => outs.to_vec(),
        None => outputs,
    };

    if autograd::is_recording() && inputs.iter().any(|x| x.has_ag_entry()) {
        autograd::record_node(op, attrs, inputs, &outputs, state)?;
    }
    Ok(outputs)
}

/// Runs an operator that allocates its own outputs.
fn run_dynamic(
    op: &Op,
    kernel: &crate::op::ForwardDynamicFn,
    inputs: &[&NDArray],
    attrs: &Attrs,
    provided: Option<(&[NDArray], &[Req])>,
    n_out: usize,
    device: Device,
) -> Result<Vec<NDArray>> {
    let _profiled = crate::profiler::op_scope(&op.name);
    let kin: SmallVec<[NDArray; 4]> = inputs.iter().map(|x| (*x).clone()).collect();
    let _read_only = crate::ndarray::protect_inputs(&kin, &[]);
    let reqs: SmallVec<[Req; 2]> = smallvec::smallvec![Req::Write; n_out];
    let ctx = OpContext {
        op_name: &op.name,
        attrs,
        req: &reqs,
        is_train: autograd::is_training(),
        device: device.kernel_device(),
        state: None,
    };
    let call = || {
        if device.is_host() {
            // kernels allocate on `cpu(0)`; results move to a labelled host device below
            kernel(&ctx, &kin)
        } else {
            crate::gpu::fallback::dynamic_on_host(&op.name, device, &kin, |host| {
                kernel(&OpContext { device: Device::Cpu, ..ctx }, host)
            })
        }
    };
    let outputs = match catch_unwind(AssertUnwindSafe(call)) {
        Ok(result) => result?,
        Err(payload) => return Err(Error::Panic(panic_message(payload.as_ref()))),
    };
    if outputs.len() != n_out {
        return Err(Error::Invalid(format!("returned {} outputs, declared {n_out}", outputs.len())));
    }
    // results must not alias the inputs nor carry another tape
    let outputs: Vec<NDArray> = outputs
        .into_iter()
        .map(|o| {
            if o.device() != device {
                o.to_device(device)
            } else if inputs.iter().any(|x| x.shares_storage(&o)) {
                o.copy()
            } else {
                Ok(o.detach())
            }
        })
        .collect::<Result<_>>()?;
    let outputs = match provided {
        None => outputs,
        Some((bufs, req)) => {
            if bufs.len() != n_out || req.len() != n_out {
                return Err(Error::Invalid(format!("expects {n_out} output buffers and requests")));
            }
            for ((b, r), o) in bufs.iter().zip(req).zip(&outputs) {
                if b.shape() != o.shape() {
                    return Err(Error::Shape(format!(
                        "output buffer has shape {:?}, the result {:?}",
                        b.shape(),
                        o.shape()
                    )));
                }
                crate::store::store(*r, b, o)?;
            }
            bufs.to_vec()
        }
    };
    if autograd::is_recording() && inputs.iter().any(|x| x.has_ag_entry()) {
        autograd::record_node(op, attrs, inputs, &outputs, None)?;
    }
    Ok(outputs)
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// True when output `i`, given as `out`, may be written over the inputs it
/// shares memory with: each such input is the very same view (offset,
/// shape, strides, dtype) and the operator declares that input-output pair
/// in place ([`OpDef::inplace`](crate::op::OpDef::inplace)). A write
/// request then runs as `inplace`, without a temporary and a copy back (an
/// optimizer update with `out=weight`, for one).
fn writes_in_place(op: &Op, inputs: &[&NDArray], i: usize, out: &NDArray) -> bool {
    out.is_contiguous()
        && inputs.iter().enumerate().all(|(j, x)| {
            !x.shares_storage(out)
                || (op.inplace.contains(&(j, i))
                    && x.offset() == out.offset()
                    && x.shape() == out.shape()
                    && x.strides() == out.strides()
                    && x.dtype() == out.dtype())
        })
}
