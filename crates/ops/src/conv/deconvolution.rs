//! `Deconvolution` (transposed convolution): the adjoint of `Convolution`
//! with respect to its data. Per image and group, `col = weightᵀ · data`
//! (one matrix product) folded into the output by col2im; the backward
//! kernel gives the data gradient as `weight · im2col(out_grad)` and the
//! weight gradient as `data · im2col(out_grad)ᵀ`.

use super::deconv_params::{deconv_params, infer_shape, pad_adj, DeconvParams};
use super::geometry::Geom3;
use super::im2col::{col2im_add, im2col};
use super::layout;
use super::sums::bias_grad;
use crate::kernels::matmul::{self, MatmulScalar};
use num_traits::Zero;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext, OpDef,
    Req, Result,
};

/// Sizes of a call: batch, input channels per group, filters per group,
/// taps, and the geometry of the convolution being transposed (its input is
/// this operator's output).
struct Dims {
    n: usize,
    c: usize,
    cg: usize,
    fg: usize,
    taps: usize,
    g3: Geom3,
}

impl Dims {
    fn new(p: &DeconvParams, data: &[usize], out: &[usize]) -> Result<Dims> {
        let (pad, _) = pad_adj(p, &data[2..])?;
        let mut win = p.win.clone();
        win.pad_before = pad.clone();
        win.pad_after = pad;
        Ok(Dims {
            n: data[0],
            c: data[1],
            cg: data[1] / p.num_group,
            fg: p.num_filter / p.num_group,
            taps: p.win.taps(),
            g3: win.geom3(&out[2..], &data[2..]),
        })
    }

    /// Columns of a group's weight matrix (`filters per group · taps`).
    fn cols(&self) -> usize {
        self.fg * self.taps
    }
}

fn gemm_err(e: matmul::MatmulError) -> Error {
    Error::Shape(format!("Deconvolution: {e}"))
}

fn forward_typed<T: FloatElement + MatmulScalar>(
    ctx: &OpContext,
    p: &DeconvParams,
    inputs: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    if ctx.req[0] == Req::Null {
        return Ok(());
    }
    let d = Dims::new(p, inputs[0].shape(), out.shape())?;
    let (x, w) = (inputs[0].as_slice::<T>()?, inputs[1].as_slice::<T>()?);
    let (pin, pout) = (d.g3.out_size(), d.g3.in_size());
    let mut col = vec![T::zero(); d.cols() * pin];
    let mut y = vec![<T::Compute as Zero>::zero(); d.n * p.num_filter * pout];
    for img in 0..d.n {
        for grp in 0..p.num_group {
            let xg = &x[(img * d.c + grp * d.cg) * pin..][..d.cg * pin];
            let wg = &w[grp * d.cg * d.cols()..][..d.cg * d.cols()];
            matmul::matmul(wg, xg, &mut col, d.cols(), d.cg, pin, true, false, false).map_err(gemm_err)?;
            let dst = &mut y[(img * p.num_filter + grp * d.fg) * pout..][..d.fg * pout];
            col2im_add::<T>(&col, d.fg, &d.g3, dst);
        }
    }
    let bias = if p.no_bias { None } else { Some(inputs[2].as_slice::<T>()?) };
    let y: Vec<T> = y
        .chunks_exact(pout.max(1))
        .enumerate()
        .flat_map(|(i, plane)| {
            let b = bias.map_or(<T::Compute as Zero>::zero(), |b| b[i % p.num_filter].to_compute());
            plane.iter().map(move |&v| T::from_compute(v + b))
        })
        .collect();
    store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    Ok(())
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = deconv_params(ctx.attrs)?;
    if p.layout.channel_last {
        return layout::forward_last(ctx, &p.layout, 2, inputs, outputs, |c, i, o| {
            forward_first(c, &p, i, o)
        });
    }
    forward_first(ctx, &p, inputs, outputs)
}

/// The forward pass over channel-first arrays.
fn forward_first(ctx: &OpContext, p: &DeconvParams, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    oxnet_core::with_float_dtype!(outputs[0].dtype(), T => forward_typed::<T>(ctx, p, inputs, &outputs[0]))
}

