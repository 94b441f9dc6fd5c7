//! `GridGenerator`: the sampling grid (N, 2, H, W) of normalized source
//! positions that `BilinearSampler` reads, from affine matrices
//! (`transform_type='affine'`, data (N, 6), H x W = `target_shape`) or from
//! an optical flow in pixels (`transform_type='warp'`, data (N, 2, H, W)).

use super::sampling_grid::{affine_grid, affine_grid_backward, target_hw};
use super::{cast, infer_float_type, merge_out};
use crate::conv::geometry::fmt_tuple;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray,
    OpContext, OpDef, Req, Result,
};
use std::sync::Arc;

const OP: &str = "GridGenerator";

/// The transformation, with what it needs from the attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transform {
    /// 2 x 3 matrices onto a grid of (height, width).
    Affine([usize; 2]),
    /// A flow field of the grid's own size (`target_shape` is ignored).
    Warp,
}

fn parse(attrs: &Attrs) -> Result<Transform> {
    if let Some(t) = attrs.prepared::<Transform>() {
        return Ok(*t);
    }
    match attrs.str("transform_type")? {
        "affine" => Ok(Transform::Affine(target_hw(OP, attrs, " for transform_type='affine'")?)),
        "warp" => Ok(Transform::Warp),
        other => Err(Error::attr(
            "transform_type",
            format!("{OP}: unknown transform_type `{other}` (affine, warp)"),
        )),
    }
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let t = parse(attrs)?;
    match (t, ins[0].clone()) {
        (Transform::Affine([h, w]), Some(d)) => {
            if d.len() != 2 || (d[1] != 6 && d[1] != 0) {
                return Err(Error::Shape(format!(
                    "{OP}: with transform_type='affine' data must be affine matrices of shape (batch, 6), \
                     got shape {}",
                    fmt_tuple(&d)
                )));
            }
            let mut full = d.clone();
            full[1] = 6;
            ins[0] = Some(full);
            merge_out(OP, &mut outs[0], &[d[0], 2, h, w], || format!("data of shape {}", fmt_tuple(&d)))
        }
        (Transform::Warp, Some(d)) => {
            if d.len() != 4 || (d[1] != 2 && d[1] != 0) {
                return Err(Error::Shape(format!(
                    "{OP}: with transform_type='warp' data must be a flow of shape (batch, 2, height, width), \
                     got shape {}",
                    fmt_tuple(&d)
                )));
            }
            let want = [d[0], 2, d[2], d[3]];
            ins[0] = Some(Shape::from_slice(&want));
            merge_out(OP, &mut outs[0], &want, || format!("data of shape {}", fmt_tuple(&d)))
        }
        // the data from a known output
        (_, None) => {
            let Some(o) = outs[0].clone() else { return Ok(()) };
            let at = |i: usize| o.get(i).copied().unwrap_or(0);
            let want = match t {
                Transform::Affine([h, w]) => [at(0), 2, h, w],
                Transform::Warp => [at(0), 2, at(2), at(3)],
            };
            merge_out(OP, &mut outs[0], &want, || {
                format!("transform_type='{}'", attrs.str("transform_type").unwrap_or(""))
            })?;
            let data = match t {
                Transform::Affine(_) => vec![want[0], 6],
                Transform::Warp => want.to_vec(),
            };
            if data.iter().all(|&e| e > 0) {
                ins[0] = Some(Shape::from_slice(&data));
            }
            Ok(())
        }
    }
}

/// The normalizing scale of a warp axis of `extent` pixels: pixel
/// positions over it, minus 1, are normalized coordinates (`None` for a
/// one-pixel axis, whose coordinate is 0).
fn warp_scale<C: num_traits::Float>(extent: usize) -> Option<C> {
    (extent > 1).then(|| (cast::<C>(extent as f64) - C::one()) / cast(2.0))
}

