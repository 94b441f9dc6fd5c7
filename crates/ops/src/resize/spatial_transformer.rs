//! `SpatialTransformer`: the affine grid of `loc` (N, 6) over
//! `target_shape`, then bilinear sampling of data (N, C, H, W) at it, in one
//! operator (`GridGenerator` with `transform_type='affine'` followed by
//! `BilinearSampler`). Both inputs get gradients; the grid is recomputed
//! from `loc` in the backward pass rather than kept.

use super::bilinear_kernel::{self, Dims};
use super::bilinear_sampler::{check_cudnn_off, cudnn_off_spec};
use super::sampling_grid::{affine_grid, affine_grid_backward, target_hw};
use super::{dims4, infer_float_type, merge_out};
use crate::conv::geometry::fmt_tuple;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray,
    OpContext, OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "SpatialTransformer";

/// The output (height, width).
#[derive(Debug, Clone, Copy)]
struct Target([usize; 2]);

fn parse(attrs: &Attrs) -> Result<Target> {
    if let Some(t) = attrs.prepared::<Target>() {
        return Ok(*t);
    }
    // transform_type and sampler_type have one value each (checked by their kind)
    check_cudnn_off(OP, attrs)?;
    Ok(Target(target_hw(OP, attrs, "")?))
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Target([th, tw]) = parse(attrs)?;
    let (data, loc) = (ins[0].clone(), ins[1].clone());
    let mut out = [0, 0, th, tw];
    if let Some(d) = &data {
        let [n, c, _, _] = dims4(OP, "data", d)?;
        out[..2].copy_from_slice(&[n, c]);
    }
    if let Some(l) = &loc {
        let fits = l.len() == 2 && (l[1] == 6 || l[1] == 0);
        let same_batch = l.first().is_none_or(|&n| n == 0 || out[0] == 0 || n == out[0]);
        if !fits || !same_batch {
            return Err(Error::Shape(format!(
                "{OP}: loc must hold one affine matrix per image, shape (batch, 6), got loc of shape {} for \
                 data of shape {}",
                fmt_tuple(l),
                data.as_ref().map_or("unknown".into(), |d| fmt_tuple(d))
            )));
        }
        out[0] = out[0].max(l[0]);
    }
    // loc from the batch size
    let loc_shape = [out[0], 6];
    if out[0] > 0 {
        ins[1] = Some(Shape::from_slice(&loc_shape));
    }
    if data.is_none() && loc.is_none() {
        return Ok(());
    }
    merge_out(OP, &mut outs[0], &out, || {
        format!(
            "data of shape {} and target_shape ({th}, {tw})",
            data.as_ref().map_or("unknown".into(), |d| fmt_tuple(d))
        )
    })
}

/// The extents of the sampling, after checking `loc`'s shape.
fn dims(data: &NDArray, loc: &NDArray, target: [usize; 2]) -> Result<Dims> {
    let [n, ..] = dims4(OP, "data", data.shape())?;
    if loc.shape() != [n, 6] {
        return Err(Error::Shape(format!(
            "{OP}: loc must have shape ({n}, 6) for data of shape {}, got {}",
            fmt_tuple(data.shape()),
            fmt_tuple(loc.shape())
        )));
    }
    Dims::new(OP, data.shape(), &[n, 2, target[0], target[1]])
}

fn forward_typed<T: FloatElement>(
    target: [usize; 2],
    req: Req,
    inputs: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    let d = dims(&inputs[0], &inputs[1], target)?;
    let grid = affine_grid(inputs[1].as_slice::<T>()?, d.ho, d.wo);
    let y = bilinear_kernel::forward(inputs[0].as_slice::<T>()?, &grid, &d);
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(
    target: [usize; 2],
    req: &[Req],
    dy: &NDArray,
    x: &NDArray,
    loc: &NDArray,
    grads: &[NDArray],
) -> Result<()> {
    let d = dims(x, loc, target)?;
    let (dys, xs) = (dy.as_slice::<T>()?, x.as_slice::<T>()?);
    if dy.shape() != [d.n, d.c, d.ho, d.wo] {
        return Err(Error::Shape(format!(
            "{OP}: the output gradient has shape {}, the output {}",
            fmt_tuple(dy.shape()),
            fmt_tuple(&[d.n, d.c, d.ho, d.wo])
        )));
    }
    let grid = affine_grid(loc.as_slice::<T>()?, d.ho, d.wo);
    if req[0] != Req::Null {
        store_slice(req[0], grads[0].as_mut_slice::<T>()?, &bilinear_kernel::backward_data(dys, &grid, &d));
    }
    if req.get(1).is_some_and(|r| *r != Req::Null) {
        let dgrid = bilinear_kernel::backward_grid(dys, xs, &grid, &d);
        store_slice(req[1], grads[1].as_mut_slice::<T>()?, &affine_grid_backward(&dgrid, d.n, d.ho, d.wo));
    }
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let Target(t) = parse(ctx.attrs)?;
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(t, ctx.req[0], inputs, &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let Target(t) = parse(ctx.attrs)?;
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let loc = args.inputs[1].as_ref().ok_or_else(missing)?;
    oxnet_core::with_float_dtype!(dy.dtype(), T => backward_typed::<T>(t, ctx.req, &dy, x, loc, grads))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Spatial transformer: loc (N, 6) holds a 2 x 3 affine matrix A per image; the \
                 output (N, C, H', W') with (H', W') = target_shape reads data (N, C, H, W) \
                 bilinearly at A · [x, y, 1] for the normalized output coordinates x, y in \
                 [-1, 1] (-1 the first pixel, 1 the last), pixels off the data counting as zero. \
                 The same as GridGenerator(transform_type='affine') then BilinearSampler. \
                 Gradients flow to data and loc.",
            )
            .attr(AttrSpec::optional(
                "target_shape",
                AttrKind::Ints,
                AttrValue::Ints(vec![0, 0]),
                "Output (height, width); both must be positive.",
            ))
            .attr(AttrSpec::required(
                "transform_type",
                AttrKind::Choice(vec!["affine"]),
                "The transformation; only 'affine'.",
            ))
            .attr(AttrSpec::required(
                "sampler_type",
                AttrKind::Choice(vec!["bilinear"]),
                "The sampling; only 'bilinear'.",
            ))
            .attr(cudnn_off_spec())
            .arguments(&["data", "loc"])
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(|_, ins, outs| infer_float_type(OP, &["data", "loc"], ins, outs))
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] }, backward),
    );
}