fn backward_typed<T: FloatElement + MatmulScalar>(
    ctx: &OpContext,
    p: &DeconvParams,
    dy: &NDArray,
    x: &NDArray,
    w: &NDArray,
    grads: &[NDArray],
) -> Result<()> {
    let d = Dims::new(p, x.shape(), dy.shape())?;
    let (pin, pout) = (d.g3.out_size(), d.g3.in_size());
    let (dys, xs, ws) = (dy.as_slice::<T>()?, x.as_slice::<T>()?, w.as_slice::<T>()?);
    let mut col = vec![T::zero(); d.cols() * pin];
    let mut dx = vec![T::zero(); if ctx.req[0] != Req::Null { xs.len() } else { 0 }];
    let mut dw = vec![T::zero(); if ctx.req[1] != Req::Null { ws.len() } else { 0 }];
    if !dx.is_empty() || !dw.is_empty() {
        for img in 0..d.n {
            for grp in 0..p.num_group {
                let dyg = &dys[(img * p.num_filter + grp * d.fg) * pout..][..d.fg * pout];
                im2col(dyg, d.fg, &d.g3, &mut col);
                let at = (img * d.c + grp * d.cg) * pin;
                let wat = grp * d.cg * d.cols();
                if !dx.is_empty() {
                    let wg = &ws[wat..][..d.cg * d.cols()];
                    let dxg = &mut dx[at..][..d.cg * pin];
                    matmul::matmul(wg, &col, dxg, d.cg, d.cols(), pin, false, false, false)
                        .map_err(gemm_err)?;
                }
                if !dw.is_empty() {
                    let xg = &xs[at..][..d.cg * pin];
                    let dwg = &mut dw[wat..][..d.cg * d.cols()];
                    matmul::matmul(xg, &col, dwg, d.cg, pin, d.cols(), false, true, img > 0)
                        .map_err(gemm_err)?;
                }
            }
        }
    }
    if !dx.is_empty() {
        store_slice(ctx.req[0], grads[0].as_mut_slice::<T>()?, &dx);
    }
    if !dw.is_empty() {
        store_slice(ctx.req[1], grads[1].as_mut_slice::<T>()?, &dw);
    }
    if !p.no_bias && ctx.req[2] != Req::Null {
        let db: Vec<T> = bias_grad::<T>(dys, p.num_filter, pout).into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[2], grads[2].as_mut_slice::<T>()?, &db);
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = deconv_params(ctx.attrs)?;
    if p.layout.channel_last {
        return layout::backward_last(ctx, &p.layout, 2, args, grads, |c, a, g| backward_first(c, &p, a, g));
    }
    backward_first(ctx, &p, args, grads)
}

/// The backward pass over channel-first arrays.
fn backward_first(ctx: &OpContext, p: &DeconvParams, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let missing = || Error::Autograd("Deconvolution: the backward kernel lacks a saved array".into());
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let w = args.inputs[1].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    oxnet_core::with_float_dtype!(x.dtype(), T => backward_typed::<T>(ctx, p, &dy, x, w, grads))
}

pub(super) fn register() {
    let spatial = |name: &str, doc: &str| AttrSpec::optional(name, AttrKind::Ints, Vec::<i64>::new(), doc);
    registry::register(
        OpDef::new("Deconvolution")
            .doc(
                "Transposed convolution (1-D to 3-D), the gradient of Convolution with respect to \
                 its data: data (batch, C, *spatial), weight (C, num_filter/num_group, *kernel), \
                 optional bias (num_filter,) (no_bias defaults to True). Output extent per axis: \
                 stride·(x - 1) + dilate·(kernel - 1) + 1 - 2·pad + adj, or target_shape (then \
                 pad and adj are derived from it). With layout NHWC or NDHWC the channel axis is last \
                 in data, weight and output.",
            )
            .attr(AttrSpec::required("kernel", AttrKind::Ints, "Kernel size: (w,), (h, w) or (d, h, w)."))
            .attr(spatial("stride", "Stride per axis (default 1)."))
            .attr(spatial("dilate", "Dilation per axis (default 1)."))
            .attr(spatial("pad", "Padding removed from each end of the output (default 0)."))
            .attr(spatial("adj", "Extra output extent at the end of each axis (default 0)."))
            .attr(spatial("target_shape", "Output spatial extents; overrides pad and adj."))
            .attr(AttrSpec::required("num_filter", AttrKind::Int, "Number of output channels."))
            .attr(AttrSpec::optional("num_group", AttrKind::Int, 1i64, "Number of channel groups."))
            .attr(AttrSpec::optional(
                "workspace",
                AttrKind::Int,
                512i64,
                "Accepted for compatibility; ignored.",
            ))
            .attr(AttrSpec::optional("no_bias", AttrKind::Bool, true, "Whether to omit the bias input."))
            .attr(AttrSpec::optional(
                "cudnn_tune",
                AttrKind::Str,
                "None",
                "Accepted for compatibility; ignored.",
            ))
            .attr(AttrSpec::optional(
                "cudnn_off",
                AttrKind::Bool,
                false,
                "Accepted for compatibility; ignored.",
            ))
            .attr(AttrSpec::optional(
                "layout",
                AttrKind::Str,
                "None",
                "Data layout: None (NCW, NCHW or NCDHW by kernel rank), NCW, NCHW, NCDHW, or channel-last \
                 NHWC or NDHWC (weight (C, *kernel, num_filter/num_group)).",
            ))
            .arguments_fn(|attrs| {
                Ok(if attrs.bool("no_bias")? {
                    vec!["data".into(), "weight".into()]
                } else {
                    vec!["data".into(), "weight".into(), "bias".into()]
                })
            })
            .prepare(|attrs| {
                deconv_params(attrs)?;
                Ok(std::sync::Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] }, backward),
    );
}
