//! `Convolution`: im2col and matrix products with the group's filters
//! ([`crate::kernels::matmul`]). When each thread runs whole images, the
//! columns are built a tile of [`TILE`] output positions at a time, so
//! they stay in the L2 cache and `gemm` reads them without packing them
//! again; a single image (or a single thread) gets one threaded product per
//! group over all its columns. A 1x1 window's columns are the input itself.
//! The backward kernel computes the data gradient as `weightᵀ · out_grad`
//! folded back by col2im, the weight gradient as `out_grad · colᵀ` summed
//! over images, tile by tile as the forward pass, and the bias gradient as
//! a sum. Depth-wise convolutions (one channel and one filter per group)
//! skip im2col: see [`super::depthwise`].

use super::depthwise;
use super::geometry::Geom3;
use super::im2col::{col2im_add_range_scratch, im2col_range};
use super::layout;
use super::params::{conv_params, infer_shape, ConvParams};
use super::sums::bias_grad;
use crate::kernels::matmul::{self, CpuGemm, MatMut, MatRef, MatmulScalar};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext, OpDef,
    Req, Result,
};

/// The sizes of one call: batch, channels per group, filters per group,
/// kernel taps, output positions, and the three-axis geometry.
struct Dims {
    n: usize,
    c: usize,
    cg: usize,
    fg: usize,
    taps: usize,
    g3: Geom3,
}

impl Dims {
    fn new(p: &ConvParams, data: &[usize], out: &[usize]) -> Dims {
        let g3 = p.win.geom3(&data[2..], &out[2..]);
        Dims {
            n: data[0],
            c: data[1],
            cg: data[1] / p.num_group,
            fg: p.num_filter / p.num_group,
            taps: p.win.taps(),
            g3,
        }
    }

    /// Rows of a group's column matrix (its weight matrix's columns).
    fn rows(&self) -> usize {
        self.cg * self.taps
    }

    /// True when every group is one input channel and one filter: the
    /// direct depth-wise kernels ([`super::depthwise`]) apply.
    fn depthwise(&self) -> bool {
        self.cg == 1 && self.fg == 1
    }

    /// True when the column matrix is the input itself (1x1 kernel, stride
    /// 1, no padding).
    fn identity_columns(&self) -> bool {
        self.taps == 1 && self.g3.s == [1; 3] && self.g3.p == [0; 3]
    }
}

fn gemm_err(e: matmul::MatmulError) -> Error {
    Error::Shape(format!("Convolution: {e}"))
}

/// Output positions per product when each thread runs whole images: a
/// tile of columns (`c·taps x TILE`) stays in the L2 cache, and it is laid
/// out as `gemm` packs its operand, so the products read it in place.
const TILE: usize = 64;

/// Filters per product over a tile: `gemm` re-packs an operand that more
/// than eight of its register blocks read, and the tile needs no packing.
/// The blocks are six columns wide in its AVX-512 kernels and four in the
/// others.
fn filter_chunk() -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        return 48;
    }
    32
}

impl Dims {
    /// Output positions per product: [`TILE`] when `tiled` (each thread
    /// runs whole images on its own), else all of them (one product per
    /// image and group, threaded inside). A 1x1 window's columns are the
    /// input itself and are never tiled.
    fn span(&self, tiled: bool) -> usize {
        let pos = self.g3.out_size();
        if tiled && !self.identity_columns() {
            TILE.min(pos)
        } else {
            pos
        }
    }

    /// A buffer for one tile of columns (none for a 1x1 window's).
    fn column_buffer<T: FloatElement>(&self, span: usize) -> Vec<T> {
        vec![T::zero(); if self.identity_columns() { 0 } else { self.rows() * span }]
    }
}

/// The columns of image `img`, group `grp`, output positions
/// `first..first + len` (rows of `len`): a view of the input for a 1x1
/// window, else im2col'd into `buf`.
#[allow(clippy::too_many_arguments)]
fn columns<'a, T: FloatElement>(
    x: &'a [T],
    d: &Dims,
    img: usize,
    grp: usize,
    first: usize,
    len: usize,
    buf: &'a mut [T],
) -> &'a [T] {
    let plane = d.g3.in_size();
    let src = &x[(img * d.c + grp * d.cg) * plane..][..d.cg * plane];
    if d.identity_columns() {
        return src;
    }
    let col = &mut buf[..d.rows() * len];
    im2col_range(src, d.cg, &d.g3, first, len, col);
    col
}

/// Images per parallel task, or `None` to run the images in turn with
/// threaded products (one image, or one thread).
fn images_per_task(n: usize) -> Option<usize> {
    let threads = oxnet_core::parallel::num_threads();
    (n > 1 && threads > 1).then(|| n.div_ceil(threads))
}

