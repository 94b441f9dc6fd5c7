//! Operators without a GPU kernel run on the host: their GPU inputs are
//! copied to host memory, the CPU kernel runs, and the results (and any
//! input the operator updates, such as BatchNorm's moving statistics) are
//! copied back. Correct for every operator, slow for large arrays: each
//! operator says once that it falls back (`OXNET_GPU_FALLBACK=0` makes it
//! an error instead), so the kernels worth writing show themselves.

use crate::op::{BackwardArgs, BackwardFn, ForwardFn, OpContext, OpDef, Req};
use crate::{Device, Error, NDArray, Result};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Whether operators without a GPU kernel may run on the host
/// (`OXNET_GPU_FALLBACK=0` turns it off).
pub fn enabled() -> bool {
    std::env::var("OXNET_GPU_FALLBACK").map_or(true, |v| v != "0")
}

/// The operators that ran on the host for lack of a GPU kernel, so far.
pub fn fallen_back() -> Vec<String> {
    let mut v: Vec<String> =
        WARNED.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten().cloned().collect();
    v.sort();
    v
}

fn note(op: &str) {
    let mut guard = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if guard.get_or_insert_with(HashSet::new).insert(op.to_string())
        && std::env::var_os("OXNET_GPU_QUIET").is_none()
    {
        eprintln!("oxnet: operator `{op}` has no GPU kernel yet; it runs on the CPU with copies to and from the GPU");
    }
}

/// The forward kernel of `op` for `device`: its own, or, for a GPU without
/// one, the host fallback around its CPU kernel. The second value is the
/// device the kernel's state (if any) belongs to.
pub(crate) fn kernel_for(op: &OpDef, device: Device) -> Result<(ForwardFn, Device)> {
    match op.kernel_for(device) {
        Ok(k) => Ok((k.clone(), device)),
        Err(e) if !device.is_host() && enabled() => {
            let cpu = op.kernel_for(Device::Cpu).map_err(|_| e)?.clone();
            Ok((host_kernel(op, cpu), Device::Cpu))
        }
        Err(e) => Err(e),
    }
}

/// Runs `ctx`'s operator's CPU kernel on host copies of device arrays: for
/// a GPU kernel that handles only some cases (the rest go through here).
pub fn host_call(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let op = crate::registry::get(ctx.op_name)?;
    let cpu = op.kernel_for(Device::Cpu)?.clone();
    host_kernel(&op, cpu)(ctx, ins, outs)
}

/// Wraps CPU kernel `cpu` to take and give device arrays.
fn host_kernel(op: &OpDef, cpu: ForwardFn) -> ForwardFn {
    let mutate = op.mutate_inputs.clone();
    Arc::new(move |ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]| {
        note(ctx.op_name);
        let host_in = ins.iter().map(|x| x.to_device(Device::Cpu)).collect::<Result<Vec<_>>>()?;
        // on the host an in-place request is a plain write into a fresh buffer
        let host_req: Vec<Req> =
            ctx.req.iter().map(|r| if *r == Req::Inplace { Req::Write } else { *r }).collect();
        let host_out = outs
            .iter()
            .zip(&host_req)
            .map(|(o, r)| match r {
                Req::Add => o.to_device(Device::Cpu),
                _ => NDArray::empty(o.shape(), o.dtype(), Device::Cpu),
            })
            .collect::<Result<Vec<_>>>()?;
        let host_ctx = OpContext {
            op_name: ctx.op_name,
            attrs: ctx.attrs,
            req: &host_req,
            is_train: ctx.is_train,
            device: Device::Cpu,
            state: ctx.state,
        };
        cpu(&host_ctx, &host_in, &host_out)?;
        for ((o, h), r) in outs.iter().zip(&host_out).zip(&host_req) {
            if *r != Req::Null {
                o.assign_from(h)?;
            }
        }
        for i in mutate(ctx.attrs) {
            let (x, h) = ins.get(i).zip(host_in.get(i)).ok_or_else(|| {
                Error::Invalid(format!(
                    "`{}` declares that it updates input {i}, which it does not have",
                    ctx.op_name
                ))
            })?;
            x.assign_from(h)?;
        }
        Ok(())
    })
}

/// Calls backward kernel `backward` for `ctx.device`: directly on the
/// CPU or when `op` declares that its backward kernel takes GPU arrays
/// ([`OpDef::backward_runs_on_gpu`]), else on host copies of the GPU arrays,
/// whose gradients are copied back.
pub(crate) fn call_backward(
    op: &OpDef,
    backward: &BackwardFn,
    ctx: &OpContext,
    args: &BackwardArgs,
    in_grads: &[NDArray],
) -> Result<()> {
    if ctx.device.is_host() || op.backward_on_gpu {
        return backward(ctx, args, in_grads);
    }
    if !enabled() {
        return Err(Error::Device(format!(
            "`{}`'s backward kernel has no GPU version (OXNET_GPU_FALLBACK=0 forbids running it on the host)",
            ctx.op_name
        )));
    }
    note(ctx.op_name);
    let host = |xs: &[Option<NDArray>]| -> Result<Vec<Option<NDArray>>> {
        xs.iter().map(|x| x.as_ref().map(|x| x.to_device(Device::Cpu)).transpose()).collect()
    };
    let (out_grads, inputs, outputs) = (host(args.out_grads)?, host(args.inputs)?, host(args.outputs)?);
    let host_grads = in_grads
        .iter()
        .zip(ctx.req)
        .map(|(g, r)| match r {
            Req::Add => g.to_device(Device::Cpu),
            _ => NDArray::zeros(g.shape(), g.dtype(), Device::Cpu),
        })
        .collect::<Result<Vec<_>>>()?;
    let host_req: Vec<Req> =
        ctx.req.iter().map(|r| if *r == Req::Inplace { Req::Write } else { *r }).collect();
    let host_ctx = OpContext { req: &host_req, device: Device::Cpu, ..*ctx };
    let host_args = BackwardArgs { out_grads: &out_grads, inputs: &inputs, outputs: &outputs };
    backward(&host_ctx, &host_args, &host_grads)?;
    for ((g, h), r) in in_grads.iter().zip(&host_grads).zip(&host_req) {
        if *r != Req::Null {
            g.assign_from(h)?;
        }
    }
    Ok(())
}

/// Runs a data-dependent operator (one that allocates its outputs) on
/// host copies of GPU inputs and moves its results to `device`.
pub(crate) fn dynamic_on_host(
    op_name: &str,
    device: Device,
    inputs: &[NDArray],
    run: impl FnOnce(&[NDArray]) -> Result<Vec<NDArray>>,
) -> Result<Vec<NDArray>> {
    note(op_name);
    let host = inputs.iter().map(|x| x.to_device(Device::Cpu)).collect::<Result<Vec<_>>>()?;
    run(&host)?.iter().map(|o| o.to_device(device)).collect()
}
