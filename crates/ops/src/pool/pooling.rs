//! `Pooling`'s kernels: max, average, sum and Lp pooling over 1 to 3
//! spatial axes, one (batch, channel) plane at a time, with a backward
//! kernel (the max's gradient goes to the first largest element of each
//! window, as in MXNet). Max, sum and average reduce the window's input
//! rows element-wise first (whole rows, which vectorise), then each
//! output its stretch of the reduced row.

use super::max2x2;
use super::params::{infer_shape, pool_params, window, Convention, PoolParams, PoolType};
use crate::conv::geometry::Geom3;
use crate::conv::layout;
use num_traits::{Float, NumCast, One, Zero};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray,
    OpContext, OpDef, Req, Result,
};

/// A window along one axis: the input positions `[lo, hi)` inside the
/// data, and its length counting padding (what an average including the
/// padding divides by).
#[derive(Clone, Copy)]
struct AxisWindow {
    lo: usize,
    hi: usize,
    padded: usize,
}

/// The windows of a plane, per axis (windows are products of one window
/// per axis): `w[a][o]` for output position `o` of axis `a`.
struct Windows {
    w: [Vec<AxisWindow>; 3],
    include_pad: bool,
}

impl Windows {
    /// The windows of geometry `g` (pads after each axis from `after`).
    fn new(g: &Geom3, after: &[usize; 3], include_pad: bool) -> Windows {
        let axis = |a: usize| -> Vec<AxisWindow> {
            (0..g.out[a])
                .map(|o| {
                    let start = (o * g.s[a]) as isize - g.p[a];
                    let end = (start + g.k[a] as isize).min((g.inp[a] + after[a]) as isize);
                    let lo = start.max(0) as usize;
                    let hi = (end.clamp(0, g.inp[a] as isize) as usize).max(lo);
                    AxisWindow { lo, hi, padded: (end - start).max(0) as usize }
                })
                .collect()
        };
        Windows { w: [axis(0), axis(1), axis(2)], include_pad }
    }

    /// What an average over the window `(a, b, c)` divides by.
    fn count(&self, a: AxisWindow, b: AxisWindow, c: AxisWindow) -> usize {
        if self.include_pad {
            a.padded * b.padded * c.padded
        } else {
            (a.hi - a.lo) * (b.hi - b.lo) * (c.hi - c.lo)
        }
    }
}

/// Calls `f(input index)` for every input element of the window
/// `(a, b, c)`, in scan order; stops early when `f` returns false.
#[inline]
fn scan(g: &Geom3, a: AxisWindow, b: AxisWindow, c: AxisWindow, mut f: impl FnMut(usize) -> bool) {
    for z0 in a.lo..a.hi {
        for z1 in b.lo..b.hi {
            let row = (z0 * g.inp[1] + z1) * g.inp[2];
            for z2 in c.lo..c.hi {
                if !f(row + z2) {
                    return;
                }
            }
        }
    }
}

fn cast<C: Float>(v: f64) -> C {
    <C as NumCast>::from(v).unwrap_or_else(C::zero)
}

/// One plane's max, sum or average: for each row of outputs, the window's
/// input rows are first reduced element-wise into one row (which
/// vectorises), then each output reduces its stretch of that row.
fn pool_plane_rows<T: FloatElement>(
    p: &PoolParams,
    g: &Geom3,
    win: &Windows,
    x: &[T],
    y: &mut [T],
    acc: &mut [T::Compute],
) {
    let max = p.pool_type == PoolType::Max;
    let init = if max { <T::Compute as Float>::min_value() } else { T::Compute::zero() };
    let width = g.inp[2];
    let mut outs = y.iter_mut();
    for &a in &win.w[0] {
        for &b in &win.w[1] {
            acc.fill(init);
            for z0 in a.lo..a.hi {
                for z1 in b.lo..b.hi {
                    let row = &x[(z0 * g.inp[1] + z1) * width..][..width];
                    if max {
                        acc.iter_mut().zip(row).for_each(|(s, v)| *s = s.max(v.to_compute()));
                    } else {
                        acc.iter_mut().zip(row).for_each(|(s, v)| *s = *s + v.to_compute());
                    }
                }
            }
            for &c in &win.w[2] {
                let part = &acc[c.lo..c.hi];
                let v = if max {
                    part.iter().fold(init, |m, &v| m.max(v))
                } else {
                    let sum = part.iter().fold(init, |m, &v| m + v);
                    match p.pool_type {
                        PoolType::Avg => match win.count(a, b, c) {
                            0 => T::Compute::zero(),
                            n => sum / cast(n as f64),
                        },
                        _ => sum,
                    }
                };
                if let Some(o) = outs.next() {
                    *o = T::from_compute(v);
                }
            }
        }
    }
}

