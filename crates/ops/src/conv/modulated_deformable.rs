//! `_contrib_ModulatedDeformableConvolution` (MXNet 1.9.1's
//! `mx.nd.contrib.ModulatedDeformableConvolution`, DCNv2): a 2-d
//! convolution whose taps read the data at learned fractional offsets and
//! scale what they read by a learned mask.
//!
//! Tap `(i, j)` of output position `(ho, wo)` in deformable group `g`
//! reads every channel of the group at
//! `(ho·stride_h - pad_h + i·dilate_h + Δh, wo·stride_w - pad_w + j·dilate_w + Δw)`,
//! where `Δh` and `Δw` are channels `2·(i·kw + j)` and `2·(i·kw + j) + 1` of
//! the group's block of offsets, and multiplies the value by channel
//! `i·kw + j` of the group's block of the mask. As in MXNet's DCNv2
//! kernels, the read is a bilinear blend of the four pixels around the
//! point with the pixels outside the image taken as 0, for points in
//! `(-1, H) x (-1, W)`; a point outside that region reads 0.
//!
//! Per image, the modulated im2col builds the columns (`channels·kh·kw x
//! Ho·Wo`) and each channel group's filters multiply them, plus the bias.
//! The backward pass forms the column gradient `weightᵀ · out_grad` per
//! group; from it come the data gradient (scattered with the blend
//! weights times the mask), the offset gradient (the slopes of the blend
//! times the mask), and the mask gradient (the unmasked reads); the weight
//! gradient is `out_grad · colᵀ` summed over images, the bias gradient a
//! sum. MXNet 1.9.1 computes these three gradients on its GPU only; oxnet
//! computes them everywhere with the same formulas.

use super::deformable::params::{infer_for, parse_for, Params as Common, SideInput};
use super::deformable::shared::{cast, sample_points, Groups};
use super::geometry::Geom3;
use super::sums::bias_grad;
use crate::kernels::matmul::MatmulScalar;
use num_traits::{Float, Zero};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, store::store_slice, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement,
    NDArray, OpContext, OpDef, Req, Result,
};
use std::sync::Arc;

/// The operator's name.
const OP: &str = "_contrib_ModulatedDeformableConvolution";

// ---------------------------------------------------------------------------
// Attributes

/// The parsed attributes: the deformable convolution's, and `im2col_step`.
#[derive(Debug, Clone)]
struct Params {
    common: Common,
    /// Most images per im2col block (a batch above it must divide by it).
    im2col_step: usize,
}

impl std::ops::Deref for Params {
    type Target = Common;

    fn deref(&self) -> &Common {
        &self.common
    }
}

impl Params {
    /// Channels of the mask input: one per tap and deformable group.
    fn mask_channels(&self) -> usize {
        self.num_deformable_group * self.taps()
    }
}

/// Parses and validates the attributes (or takes those `prepare` parsed).
fn parse(attrs: &Attrs) -> Result<Params> {
    if let Some(p) = attrs.prepared::<Params>() {
        return Ok(p.clone());
    }
    let (common, extra) = parse_for(OP, attrs, &["im2col_step"])?;
    let workspace = attrs.int("workspace")?;
    if workspace < 0 {
        return Err(Error::attr("workspace", format!("{OP}: workspace must be at least 0, got {workspace}")));
    }
    Ok(Params { common, im2col_step: extra[0] })
}

/// Shape inference over complete or partial shapes (0: unknown), inputs
/// (data, offset, mask, weight[, bias]), as the deformable convolution's
/// (`infer_for`) with the mask `(N, num_deformable_group·kh·kw, Ho, Wo)`
/// beside the offset `(N, num_deformable_group·2·kh·kw, Ho, Wo)`.
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = parse(attrs)?;
    let sides = [
        SideInput {
            channels: 2 * p.mask_channels(),
            name: "offset",
            axes: "batch, num_deformable_group·2·kh·kw, out_height, out_width",
        },
        SideInput {
            channels: p.mask_channels(),
            name: "mask",
            axes: "batch, num_deformable_group·kh·kw, out_height, out_width",
        },
    ];
    infer_for(OP, &p, Some(p.im2col_step), &sides, ins, outs)
}