/// The forward pass of images `first..` into `y` (whole images), with
/// products on `backend` over [`Dims::span`] positions at a time.
#[allow(clippy::too_many_arguments)]
fn forward_images<T: FloatElement + MatmulScalar>(
    backend: &CpuGemm,
    tiled: bool,
    p: &ConvParams,
    d: &Dims,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    first: usize,
    y: &mut [T],
    accumulate: bool,
) -> Result<()> {
    let (pos, rows, span) = (d.g3.out_size(), d.rows(), d.span(tiled));
    let chunk = if span < pos { filter_chunk() } else { d.fg.max(1) };
    let mut buf = d.column_buffer::<T>(span);
    for (k, yimg) in y.chunks_mut((p.num_filter * pos).max(1)).enumerate() {
        for grp in 0..p.num_group {
            let wg = &w[grp * d.fg * rows..][..d.fg * rows];
            let yg = &mut yimg[grp * d.fg * pos..][..d.fg * pos];
            for at in (0..pos).step_by(span.max(1)) {
                let len = span.min(pos - at);
                let col = columns(x, d, first + k, grp, at, len, &mut buf);
                for f0 in (0..d.fg).step_by(chunk) {
                    let fl = chunk.min(d.fg - f0);
                    let dst = MatMut::new(yg, f0 * pos + at, fl, len, pos as isize, 1).map_err(gemm_err)?;
                    let a = MatRef::new(wg, f0 * rows, fl, rows, rows as isize, 1).map_err(gemm_err)?;
                    let b = MatRef::new(col, 0, rows, len, len as isize, 1).map_err(gemm_err)?;
                    matmul::gemm_strided_with(backend, dst, a, b, T::ONE, accumulate).map_err(gemm_err)?;
                }
            }
        }
        if let Some(b) = bias {
            for (f, plane) in yimg.chunks_exact_mut(pos.max(1)).enumerate() {
                let bf = b[f].to_compute();
                plane.iter_mut().for_each(|v| *v = T::from_compute(v.to_compute() + bf));
            }
        }
    }
    Ok(())
}

fn forward_typed<T: FloatElement + MatmulScalar>(
    ctx: &OpContext,
    p: &ConvParams,
    inputs: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let d = Dims::new(p, inputs[0].shape(), out.shape());
    let (x, w) = (inputs[0].as_slice::<T>()?, inputs[1].as_slice::<T>()?);
    let bias = if p.no_bias { None } else { Some(inputs[2].as_slice::<T>()?) };
    let y = out.as_mut_slice::<T>()?;
    let per_image = p.num_filter * d.g3.out_size();
    let accumulate = req == Req::Add;
    if d.depthwise() {
        depthwise::forward(&d.g3, d.c, x, w, bias, y, accumulate);
        return Ok(());
    }
    match images_per_task(d.n) {
        // whole images per thread, each product on the calling thread
        Some(per_task) if per_image > 0 => {
            oxnet_core::parallel::try_for_each_chunk_mut(y, per_image * per_task, |t, ys| {
                let backend = CpuGemm::single_threaded();
                forward_images(&backend, true, p, &d, x, w, bias, t * per_task, ys, accumulate)
            })
        }
        _ => forward_images(&CpuGemm::new(), false, p, &d, x, w, bias, 0, y, accumulate),
    }
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = conv_params(ctx.attrs)?;
    if p.layout.channel_last {
        return layout::forward_last(ctx, &p.layout, 2, inputs, outputs, |c, i, o| {
            forward_first(c, &p, i, o)
        });
    }
    forward_first(ctx, &p, inputs, outputs)
}

/// The forward pass over channel-first arrays.
fn forward_first(ctx: &OpContext, p: &ConvParams, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    oxnet_core::with_float_dtype!(outputs[0].dtype(), T => forward_typed::<T>(ctx, p, inputs, &outputs[0]))
}