/// One plane's Lp pooling, `(Σ x^p)^(1/p)` over each window. As in MXNet,
/// the root of p = 3 is the real cube root (negative sums stay negative);
/// other odd p above 3 take `powf` (NaN for a negative sum).
fn pool_plane_lp<T: FloatElement>(pv: i32, g: &Geom3, win: &Windows, x: &[T], y: &mut [T]) {
    let mut outs = y.iter_mut();
    for &a in &win.w[0] {
        for &b in &win.w[1] {
            for &c in &win.w[2] {
                let mut acc = T::Compute::zero();
                scan(g, a, b, c, |i| {
                    acc = acc + x[i].to_compute().powi(pv);
                    true
                });
                let v = match pv {
                    1 => acc,
                    2 => acc.sqrt(),
                    3 => acc.cbrt(),
                    _ => acc.powf(cast::<T::Compute>(1.0 / pv as f64)),
                };
                if let Some(o) = outs.next() {
                    *o = T::from_compute(v);
                }
            }
        }
    }
}

/// The input index of window `(a, b, c)` that receives the gradient of
/// its maximum `yv`: the first element (in scan order) equal to it, or,
/// when none is (a NaN maximum), the first largest, as the forward saw it.
#[inline]
fn max_hit<T: FloatElement>(
    g: &Geom3,
    a: AxisWindow,
    b: AxisWindow,
    c: AxisWindow,
    x: &[T],
    yv: T::Compute,
) -> Option<usize> {
    // Scanned backwards without early exit, so the last match seen is the
    // first in scan order and the choice compiles to a conditional move
    // (where the maximum sits is data-dependent: a branch would mispredict).
    let mut first = usize::MAX;
    for z0 in (a.lo..a.hi).rev() {
        for z1 in (b.lo..b.hi).rev() {
            let row = (z0 * g.inp[1] + z1) * g.inp[2];
            for i in (row + c.lo..row + c.hi).rev() {
                first = if x[i].to_compute() == yv { i } else { first };
            }
        }
    }
    let mut hit = (first != usize::MAX).then_some(first);
    if hit.is_none() {
        let mut best: Option<(usize, T::Compute)> = None;
        scan(g, a, b, c, |i| {
            let v = x[i].to_compute();
            if best.is_none_or(|(_, m)| v > m) {
                best = Some((i, v));
            }
            true
        });
        hit = best.map(|(i, _)| i);
    }
    hit
}

/// True when no two windows share an input element (every axis with more
/// than one window strides at least a kernel's length): then each input
/// element's gradient comes from at most one output.
fn disjoint_windows(g: &Geom3) -> bool {
    (0..3).all(|a| g.out[a] <= 1 || g.s[a] >= g.k[a])
}

/// One plane's max-pooling input gradient when the windows are disjoint:
/// written straight into `dx` (zeros, and each window's gradient at its
/// [`max_hit`]), without an accumulation buffer.
fn unpool_max_disjoint<T: FloatElement>(g: &Geom3, win: &Windows, x: &[T], y: &[T], dy: &[T], dx: &mut [T]) {
    dx.fill(T::zero());
    let mut k = 0;
    for &a in &win.w[0] {
        for &b in &win.w[1] {
            for &c in &win.w[2] {
                if let Some(i) = max_hit(g, a, b, c, x, y[k].to_compute()) {
                    dx[i] = dy[k];
                }
                k += 1;
            }
        }
    }
}

/// One plane's input gradient. Max: each output's gradient goes to the
/// first element of its window (in scan order) equal to its maximum.
/// Sum and average: each row of outputs spreads its gradients over one
/// row, which is then added to every input row of its windows. Lp: the
/// derivative `(x / y)^(p-1)`.
#[allow(clippy::too_many_arguments)]
fn unpool_plane<T: FloatElement>(
    p: &PoolParams,
    g: &Geom3,
    win: &Windows,
    x: &[T],
    y: &[T],
    dy: &[T],
    dx: &mut [T::Compute],
    share: &mut [T::Compute],
) {
    let width = g.inp[2];
    let mut k = 0;
    for &a in &win.w[0] {
        for &b in &win.w[1] {
            match p.pool_type {
                PoolType::Max => {
                    for &c in &win.w[2] {
                        let (yv, gy) = (y[k].to_compute(), dy[k].to_compute());
                        k += 1;
                        if let Some(i) = max_hit(g, a, b, c, x, yv) {
                            dx[i] = dx[i] + gy;
                        }
                    }
                }
                PoolType::Sum | PoolType::Avg => {
                    share.fill(T::Compute::zero());
                    for &c in &win.w[2] {
                        let gy = dy[k].to_compute();
                        k += 1;
                        let v = match (p.pool_type, win.count(a, b, c)) {
                            (PoolType::Sum, _) => gy,
                            (_, 0) => continue,
                            (_, n) => gy / cast(n as f64),
                        };
                        share[c.lo..c.hi].iter_mut().for_each(|s| *s = *s + v);
                    }
                    for z0 in a.lo..a.hi {
                        for z1 in b.lo..b.hi {
                            let row = &mut dx[(z0 * g.inp[1] + z1) * width..][..width];
                            row.iter_mut().zip(share.iter()).for_each(|(d, s)| *d = *d + *s);
                        }
                    }
                }
                PoolType::Lp(pv) => {
                    for &c in &win.w[2] {
                        let (yv, gy) = (y[k].to_compute(), dy[k].to_compute());
                        k += 1;
                        scan(g, a, b, c, |i| {
                            let d = if pv == 1 {
                                T::Compute::one()
                            } else {
                                (x[i].to_compute() / yv).powi(pv - 1)
                            };
                            dx[i] = dx[i] + gy * d;
                            true
                        });
                    }
                }
            }
        }
    }
}