// ---------------------------------------------------------------------------
// Sampling

/// Where one tap of one output position reads in a channel plane: the
/// four pixels around the point, each with its blend weight and the
/// weight's derivatives along h and w (all 0 for a pixel outside the
/// image, whose index is then 0).
#[derive(Debug, Clone, Copy)]
struct Sample<C> {
    /// Top-left, top-right, bottom-left, bottom-right pixel indices.
    at: [usize; 4],
    /// Blend weights.
    wt: [C; 4],
    /// Derivatives of the blend weights along h.
    dh: [C; 4],
    /// Derivatives of the blend weights along w.
    dw: [C; 4],
}

impl<C: Float> Sample<C> {
    /// The sample at `(h, w)` in an `height x width` plane, or `None` when
    /// the point lies outside `(-1, height) x (-1, width)` (or is NaN).
    fn new(h: C, w: C, height: usize, width: usize) -> Option<Self> {
        let one = C::one();
        let inside = h > -one && w > -one && h < cast(height) && w < cast(width);
        if !inside {
            return None;
        }
        let (h0, w0) = (h.floor(), w.floor());
        let (row, col) = (h0.to_i64()?, w0.to_i64()?);
        let (lh, lw) = (h - h0, w - w0);
        let (hh, hw) = (one - lh, one - lw);
        let zero = C::zero();
        let mut s = Sample { at: [0; 4], wt: [zero; 4], dh: [zero; 4], dw: [zero; 4] };
        let corners = [
            (row, col, hh * hw, -hw, -hh),
            (row, col + 1, hh * lw, -lw, hh),
            (row + 1, col, lh * hw, hw, -lh),
            (row + 1, col + 1, lh * lw, lw, lh),
        ];
        for (k, (r, c, wt, dh, dw)) in corners.into_iter().enumerate() {
            if r >= 0 && c >= 0 && (r as usize) < height && (c as usize) < width {
                s.at[k] = r as usize * width + c as usize;
                s.wt[k] = wt;
                s.dh[k] = dh;
                s.dw[k] = dw;
            }
        }
        Some(s)
    }

    /// The four pixel values of `plane` in the compute type.
    fn values<T: FloatElement<Compute = C>>(&self, plane: &[T]) -> [C; 4] {
        self.at.map(|k| plane[k].to_compute())
    }

    /// `Σ coef[k]·v[k]`.
    fn dot(coef: &[C; 4], v: &[C; 4]) -> C {
        coef.iter().zip(v).fold(C::zero(), |s, (&c, &x)| s + c * x)
    }
}

/// The samples of one image, ordered (deformable group, tap, output
/// position) like the mask, from its offsets (see [`sample_points`]).
fn samples<T: FloatElement>(g: &Geom3, offsets: &[T]) -> Vec<Option<Sample<T::Compute>>> {
    sample_points(g, offsets, Sample::new)
}

/// The sizes of one call.
struct Dims {
    /// Images.
    n: usize,
    /// Input channels.
    c: usize,
    /// The channel groups' products.
    groups: Groups,
    /// Channels per deformable group.
    per_dg: usize,
    /// Kernel taps.
    taps: usize,
    /// Output positions (`Ho·Wo`).
    pos: usize,
    /// Pixels of an input plane (`H·W`).
    plane: usize,
    /// The window over the data's and output's planes (axes 1 and 2).
    g3: Geom3,
}

impl Dims {
    fn new(p: &Params, data: &[usize], out: &[usize]) -> Dims {
        let g3 = p.win.geom3(&data[2..], &out[2..]);
        Dims {
            n: data[0],
            c: data[1],
            groups: Groups {
                op: OP,
                count: p.num_group,
                filters: p.num_filter / p.num_group,
                rows: data[1] / p.num_group * p.taps(),
                pos: g3.out_size(),
            },
            per_dg: (data[1] / p.num_deformable_group).max(1),
            taps: p.taps(),
            pos: g3.out_size(),
            plane: g3.in_size(),
            g3,
        }
    }