/// The data gradient of images `first..` into `dx` (whole images, compute
/// type): `weightᵀ · out_grad` per group and [`Dims::span`] positions,
/// folded back by col2im.
#[allow(clippy::too_many_arguments)]
fn data_grad_images<T: FloatElement + MatmulScalar>(
    backend: &CpuGemm,
    tiled: bool,
    p: &ConvParams,
    d: &Dims,
    dys: &[T],
    ws: &[T],
    first: usize,
    dx: &mut [T::Compute],
) -> Result<()> {
    let (pos, plane, rows, span) = (d.g3.out_size(), d.g3.in_size(), d.rows(), d.span(tiled));
    let mut buf = vec![T::zero(); rows * span];
    for (k, dximg) in dx.chunks_mut((d.c * plane).max(1)).enumerate() {
        let img = first + k;
        for grp in 0..p.num_group {
            let wg = &ws[grp * d.fg * rows..][..d.fg * rows];
            let dyg = &dys[(img * p.num_filter + grp * d.fg) * pos..][..d.fg * pos];
            let dxg = &mut dximg[grp * d.cg * plane..][..d.cg * plane];
            for at in (0..pos).step_by(span.max(1)) {
                let len = span.min(pos - at);
                let col = &mut buf[..rows * len];
                let dst = MatMut::new(col, 0, rows, len, len as isize, 1).map_err(gemm_err)?;
                let a = MatRef::new(wg, 0, rows, d.fg, 1, rows as isize).map_err(gemm_err)?;
                let b = MatRef::new(dyg, at, d.fg, len, pos as isize, 1).map_err(gemm_err)?;
                matmul::gemm_strided_with(backend, dst, a, b, T::ONE, false).map_err(gemm_err)?;
                col2im_add_range_scratch::<T>(col, d.cg, &d.g3, at, len, dxg);
            }
        }
    }
    Ok(())
}

/// The weight gradient summed over images `images`: `out_grad · colᵀ` per
/// group and [`Dims::span`] positions.
fn weight_grad_images<T: FloatElement + MatmulScalar>(
    backend: &CpuGemm,
    tiled: bool,
    p: &ConvParams,
    d: &Dims,
    dys: &[T],
    xs: &[T],
    images: std::ops::Range<usize>,
) -> Result<Vec<T>> {
    let (pos, rows, span) = (d.g3.out_size(), d.rows(), d.span(tiled));
    let mut buf = d.column_buffer::<T>(span);
    let mut dw = vec![T::zero(); p.num_filter * rows];
    let first = images.start;
    for img in images {
        for grp in 0..p.num_group {
            let dyg = &dys[(img * p.num_filter + grp * d.fg) * pos..][..d.fg * pos];
            let dwg = &mut dw[grp * d.fg * rows..][..d.fg * rows];
            for at in (0..pos).step_by(span.max(1)) {
                let len = span.min(pos - at);
                let col = columns(xs, d, img, grp, at, len, &mut buf);
                let dst = MatMut::new(dwg, 0, d.fg, rows, rows as isize, 1).map_err(gemm_err)?;
                let a = MatRef::new(dyg, at, d.fg, len, pos as isize, 1).map_err(gemm_err)?;
                let b = MatRef::new(col, 0, len, rows, 1, len as isize).map_err(gemm_err)?;
                let accumulate = img > first || at > 0;
                matmul::gemm_strided_with(backend, dst, a, b, T::ONE, accumulate).map_err(gemm_err)?;
            }
        }
    }
    Ok(dw)
}

fn backward_typed<T: FloatElement + MatmulScalar>(
    ctx: &OpContext,
    p: &ConvParams,
    dy: &NDArray,
    x: &NDArray,
    w: &NDArray,
    grads: &[NDArray],
) -> Result<()> {
    let d = Dims::new(p, x.shape(), dy.shape());
    let pos = d.g3.out_size();
    let (dys, xs, ws) = (dy.as_slice::<T>()?, x.as_slice::<T>()?, w.as_slice::<T>()?);
    let per_task = images_per_task(d.n);
    if ctx.req[0] != Req::Null {
        let per_image = d.c * d.g3.in_size();
        let mut dx = vec![<T::Compute as num_traits::Zero>::zero(); xs.len()];
        match per_task {
            _ if d.depthwise() => depthwise::data_grad(&d.g3, d.c, dys, ws, &mut dx),
            Some(pt) if per_image > 0 => {
                oxnet_core::parallel::try_for_each_chunk_mut(&mut dx, per_image * pt, |t, chunk| {
                    data_grad_images::<T>(&CpuGemm::single_threaded(), true, p, &d, dys, ws, t * pt, chunk)
                })?
            }
            _ => data_grad_images::<T>(&CpuGemm::new(), false, p, &d, dys, ws, 0, &mut dx)?,
        }
        let dx: Vec<T> = dx.into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[0], grads[0].as_mut_slice::<T>()?, &dx);
    }
    if ctx.req[1] != Req::Null {
        let dw = match per_task {
            _ if d.depthwise() => {
                depthwise::weight_grad(&d.g3, d.n, d.c, dys, xs).into_iter().map(T::from_compute).collect()
            }
            Some(pt) => {
                let tasks = d.n.div_ceil(pt);
                let parts = oxnet_core::parallel::map(tasks, |t| {
                    let images = t * pt..((t + 1) * pt).min(d.n);
                    weight_grad_images::<T>(&CpuGemm::single_threaded(), true, p, &d, dys, xs, images)
                });
                let mut sum = vec![<T::Compute as num_traits::Zero>::zero(); ws.len()];
                for part in parts {
                    for (s, v) in sum.iter_mut().zip(part?) {
                        *s = *s + v.to_compute();
                    }
                }
                sum.into_iter().map(T::from_compute).collect()
            }
            None => weight_grad_images::<T>(&CpuGemm::new(), false, p, &d, dys, xs, 0..d.n)?,
        };
        store_slice(ctx.req[1], grads[1].as_mut_slice::<T>()?, &dw);
    }
    if !p.no_bias && ctx.req[2] != Req::Null {
        let db: Vec<T> = bias_grad::<T>(dys, p.num_filter, pos).into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[2], grads[2].as_mut_slice::<T>()?, &db);
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = conv_params(ctx.attrs)?;
    if p.layout.channel_last {
        return layout::backward_last(ctx, &p.layout, 2, args, grads, |c, a, g| backward_first(c, &p, a, g));
    }
    backward_first(ctx, &p, args, grads)
}