/// The geometry of a call and the padding after each of its three axes.
fn geometry(attrs: &oxnet_core::Attrs, p: &PoolParams, data: &[usize]) -> Result<(Geom3, [usize; 3])> {
    let (win, out) = window(attrs, p, data)?;
    let g = win.geom3(&data[2..], &out[2..]);
    let mut after = [0; 3];
    let lead = 3 - win.nd();
    after[lead..].copy_from_slice(&win.pad_after);
    Ok((g, after))
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = pool_params(ctx.attrs)?;
    if p.layout.channel_last {
        return layout::forward_last(ctx, &p.layout, 1, inputs, outputs, |c, i, o| {
            forward_first(c, &p, i, o)
        });
    }
    forward_first(ctx, &p, inputs, outputs)
}

/// The forward pass over channel-first arrays.
fn forward_first(ctx: &OpContext, p: &PoolParams, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (g, after) = geometry(ctx.attrs, p, inputs[0].shape())?;
    let win = Windows::new(&g, &after, p.count_include_pad);
    let (ins, outs) = (g.in_size(), g.out_size());
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => {
        let x = inputs[0].as_slice::<T>()?;
        let run = |y: &mut [T]| {
            if outs == 0 || ins == 0 {
                return;
            }
            let chunk = outs * (x.len() / ins).div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
            oxnet_core::parallel::for_each_chunk_mut(y, chunk, |t, ys| {
                let first = t * chunk / outs;
                let mut acc = vec![<<T as FloatElement>::Compute as Zero>::zero(); g.inp[2]];
                for (k, plane) in ys.chunks_mut(outs).enumerate() {
                    let xp = &x[(first + k) * ins..][..ins];
                    match p.pool_type {
                        PoolType::Max if max2x2::applies(&g) => max2x2::forward_plane(&g, xp, plane),
                        PoolType::Lp(pv) => pool_plane_lp(pv, &g, &win, xp, plane),
                        _ => pool_plane_rows(p, &g, &win, xp, plane, &mut acc),
                    }
                }
            });
        };
        if ctx.req[0] == Req::Write && outputs[0].is_contiguous() {
            run(outputs[0].as_mut_slice::<T>()?);
        } else {
            let mut y = vec![T::zero(); oxnet_core::shape::numel(outputs[0].shape())];
            run(&mut y);
            store_slice(ctx.req[0], outputs[0].as_mut_slice::<T>()?, &y);
        }
    });
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = pool_params(ctx.attrs)?;
    if p.layout.channel_last {
        return layout::backward_last(ctx, &p.layout, 1, args, grads, |c, a, g| backward_first(c, &p, a, g));
    }
    backward_first(ctx, &p, args, grads)
}

