//! `_contrib_DeformableConvolution` (MXNet 1.9.1's
//! `mx.nd.contrib.DeformableConvolution`): a 2-d convolution whose taps
//! read the data at learned fractional offsets from the regular grid.
//!
//! Per image, the deformable im2col ([`sampling`]) builds the columns
//! (`channels·kh·kw x Ho·Wo`) by bilinear reads, and each channel group's
//! filters multiply them ([`crate::kernels::matmul`]), plus the bias. The
//! backward pass forms the column gradient `weightᵀ · out_grad` per group;
//! it gives the data gradient by scattering with the bilinear weights and
//! the offset gradient by the slopes of the bilinear reads; the weight
//! gradient is `out_grad · colᵀ` summed over images, the bias gradient a
//! sum.

pub(super) mod params;
mod sampling;
pub(super) mod shared;
#[cfg(test)]
mod tests;

use self::params::{infer_shape, parse, Params};
use self::sampling::{col2im_add, im2col, offset_grad, samples, Cols};
use self::shared::Groups;
use super::geometry::Geom3;
use super::sums::bias_grad;
use crate::kernels::matmul::MatmulScalar;
use oxnet_core::{
    registry, store::store_slice, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement,
    NDArray, OpContext, OpDef, Req, Result,
};
use std::sync::Arc;

/// The operator's name.
const OP: &str = "_contrib_DeformableConvolution";

/// The sizes of one call.
struct Dims {
    /// Images.
    n: usize,
    /// Input channels.
    c: usize,
    /// The channel groups' products.
    groups: Groups,
    /// The window over the data's and output's planes (axes 1 and 2).
    g3: Geom3,
    /// The column kernels' sizes.
    cols: Cols,
}

impl Dims {
    fn new(p: &Params, data: &[usize], out: &[usize]) -> Dims {
        let g3 = p.win.geom3(&data[2..], &out[2..]);
        let cols = Cols {
            per_group: data[1] / p.num_deformable_group,
            taps: p.taps(),
            pos: g3.out_size(),
            plane: g3.in_size(),
        };
        let groups = Groups {
            op: OP,
            count: p.num_group,
            filters: p.num_filter / p.num_group,
            rows: data[1] / p.num_group * p.taps(),
            pos: cols.pos,
        };
        Dims { n: data[0], c: data[1], groups, g3, cols }
    }

    /// Elements of one image's columns.
    fn col_len(&self) -> usize {
        self.c * self.cols.taps * self.cols.pos
    }

    /// Elements of one image's data.
    fn image_len(&self) -> usize {
        self.c * self.cols.plane
    }
}

/// The forward pass under request `req` (not `null`), one image at a
/// time: columns by the deformable im2col, then one product per group.
fn forward_typed<T: FloatElement + MatmulScalar>(
    req: Req,
    p: &Params,
    inputs: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    let d = Dims::new(p, inputs[0].shape(), out.shape());
    let (x, off, w) = (inputs[0].as_slice::<T>()?, inputs[1].as_slice::<T>()?, inputs[2].as_slice::<T>()?);
    let bias = if p.no_bias { None } else { Some(inputs[3].as_slice::<T>()?) };
    let y = out.as_mut_slice::<T>()?;
    let pos = d.cols.pos;
    let off_len = p.offset_channels() * pos;
    let mut col = vec![T::zero(); d.col_len()];
    for (img, yimg) in y.chunks_mut((p.num_filter * pos).max(1)).enumerate().take(d.n) {
        let smp = samples(&d.g3, &off[img * off_len..][..off_len]);
        im2col(&x[img * d.image_len()..][..d.image_len()], &d.cols, &smp, &mut col);
        d.groups.forward(w, &col, yimg, req == Req::Add, bias)?;
    }
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (p, req) = (parse(ctx.attrs)?, ctx.req[0]);
    if req == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(outputs[0].dtype(), T => forward_typed::<T>(req, &p, inputs, &outputs[0]))
}

/// The saved arrays of the backward pass: the head gradient and the
/// inputs data, offset and weight.
struct Saved<'a, T> {
    dy: &'a [T],
    x: &'a [T],
    off: &'a [T],
    w: &'a [T],
}