    /// Elements of one image's columns.
    fn col_len(&self) -> usize {
        self.c * self.taps * self.pos
    }

    /// Elements of one image's data.
    fn image_len(&self) -> usize {
        self.c * self.plane
    }

    /// The entries of `per_tap` (ordered deformable group, tap, position)
    /// that channel `ch`'s group uses.
    fn group_part<'a, X>(&self, per_tap: &'a [X], ch: usize) -> &'a [X] {
        let n = self.taps * self.pos;
        &per_tap[ch / self.per_dg * n..][..n]
    }
}

/// The columns of one image: row `ch·taps + tap` holds channel `ch` read
/// at every output position and scaled by the mask. Channels run in
/// parallel.
fn im2col<T: FloatElement>(x: &[T], d: &Dims, smp: &[Option<Sample<T::Compute>>], mask: &[T], col: &mut [T]) {
    if col.is_empty() || d.plane == 0 {
        return;
    }
    oxnet_core::parallel::for_each_chunk_mut(col, d.taps * d.pos, |ch, rows| {
        let plane = &x[ch * d.plane..][..d.plane];
        for ((v, s), m) in rows.iter_mut().zip(d.group_part(smp, ch)).zip(d.group_part(mask, ch)) {
            *v = s.map_or(T::zero(), |s| {
                T::from_compute(Sample::dot(&s.wt, &s.values(plane)) * m.to_compute())
            });
        }
    });
}

/// Adds the column gradient `dcol` back onto the pixels each sample
/// blended, with the blend weights times the mask: the data gradient of
/// one image, in the compute type. Channels run in parallel.
fn col2im_add<T: FloatElement>(
    dcol: &[T],
    d: &Dims,
    smp: &[Option<Sample<T::Compute>>],
    mask: &[T],
    dx: &mut [T::Compute],
) {
    if dx.is_empty() || d.taps * d.pos == 0 {
        return;
    }
    oxnet_core::parallel::for_each_chunk_mut(dx, d.plane, |ch, plane| {
        let rows = &dcol[ch * d.taps * d.pos..][..d.taps * d.pos];
        for ((g, s), m) in rows.iter().zip(d.group_part(smp, ch)).zip(d.group_part(mask, ch)) {
            if let Some(s) = s {
                let g = g.to_compute() * m.to_compute();
                for (&k, &w) in s.at.iter().zip(&s.wt) {
                    plane[k] = plane[k] + w * g;
                }
            }
        }
    });
}

