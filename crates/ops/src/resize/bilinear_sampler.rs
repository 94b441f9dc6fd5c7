//! `BilinearSampler`: reads data (N, C, H, W) at the normalized source
//! positions of a grid (N, 2, Ho, Wo), bilinearly, with zeros off the data
//! (the sampler of spatial transformer networks; see
//! [`super::bilinear_kernel`]). Both inputs get gradients.

use super::bilinear_kernel::{self, Dims};
use super::{dims4, infer_float_type, merge_out};
use crate::conv::geometry::fmt_tuple;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext,
    OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "BilinearSampler";

/// Checks `cudnn_off` (True, False or None; it has no effect here) for `op`.
pub(super) fn check_cudnn_off(op: &str, attrs: &Attrs) -> Result<()> {
    match attrs.str("cudnn_off")? {
        "None" | "none" | "" | "True" | "true" | "1" | "False" | "false" | "0" => Ok(()),
        other => Err(Error::attr("cudnn_off", format!("{op}: expected True, False or None, got `{other}`"))),
    }
}

/// The `cudnn_off` attribute of the sampling operators.
pub(super) fn cudnn_off_spec() -> AttrSpec {
    AttrSpec::optional(
        "cudnn_off",
        AttrKind::Str,
        "None",
        "Whether to turn cuDNN off (True, False or None); accepted for compatibility, no effect.",
    )
}

fn infer_shape(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (data, grid) = (ins[0].clone(), ins[1].clone());
    let mut out = [0; 4];
    if let Some(d) = &data {
        let [n, c, _, _] = dims4(OP, "data", d)?;
        out[..2].copy_from_slice(&[n, c]);
    }
    if let Some(g) = &grid {
        let [n, two, ho, wo] = dims4(OP, "grid", g)?;
        if two != 2 && two != 0 {
            return Err(Error::Shape(format!(
                "{OP}: grid must have shape (batch, 2, height, width), channel 0 x and channel 1 y, \
                 got shape {}",
                fmt_tuple(g)
            )));
        }
        if n != 0 && out[0] != 0 && n != out[0] {
            return Err(Error::Shape(format!(
                "{OP}: grid and data must have one batch size, got grid of shape {} and data of shape {}",
                fmt_tuple(g),
                fmt_tuple(data.as_deref().unwrap_or(&[]))
            )));
        }
        out[0] = out[0].max(n);
        out[2..].copy_from_slice(&[ho, wo]);
        if two == 0 {
            let mut full = g.clone();
            full[1] = 2;
            ins[1] = Some(full);
        }
    }
    if data.is_none() && grid.is_none() {
        return Ok(());
    }
    let show = |s: &Option<Shape>| s.as_ref().map_or("unknown".to_string(), |s| fmt_tuple(s));
    merge_out(OP, &mut outs[0], &out, || {
        format!("data of shape {} and grid of shape {}", show(&data), show(&grid))
    })
}

fn forward_typed<T: FloatElement>(req: Req, inputs: &[NDArray], out: &NDArray) -> Result<()> {
    let d = Dims::new(OP, inputs[0].shape(), inputs[1].shape())?;
    let y = bilinear_kernel::forward(inputs[0].as_slice::<T>()?, inputs[1].as_slice::<T>()?, &d);
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(
    req: &[Req],
    dy: &NDArray,
    x: &NDArray,
    grid: &NDArray,
    grads: &[NDArray],
) -> Result<()> {
    let d = Dims::new(OP, x.shape(), grid.shape())?;
    let (dys, xs, gs) = (dy.as_slice::<T>()?, x.as_slice::<T>()?, grid.as_slice::<T>()?);
    if dys.len() != d.n * d.c * d.ho * d.wo {
        return Err(Error::Shape(format!(
            "{OP}: the output gradient of shape {} does not fit data of shape {} and grid of shape {}",
            fmt_tuple(dy.shape()),
            fmt_tuple(x.shape()),
            fmt_tuple(grid.shape())
        )));
    }
    if req[0] != Req::Null {
        store_slice(req[0], grads[0].as_mut_slice::<T>()?, &bilinear_kernel::backward_data(dys, gs, &d));
    }
    if req.get(1).is_some_and(|r| *r != Req::Null) {
        store_slice(req[1], grads[1].as_mut_slice::<T>()?, &bilinear_kernel::backward_grid(dys, xs, gs, &d));
    }
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(ctx.req[0], inputs, &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let grid = args.inputs[1].as_ref().ok_or_else(missing)?;
    oxnet_core::with_float_dtype!(dy.dtype(), T => backward_typed::<T>(ctx.req, &dy, x, grid, grads))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Bilinear sampling (spatial transformer networks): data (N, C, H, W) read at the \
                 source positions of grid (N, 2, Ho, Wo) gives (N, C, Ho, Wo). Grid channel 0 is \
                 x, channel 1 is y, both normalized: -1 is the first pixel of an axis, 1 the last \
                 (GridGenerator makes such grids). Each output is the bilinear interpolation of \
                 the four pixels around its position, pixels off the data counting as zero. \
                 Gradients flow to the data and to the grid.",
            )
            .attr(cudnn_off_spec())
            .arguments(&["data", "grid"])
            .prepare(|attrs| {
                check_cudnn_off(OP, attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(|_, ins, outs| infer_float_type(OP, &["data", "grid"], ins, outs))
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] }, backward),
    );
}