/// The warp grid (or its gradient, `backward`) of a flow of shape
/// (n, 2, h, w): `(flow + pixel) / scale - 1` per channel (x then y), and
/// `gradient / scale` backward.
fn warp<T: FloatElement>(v: &[T], h: usize, w: usize, backward: bool) -> Vec<T> {
    let plane = h * w;
    let mut out = vec![T::zero(); v.len()];
    if plane == 0 {
        return out;
    }
    let scales = [warp_scale::<T::Compute>(w), warp_scale::<T::Compute>(h)];
    for ((o, x), k) in out.chunks_exact_mut(plane).zip(v.chunks_exact(plane)).zip(0..) {
        let Some(s) = scales[k % 2] else { continue };
        for (p, (o, x)) in o.iter_mut().zip(x).enumerate() {
            let x = x.to_compute();
            *o = T::from_compute(if backward {
                x / s
            } else {
                let pixel = if k % 2 == 0 { p % w } else { p / w };
                (x + cast(pixel as f64)) / s - <T::Compute as num_traits::One>::one()
            });
        }
    }
    out
}

fn forward_typed<T: FloatElement>(t: Transform, req: Req, x: &NDArray, out: &NDArray) -> Result<()> {
    let xs = x.as_slice::<T>()?;
    let y = match t {
        Transform::Affine([h, w]) => {
            if x.shape().len() != 2 || x.shape()[1] != 6 {
                return Err(Error::Shape(format!(
                    "{OP}: with transform_type='affine' data must have shape (batch, 6), got {}",
                    fmt_tuple(x.shape())
                )));
            }
            affine_grid(xs, h, w)
        }
        Transform::Warp => {
            let [_, _, h, w] = super::dims4(OP, "data", x.shape())?;
            warp(xs, h, w, false)
        }
    };
    store_slice(req, out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(t: Transform, req: Req, dy: &NDArray, dx: &NDArray) -> Result<()> {
    let [n, _, h, w] = super::dims4(OP, "the output gradient", dy.shape())?;
    let ds = dy.as_slice::<T>()?;
    let g = match t {
        Transform::Affine(_) => affine_grid_backward(ds, n, h, w),
        Transform::Warp => warp(ds, h, w, true),
    };
    let dst = dx.as_mut_slice::<T>()?;
    if g.len() != dst.len() {
        return Err(Error::Shape(format!(
            "{OP}: the output gradient of shape {} does not fit data of shape {}",
            fmt_tuple(dy.shape()),
            fmt_tuple(dx.shape())
        )));
    }
    store_slice(req, dst, &g);
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let t = parse(ctx.attrs)?;
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(t, ctx.req[0], &inputs[0], &outputs[0]))
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let t = parse(ctx.attrs)?;
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    let dy = args.out_grads[0]
        .as_ref()
        .ok_or_else(|| Error::Autograd(format!("{OP}: the backward kernel lacks the output gradient")))?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    oxnet_core::with_float_dtype!(dy.dtype(), T => backward_typed::<T>(t, ctx.req[0], &dy, &grads[0]))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Generates a sampling grid for BilinearSampler: (N, 2, H, W) source positions in \
                 normalized coordinates (channel 0: x, channel 1: y; -1 is the first pixel of an \
                 axis and 1 the last). transform_type='affine': data (N, 6) holds a 2 x 3 matrix \
                 A per image, H x W is target_shape, and the grid at (i, j) is A · [x_j, y_i, 1] \
                 with x_j = -1 + 2j / (W - 1), y_i = -1 + 2i / (H - 1). transform_type='warp': \
                 data (N, 2, H, W) is an optical flow in pixels and the grid is \
                 (flow + pixel position) / ((extent - 1) / 2) - 1 per axis; target_shape is \
                 ignored. A one-pixel axis has the coordinate 0.",
            )
            .attr(AttrSpec::required(
                "transform_type",
                AttrKind::Choice(vec!["affine", "warp"]),
                "'affine': data is (batch, 6) affine matrices; 'warp': data is a (batch, 2, h, w) \
                 optical flow.",
            ))
            .attr(AttrSpec::optional(
                "target_shape",
                AttrKind::Ints,
                AttrValue::Ints(vec![0, 0]),
                "Output (height, width); required by 'affine', ignored by 'warp'.",
            ))
            .arguments(&["data"])
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(|_, ins, outs| infer_float_type(OP, &["data"], ins, outs))
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![], outputs: vec![] }, backward),
    );
}