/// The backward pass over channel-first arrays.
fn backward_first(ctx: &OpContext, p: &ConvParams, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let missing = || Error::Autograd("Convolution: the backward kernel lacks a saved array".into());
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let w = args.inputs[1].as_ref().ok_or_else(missing)?;
    // the head gradient may be a strided view
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    oxnet_core::with_float_dtype!(x.dtype(), T => backward_typed::<T>(ctx, p, &dy, x, w, grads))
}

/// The attributes `Convolution` declares, in MXNet's order.
fn conv_attrs(def: OpDef) -> OpDef {
    def.attr(AttrSpec::required(
        "kernel",
        AttrKind::Ints,
        "Convolution kernel size: (w,), (h, w) or (d, h, w).",
    ))
    .attr(AttrSpec::optional("stride", AttrKind::Ints, Vec::<i64>::new(), "Stride per axis (default 1)."))
    .attr(AttrSpec::optional("dilate", AttrKind::Ints, Vec::<i64>::new(), "Dilation per axis (default 1)."))
    .attr(AttrSpec::optional("pad", AttrKind::Ints, Vec::<i64>::new(), "Zero padding per axis (default 0)."))
    .attr(AttrSpec::required("num_filter", AttrKind::Int, "Number of output channels."))
    .attr(AttrSpec::optional("num_group", AttrKind::Int, 1i64, "Number of channel groups."))
    .attr(AttrSpec::optional("workspace", AttrKind::Int, 1024i64, "Accepted for compatibility; ignored."))
    .attr(AttrSpec::optional("no_bias", AttrKind::Bool, false, "Whether to omit the bias input."))
    .attr(AttrSpec::optional("cudnn_tune", AttrKind::Str, "None", "Accepted for compatibility; ignored."))
    .attr(AttrSpec::optional("cudnn_off", AttrKind::Bool, false, "Accepted for compatibility; ignored."))
    .attr(AttrSpec::optional(
        "layout",
        AttrKind::Str,
        "None",
        "Data layout: None (NCW, NCHW or NCDHW by kernel rank), NCW, NCHW, NCDHW, or channel-last NHWC or \
         NDHWC (weight (num_filter, *kernel, channel/num_group)).",
    ))
}

pub(super) fn register() {
    let def = OpDef::new("Convolution").doc(
        "N-D convolution (1-D to 3-D) over data of shape (batch, channel, *spatial) with weight \
         (num_filter, channel/num_group, *kernel) and bias (num_filter,): \
         out[n, f] = bias[f] + sum over c, k of weight[f, c, k] · data[n, g·C/G + c, stride·o + dilate·k - pad]. \
         Output extent per axis: floor((x + 2·pad - dilate·(kernel-1) - 1) / stride) + 1. \
         Weight and bias shapes are inferred from data. With layout NHWC or NDHWC the channel axis is \
         last in data, weight and output.",
    );
    registry::register(
        conv_attrs(def)
            .arguments_fn(|attrs| {
                Ok(if attrs.bool("no_bias")? {
                    vec!["data".into(), "weight".into()]
                } else {
                    vec!["data".into(), "weight".into(), "bias".into()]
                })
            })
            .prepare(|attrs| {
                conv_params(attrs)?;
                Ok(std::sync::Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] }, backward),
    );
}