/// The backward pass over channel-first arrays.
fn backward_first(ctx: &OpContext, p: &PoolParams, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let missing = || Error::Autograd("Pooling: the backward kernel lacks a saved array".into());
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
    let x = args.inputs[0].as_ref().ok_or_else(missing)?;
    let y = args.outputs[0].as_ref().ok_or_else(missing)?;
    let (g, after) = geometry(ctx.attrs, p, x.shape())?;
    let win = Windows::new(&g, &after, p.count_include_pad);
    let (ins, outs) = (g.in_size(), g.out_size());
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let (xs, ys, dys) = (x.as_slice::<T>()?, y.as_slice::<T>()?, dy.as_slice::<T>()?);
        let chunk = ins * (xs.len() / ins.max(1)).div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
        if p.pool_type == PoolType::Max
            && disjoint_windows(&g)
            && ctx.req[0] == Req::Write
            && grads[0].is_contiguous()
            && outs > 0
            && ins > 0
        {
            oxnet_core::parallel::for_each_chunk_mut(grads[0].as_mut_slice::<T>()?, chunk, |t, dxs| {
                let first = t * chunk / ins;
                for (k, plane) in dxs.chunks_mut(ins).enumerate() {
                    let n = first + k;
                    let (xp, yp, dyp) = (&xs[n * ins..][..ins], &ys[n * outs..][..outs], &dys[n * outs..][..outs]);
                    if !(max2x2::applies(&g) && max2x2::backward_plane(&g, xp, yp, dyp, plane)) {
                        unpool_max_disjoint(&g, &win, xp, yp, dyp, plane);
                    }
                }
            });
            return Ok(());
        }
        let mut dx = vec![<<T as FloatElement>::Compute as Zero>::zero(); xs.len()];
        if outs > 0 && ins > 0 {
            oxnet_core::parallel::for_each_chunk_mut(&mut dx, chunk, |t, dxs| {
                let first = t * chunk / ins;
                let mut share = vec![<<T as FloatElement>::Compute as Zero>::zero(); g.inp[2]];
                for (k, plane) in dxs.chunks_mut(ins).enumerate() {
                    let n = first + k;
                    let (xp, yp, dyp) = (&xs[n * ins..][..ins], &ys[n * outs..][..outs], &dys[n * outs..][..outs]);
                    unpool_plane(p, &g, &win, xp, yp, dyp, plane, &mut share);
                }
            });
        }
        let dx: Vec<T> = dx.into_iter().map(T::from_compute).collect();
        store_slice(ctx.req[0], grads[0].as_mut_slice::<T>()?, &dx);
    });
    Ok(())
}

pub(super) fn register() {
    let none = AttrValue::None;
    registry::register(
        OpDef::new("Pooling")
            .doc(
                "Pooling over 1 to 3 spatial axes of data (batch, channel, *spatial): max, avg, sum or \
                 lp (`(sum x^p)^(1/p)`, with p_value) over each window. pooling_convention 'valid' \
                 gives floor((x + 2·pad - kernel) / stride) + 1 outputs per axis, 'full' rounds up, \
                 'same' gives ceil(x / stride) with the padding split over both ends. global_pool \
                 pools each whole plane. Averages count padded positions unless \
                 count_include_pad=False; max ignores padding. With layout NWC, NHWC or NDHWC the \
                 channel axis is last in data and output.",
            )
            .attr(AttrSpec::optional(
                "kernel",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "Window size: (w,), (h, w) or (d, h, w).",
            ))
            .attr(AttrSpec::optional(
                "pool_type",
                AttrKind::Choice(vec!["avg", "lp", "max", "sum"]),
                "max",
                "Pooling function.",
            ))
            .attr(AttrSpec::optional(
                "global_pool",
                AttrKind::Bool,
                false,
                "Pool over the whole spatial extent.",
            ))
            .attr(AttrSpec::optional(
                "cudnn_off",
                AttrKind::Bool,
                false,
                "Accepted for compatibility; ignored.",
            ))
            .attr(AttrSpec::optional(
                "pooling_convention",
                AttrKind::Choice(vec!["full", "same", "valid"]),
                "valid",
                "How output extents are rounded.",
            ))
            .attr(AttrSpec::optional(
                "stride",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "Stride per axis (default 1).",
            ))
            .attr(AttrSpec::optional(
                "pad",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "Padding per axis (default 0).",
            ))
            .attr(AttrSpec::optional("p_value", AttrKind::OptInt, none, "The p of lp pooling."))
            .attr(AttrSpec::optional(
                "count_include_pad",
                AttrKind::Str,
                "None",
                "Whether averages count padded positions (None: True).",
            ))
            .attr(AttrSpec::optional(
                "layout",
                AttrKind::Str,
                "None",
                "Data layout: None (NCW, NCHW or NCDHW by data rank), NCW, NCHW, NCDHW, or channel-last NWC, \
                 NHWC or NDHWC.",
            ))
            .prepare(|attrs| {
                let p = pool_params(attrs)?;
                if !p.global && attrs.ints("kernel")?.is_empty() {
                    return Err(Error::attr(
                        "kernel",
                        "Pooling: `kernel` is required unless global_pool is set",
                    ));
                }
                if p.convention == Convention::Same && attrs.ints("pad")?.iter().any(|&v| v != 0) {
                    return Err(Error::attr("pad", "Pooling: pooling_convention='same' needs pad 0"));
                }
                Ok(std::sync::Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .forward(forward)
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0], outputs: vec![0] }, backward),
    );
}