/// The offset and mask gradients of one image, for every (deformable
/// group, tap, position): `acc` holds, per (group, tap), the h slopes, the
/// w slopes (both times the mask) and the unmasked reads, each summed over
/// the group's channels against their column gradient. Taps run in
/// parallel.
fn coord_grads<T: FloatElement>(
    x: &[T],
    dcol: &[T],
    d: &Dims,
    smp: &[Option<Sample<T::Compute>>],
    mask: &[T],
    acc: &mut [T::Compute],
) {
    if acc.is_empty() || d.plane == 0 {
        return;
    }
    oxnet_core::parallel::for_each_chunk_mut(acc, 3 * d.pos, |k, out| {
        let (group, tap) = (k / d.taps, k % d.taps);
        let smp = &smp[k * d.pos..][..d.pos];
        let mask = &mask[k * d.pos..][..d.pos];
        let (oh, rest) = out.split_at_mut(d.pos);
        let (ow, om) = rest.split_at_mut(d.pos);
        for ch in group * d.per_dg..((group + 1) * d.per_dg).min(d.c) {
            let plane = &x[ch * d.plane..][..d.plane];
            let grad = &dcol[(ch * d.taps + tap) * d.pos..][..d.pos];
            for (p, (g, s)) in grad.iter().zip(smp).enumerate() {
                if let Some(s) = s {
                    let v = s.values(plane);
                    let g = g.to_compute();
                    let gm = g * mask[p].to_compute();
                    oh[p] = oh[p] + gm * Sample::dot(&s.dh, &v);
                    ow[p] = ow[p] + gm * Sample::dot(&s.dw, &v);
                    om[p] = om[p] + g * Sample::dot(&s.wt, &v);
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Forward and backward

/// The forward pass under request `req` (not `null`), one image at a
/// time: columns by the modulated im2col, then one product per group.
fn forward_typed<T: FloatElement + MatmulScalar>(
    req: Req,
    p: &Params,
    inputs: &[NDArray],
    out: &NDArray,
) -> Result<()> {
    let d = Dims::new(p, inputs[0].shape(), out.shape());
    let (x, off, mask, w) = (
        inputs[0].as_slice::<T>()?,
        inputs[1].as_slice::<T>()?,
        inputs[2].as_slice::<T>()?,
        inputs[3].as_slice::<T>()?,
    );
    let bias = if p.no_bias { None } else { Some(inputs[4].as_slice::<T>()?) };
    let y = out.as_mut_slice::<T>()?;
    let pos = d.pos;
    let mask_len = p.mask_channels() * pos;
    let mut col = vec![T::zero(); d.col_len()];
    for (img, yimg) in y.chunks_mut((p.num_filter * pos).max(1)).enumerate().take(d.n) {
        let smp = samples(&d.g3, &off[img * 2 * mask_len..][..2 * mask_len]);
        let m = &mask[img * mask_len..][..mask_len];
        im2col(&x[img * d.image_len()..][..d.image_len()], &d, &smp, m, &mut col);
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
/// inputs data, offset, mask and weight.
struct Saved<'a, T> {
    dy: &'a [T],
    x: &'a [T],
    off: &'a [T],
    mask: &'a [T],
    w: &'a [T],
}

/// The backward pass, one image at a time: the column gradient per group
/// feeds the data, offset and mask gradients, the rebuilt columns the
/// weight gradient; each gradient is stored under its request at the end.
fn backward_typed<T: FloatElement + MatmulScalar>(
    ctx: &OpContext,
    p: &Params,
    shapes: (&[usize], &[usize]),
    s: Saved<'_, T>,
    grads: &[NDArray],
) -> Result<()> {
    let d = Dims::new(p, shapes.0, shapes.1);
    let pos = d.pos;
    let mask_len = p.mask_channels() * pos;
    let out_len = p.num_filter * pos;
    let want = |i: usize| ctx.req[i] != Req::Null;
    let (want_x, want_off, want_mask, want_w) = (want(0), want(1), want(2), want(3));
    let zero = <T::Compute as Zero>::zero();
    let mut dx = vec![zero; if want_x { s.x.len() } else { 0 }];
    let mut doff = vec![T::zero(); if want_off { s.off.len() } else { 0 }];
    let mut dmask = vec![T::zero(); if want_mask { s.mask.len() } else { 0 }];
    let mut dw = vec![T::zero(); if want_w { s.w.len() } else { 0 }];
    let mut col = vec![T::zero(); d.col_len()];
    let mut acc = vec![zero; if want_off || want_mask { 3 * mask_len } else { 0 }];
    for img in 0..d.n {
        let smp = samples(&d.g3, &s.off[img * 2 * mask_len..][..2 * mask_len]);
        let mask = &s.mask[img * mask_len..][..mask_len];
        let x = &s.x[img * d.image_len()..][..d.image_len()];
        let dy = &s.dy[img * out_len..][..out_len];
        if want_x || want_off || want_mask {
            d.groups.column_grad(s.w, dy, &mut col)?;
            if want_x {
                col2im_add(&col, &d, &smp, mask, &mut dx[img * d.image_len()..][..d.image_len()]);
            }
            if want_off || want_mask {
                acc.iter_mut().for_each(|v| *v = zero);
                coord_grads(x, &col, &d, &smp, mask, &mut acc);
                for (k, a) in acc.chunks_exact(3 * pos).enumerate() {
                    if want_off {
                        let o = &mut doff[img * 2 * mask_len + 2 * k * pos..][..2 * pos];
                        for (v, &g) in o.iter_mut().zip(&a[..2 * pos]) {
                            *v = T::from_compute(g);
                        }
                    }
                    if want_mask {
                        let o = &mut dmask[img * mask_len + k * pos..][..pos];
                        for (v, &g) in o.iter_mut().zip(&a[2 * pos..]) {
                            *v = T::from_compute(g);
                        }
                    }
                }
            }
        }
        if want_w {
            im2col(x, &d, &smp, mask, &mut col);
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
    if want_mask {
        store_slice(ctx.req[2], grads[2].as_mut_slice::<T>()?, &dmask);
    }
    if want_w {
        store_slice(ctx.req[3], grads[3].as_mut_slice::<T>()?, &dw);
    }
    if !p.no_bias && want(4) {
        let db: Vec<T> = bias_grad::<T>(s.dy, p.num_filter, pos).into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[4], grads[4].as_mut_slice::<T>()?, &db);
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = parse(ctx.attrs)?;
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let saved: Vec<&NDArray> =
        (0..4).map(|i| args.inputs[i].as_ref().ok_or_else(missing)).collect::<Result<_>>()?;
    // the head gradient may be a strided view
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let x = saved[0];
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let s = Saved {
            dy: dy.as_slice::<T>()?,
            x: x.as_slice()?,
            off: saved[1].as_slice()?,
            mask: saved[2].as_slice()?,
            w: saved[3].as_slice()?,
        };
        backward_typed::<T>(ctx, &p, (x.shape(), dy.shape()), s, grads)
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
            "Number of channel groups, each with its own offsets and mask.",
        ))
        .attr(AttrSpec::optional("workspace", AttrKind::Int, 1024i64, "Accepted for compatibility; ignored."))
        .attr(AttrSpec::optional("no_bias", AttrKind::Bool, false, "Whether to omit the bias input."))
        .attr(AttrSpec::optional(
            "im2col_step",
            AttrKind::Int,
            64i64,
            "Most images per im2col block; a larger batch must be a multiple of it.",
        ))
        .attr(AttrSpec::optional(
            "layout",
            AttrKind::Str,
            "None",
            "Data layout: None or NCHW (the only one).",
        ))
}

/// Registers `_contrib_ModulatedDeformableConvolution`.
pub(super) fn register() {
    let def = OpDef::new(OP).doc(
        "2-d modulated deformable convolution (DCNv2, Zhu et al., https://arxiv.org/abs/1811.11168) of \
         data (batch, channel, height, width) with offset (batch, num_deformable_group·2·kh·kw, \
         out_height, out_width), mask (batch, num_deformable_group·kh·kw, out_height, out_width), weight \
         (num_filter, channel/num_group, kh, kw) and bias (num_filter,). As Convolution, except that tap \
         (i, j) of output position (y, x) reads the data at (y·stride_h - pad_h + i·dilate_h + Δh, \
         x·stride_w - pad_w + j·dilate_w + Δw) and multiplies the value by m, where Δh and Δw are offset \
         channels 2·(i·kw + j) and 2·(i·kw + j) + 1 and m is mask channel i·kw + j of the position's \
         deformable group (the channels split evenly into num_deformable_group groups). A fractional point \
         is read by bilinear interpolation of its four neighbours, pixels outside the image counting as 0; \
         a point outside (-1, height) x (-1, width) reads 0. Output extents are Convolution's. Weight and \
         bias shapes are inferred from data. Gradients flow to data, offset, mask, weight and bias.",
    );
    registry::register(
        attrs(def)
            .arguments_fn(|attrs| {
                let mut names = vec!["data".to_string(), "offset".into(), "mask".into(), "weight".into()];
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
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1, 2, 3], outputs: vec![] },
                backward,
            ),
    );
}

#[cfg(test)]
mod tests {
    //! Direct-loop values, central differences and malformed calls.

    use super::OP;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    fn rand(shape: &[usize], lo: f64, hi: f64) -> NDArray {
        NDArray::random_uniform(lo, hi, shape, DType::F64).unwrap()
    }

    fn pair(a: i64, b: i64) -> AttrValue {
        AttrValue::Ints(vec![a, b])
    }

    /// The bilinear read with zero padding, by its definition.
    fn read(x: &[f64], h: usize, w: usize, y: f64, z: f64) -> f64 {
        if y <= -1.0 || z <= -1.0 || y >= h as f64 || z >= w as f64 {
            return 0.0;
        }
        let (y0, z0) = (y.floor(), z.floor());
        let px = |r: f64, c: f64| {
            if r < 0.0 || c < 0.0 || r >= h as f64 || c >= w as f64 {
                0.0
            } else {
                x[r as usize * w + c as usize]
            }
        };
        let (ly, lz) = (y - y0, z - z0);
        (1.0 - ly) * (1.0 - lz) * px(y0, z0)
            + (1.0 - ly) * lz * px(y0, z0 + 1.0)
            + ly * (1.0 - lz) * px(y0 + 1.0, z0)
            + ly * lz * px(y0 + 1.0, z0 + 1.0)
    }

    #[test]
    fn matches_direct_loops() {
        // 1 image, 2 channels 4x5, 3 filters, 2x2 kernel, pad 1, stride (1, 2)
        let (c, h, w, f) = (2usize, 4usize, 5usize, 3usize);
        let (ho, wo) = (5usize, 3usize);
        let x = rand(&[1, c, h, w], -1.0, 1.0);
        let off = rand(&[1, 8, ho, wo], -1.5, 1.5);
        let mask = rand(&[1, 4, ho, wo], 0.0, 1.0);
        let wt = rand(&[f, c, 2, 2], -1.0, 1.0);
        let b = rand(&[f], -1.0, 1.0);
        let attrs = [
            ("kernel", pair(2, 2)),
            ("pad", pair(1, 1)),
            ("stride", pair(1, 2)),
            ("num_filter", AttrValue::from(f)),
        ];
        let y = invoke1(OP, &[&x, &off, &mask, &wt, &b], &attrs).unwrap();
        assert_eq!(y.shape(), &[1, f, ho, wo]);
        let (xv, ov, mv, wv, bv) = (
            x.to_vec::<f64>().unwrap(),
            off.to_vec::<f64>().unwrap(),
            mask.to_vec::<f64>().unwrap(),
            wt.to_vec::<f64>().unwrap(),
            b.to_vec::<f64>().unwrap(),
        );
        let yv = y.to_vec::<f64>().unwrap();
        for fi in 0..f {
            for oy in 0..ho {
                for ox in 0..wo {
                    let mut s = bv[fi];
                    for ch in 0..c {
                        for t in 0..4 {
                            let (i, j) = (t / 2, t % 2);
                            let p = oy * wo + ox;
                            let dy = ov[(2 * t) * ho * wo + p];
                            let dx = ov[(2 * t + 1) * ho * wo + p];
                            let yy = oy as f64 - 1.0 + i as f64 + dy;
                            let zz = (ox * 2) as f64 - 1.0 + j as f64 + dx;
                            let v = read(&xv[ch * h * w..][..h * w], h, w, yy, zz);
                            s += wv[(fi * c + ch) * 4 + t] * v * mv[t * ho * wo + p];
                        }
                    }
                    let got = yv[(fi * ho + oy) * wo + ox];
                    assert!((got - s).abs() < 1e-12, "f={fi} y={oy} x={ox}: {got} vs {s}");
                }
            }
        }
    }

    #[test]
    fn gradients_match_central_differences() {
        // (attributes, data shape, filters, deformable groups)
        type Case = (Vec<(&'static str, AttrValue)>, [usize; 4], usize, usize);
        let cases: [Case; 2] = [
            (
                vec![
                    ("kernel", pair(2, 2)),
                    ("num_filter", AttrValue::from(4usize)),
                    ("num_group", AttrValue::from(2usize)),
                    ("num_deformable_group", AttrValue::from(2usize)),
                    ("pad", pair(1, 1)),
                    ("stride", pair(1, 2)),
                ],
                [2, 4, 4, 5],
                4,
                2,
            ),
            (
                vec![
                    ("kernel", pair(3, 3)),
                    ("num_filter", AttrValue::from(2usize)),
                    ("no_bias", AttrValue::from(true)),
                    ("dilate", pair(2, 1)),
                    ("pad", pair(1, 0)),
                ],
                [1, 2, 6, 4],
                2,
                1,
            ),
        ];
        for (attrs, dshape, filters, dg) in cases {
            let get = |k: &str| attrs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
            let no_bias = get("no_bias").is_some();
            let groups = if get("num_group").is_some() { 2 } else { 1 };
            let k = match get("kernel") {
                Some(AttrValue::Ints(v)) => v,
                _ => unreachable!(),
            };
            let taps = (k[0] * k[1]) as usize;
            let (ho, wo) = if taps == 4 { (5, 3) } else { (4, 2) };
            // offsets whose fractional parts stay away from whole pixels
            let whole = rand(&[dshape[0], dg * 2 * taps, ho, wo], -2.0, 2.0).to_vec::<f64>().unwrap();
            let offv: Vec<f64> = whole.iter().map(|v| v.floor() + 0.2 + 0.6 * (v - v.floor())).collect();
            let off = NDArray::from_vec(offv, &[dshape[0], dg * 2 * taps, ho, wo]).unwrap();
            let mut ins = vec![
                rand(&dshape, -1.0, 1.0),
                off,
                rand(&[dshape[0], dg * taps, ho, wo], 0.1, 0.9),
                rand(&[filters, dshape[1] / groups, k[0] as usize, k[1] as usize], -1.0, 1.0),
            ];
            if !no_bias {
                ins.push(rand(&[filters], -1.0, 1.0));
            }
            let mut checker = OpChecker::new(OP, &ins);
            for (name, v) in attrs.iter() {
                checker = checker.attr(name, v.clone());
            }
            let report = checker.run().unwrap();
            assert!(report.grad_entries > 0);
        }
    }

    #[test]
    fn malformed_calls_err() {
        let x = rand(&[1, 2, 4, 4], -1.0, 1.0);
        let off = rand(&[1, 8, 3, 3], -1.0, 1.0);
        let mask = rand(&[1, 4, 3, 3], 0.0, 1.0);
        let w = rand(&[2, 2, 2, 2], -1.0, 1.0);
        let base =
            [("kernel", pair(2, 2)), ("num_filter", AttrValue::from(2usize)), ("no_bias", true.into())];
        assert!(invoke1(OP, &[&x, &off, &mask, &w], &base).is_ok());
        let bad_mask = rand(&[1, 3, 3, 3], 0.0, 1.0);
        let e = invoke1(OP, &[&x, &off, &bad_mask, &w], &base).unwrap_err();
        assert!(e.to_string().contains("mask"), "{e}");
        let k3 = [
            ("kernel", AttrValue::Ints(vec![2, 2, 2])),
            ("num_filter", AttrValue::from(2usize)),
            ("no_bias", true.into()),
        ];
        assert!(invoke1(OP, &[&x, &off, &mask, &w], &k3).is_err());
        let mut step = base.to_vec();
        step.push(("im2col_step", AttrValue::from(0usize)));
        assert!(invoke1(OP, &[&x, &off, &mask, &w], &step).is_err());
    }
}