/// The backward pass, one image at a time: the column gradient per group
/// feeds the data and offset gradients, the rebuilt columns the weight
/// gradient; each gradient is stored under its request at the end.
fn backward_typed<T: FloatElement + MatmulScalar>(
    ctx: &OpContext,
    p: &Params,
    shapes: (&[usize], &[usize]),
    s: Saved<'_, T>,
    grads: &[NDArray],
) -> Result<()> {
    let d = Dims::new(p, shapes.0, shapes.1);
    let pos = d.cols.pos;
    let off_len = p.offset_channels() * pos;
    let out_len = p.num_filter * pos;
    let (want_x, want_off, want_w) =
        (ctx.req[0] != Req::Null, ctx.req[1] != Req::Null, ctx.req[2] != Req::Null);
    let zero = <T::Compute as num_traits::Zero>::zero();
    let mut dx = vec![zero; if want_x { s.x.len() } else { 0 }];
    let mut doff = vec![T::zero(); if want_off { s.off.len() } else { 0 }];
    let mut dw = vec![T::zero(); if want_w { s.w.len() } else { 0 }];
    let mut col = vec![T::zero(); d.col_len()];
    for img in 0..d.n {
        let smp = samples(&d.g3, &s.off[img * off_len..][..off_len]);
        let x = &s.x[img * d.image_len()..][..d.image_len()];
        let dy = &s.dy[img * out_len..][..out_len];
        if want_x || want_off {
            d.groups.column_grad(s.w, dy, &mut col)?;
            if want_x {
                col2im_add(&col, &d.cols, &smp, &mut dx[img * d.image_len()..][..d.image_len()]);
            }
            if want_off {
                offset_grad(x, &col, &d.cols, &smp, &mut doff[img * off_len..][..off_len]);
            }
        }
        if want_w {
            im2col(x, &d.cols, &smp, &mut col);
            d.groups.weight_grad(dy, &col, &mut dw, img > 0)?;
        }
    }
    if want_x {
        let dx: Vec<T> = dx.into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[0], grads[0].as_mut_slice::<T>()?, &dx);
    }
    if want_off {
        store_slice(ctx.req[1], grads[1].as_mut_slice::<T>()?, &doff);
    }
    if want_w {
        store_slice(ctx.req[2], grads[2].as_mut_slice::<T>()?, &dw);
    }
    if !p.no_bias && ctx.req[3] != Req::Null {
        let db: Vec<T> = bias_grad::<T>(s.dy, p.num_filter, pos).into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[3], grads[3].as_mut_slice::<T>()?, &db);
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let off = args.inputs[1].as_ref().ok_or_else(missing)?;
    let w = args.inputs[2].as_ref().ok_or_else(missing)?;
    // the head gradient may be a strided view
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let saved = Saved { dy: dy.as_slice::<T>()?, x: x.as_slice()?, off: off.as_slice()?, w: w.as_slice()? };
        backward_typed::<T>(ctx, &p, (x.shape(), dy.shape()), saved, grads)
    })
}

/// The attributes, in MXNet's order.
fn attrs(def: OpDef) -> OpDef {
    let ints = |name: &str, doc: &str| AttrSpec::optional(name, AttrKind::Ints, Vec::<i64>::new(), doc);
    def.attr(AttrSpec::required("kernel", AttrKind::Ints, "Kernel size (kh, kw); only 2-d kernels."))
        .attr(ints("stride", "Stride (h, w) (default 1)."))
        .attr(ints("dilate", "Dilation (h, w) (default 1)."))
        .attr(ints("pad", "Zero padding (h, w) (default 0)."))
        .attr(AttrSpec::required("num_filter", AttrKind::Int, "Number of output channels."))
        .attr(AttrSpec::optional("num_group", AttrKind::Int, 1i64, "Number of channel groups."))
        .attr(AttrSpec::optional(
            "num_deformable_group",
            AttrKind::Int,
            1i64,
            "Number of channel groups, each with its own offsets.",
        ))
        .attr(AttrSpec::optional("workspace", AttrKind::Int, 1024i64, "Accepted for compatibility; ignored."))
        .attr(AttrSpec::optional("no_bias", AttrKind::Bool, false, "Whether to omit the bias input."))
        .attr(AttrSpec::optional(
            "layout",
            AttrKind::Str,
            "None",
            "Data layout: None or NCHW (the only one).",
        ))
}

/// Registers `_contrib_DeformableConvolution`.
pub(super) fn register() {
    let def = OpDef::new(OP).doc(
        "2-d deformable convolution (Dai et al., https://arxiv.org/abs/1703.06211) of data \
         (batch, channel, height, width) with offset (batch, num_deformable_group·2·kh·kw, out_height, \
         out_width), weight (num_filter, channel/num_group, kh, kw) and bias (num_filter,). As \
         Convolution, except that tap (i, j) of output position (y, x) reads the data at \
         (y·stride_h - pad_h + i·dilate_h + Δh, x·stride_w - pad_w + j·dilate_w + Δw), where Δh and Δw \
         are offset channels 2·(i·kw + j) and 2·(i·kw + j) + 1 of the position's deformable group (the \
         channels split evenly into num_deformable_group groups, each with its own block of 2·kh·kw \
         offset channels). A fractional point is read by bilinear interpolation of its four neighbours; \
         a point outside [0, height) x [0, width) reads 0, and one in the last row or column reads that \
         row or column alone. Output extents are Convolution's: \
         floor((x + 2·pad - dilate·(kernel-1) - 1) / stride) + 1. Weight and bias shapes are inferred \
         from data. Gradients flow to data, offset, weight and bias.",
    );
    registry::register(
        attrs(def)
            .arguments_fn(|attrs| {
                let mut names = vec!["data".to_string(), "offset".into(), "weight".into()];
                if !attrs.bool("no_bias")? {
                    names.push("bias".into());
                }
                Ok(names)
            })
            .prepare(|attrs| Ok(Arc::new(parse(attrs)?)))
            .forward(forward)
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1, 2], outputs: vec![] },
                backward,
            ),
    );
}
