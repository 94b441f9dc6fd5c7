//! `Pooling`'s kernels: max, average, sum and Lp pooling over 1 to 3
//! spatial axes, one (batch, channel) plane at a time, with a backward
//! kernel (the max's gradient goes to the first largest element of each
//! window, as in MXNet).

use super::params::{infer_shape, pool_params, window, Convention, PoolParams, PoolType};
use crate::conv::geometry::Geom3;
use crate::conv::layout;
use num_traits::{Float, NumCast, One, Zero};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray,
    OpContext, OpDef, Result,
};

/// One window along the three axes: clipped `[lo, hi)` per axis and the
/// element count an average divides by.
struct Span {
    lo: [usize; 3],
    hi: [usize; 3],
    count: usize,
}

/// The window of output position `o` (pads after each axis from `after`).
fn span(g: &Geom3, after: &[usize; 3], o: [usize; 3], include_pad: bool) -> Span {
    let mut lo = [0; 3];
    let mut hi = [0; 3];
    let mut padded = 1;
    let mut inner = 1;
    for a in 0..3 {
        let start = (o[a] * g.s[a]) as isize - g.p[a];
        let end = (start + g.k[a] as isize).min((g.inp[a] + after[a]) as isize);
        padded *= (end - start).max(0) as usize;
        let (l, h) = (start.max(0) as usize, end.clamp(0, g.inp[a] as isize) as usize);
        lo[a] = l;
        hi[a] = h.max(l);
        inner *= hi[a] - lo[a];
    }
    Span { lo, hi, count: if include_pad { padded } else { inner } }
}

/// Calls `f(input index)` for every input element of a window, in scan order.
#[inline]
fn each_in(g: &Geom3, s: &Span, mut f: impl FnMut(usize)) {
    for z0 in s.lo[0]..s.hi[0] {
        for z1 in s.lo[1]..s.hi[1] {
            let row = (z0 * g.inp[1] + z1) * g.inp[2];
            for z2 in s.lo[2]..s.hi[2] {
                f(row + z2);
            }
        }
    }
}

/// The window of every output position of a plane, in order (the same for
/// every plane of a call, so computed once).
fn spans(g: &Geom3, after: &[usize; 3], include_pad: bool) -> Vec<Span> {
    let mut v = Vec::with_capacity(g.out_size());
    for a in 0..g.out[0] {
        for b in 0..g.out[1] {
            for c in 0..g.out[2] {
                v.push(span(g, after, [a, b, c], include_pad));
            }
        }
    }
    v
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

fn cast<C: Float>(v: f64) -> C {
    <C as NumCast>::from(v).unwrap_or_else(C::zero)
}

fn pool_plane<T: FloatElement>(p: &PoolParams, g: &Geom3, windows: &[Span], x: &[T], y: &mut [T]) {
    for (s, out) in windows.iter().zip(y.iter_mut()) {
        let v = match p.pool_type {
            PoolType::Max => {
                let mut m = <T::Compute as Float>::min_value();
                each_in(g, s, |i| m = m.max(x[i].to_compute()));
                m
            }
            PoolType::Sum | PoolType::Avg => {
                let mut acc = T::Compute::zero();
                each_in(g, s, |i| acc = acc + x[i].to_compute());
                if p.pool_type == PoolType::Avg {
                    if s.count == 0 {
                        T::Compute::zero()
                    } else {
                        acc / cast(s.count as f64)
                    }
                } else {
                    acc
                }
            }
            PoolType::Lp(pv) => {
                let mut acc = T::Compute::zero();
                each_in(g, s, |i| acc = acc + x[i].to_compute().powi(pv));
                match pv {
                    1 => acc,
                    2 => acc.sqrt(),
                    _ => acc.powf(cast::<T::Compute>(1.0 / pv as f64)),
                }
            }
        };
        *out = T::from_compute(v);
    }
}

fn unpool_plane<T: FloatElement>(
    p: &PoolParams,
    g: &Geom3,
    windows: &[Span],
    x: &[T],
    y: &[T],
    dy: &[T],
    dx: &mut [T::Compute],
) {
    for ((s, gy), yv) in windows.iter().zip(dy).zip(y) {
        let gy = gy.to_compute();
        match p.pool_type {
            PoolType::Max => {
                let mut best: Option<(usize, T::Compute)> = None;
                each_in(g, s, |i| {
                    let v = x[i].to_compute();
                    if best.is_none_or(|(_, b)| v > b) {
                        best = Some((i, v));
                    }
                });
                if let Some((i, _)) = best {
                    dx[i] = dx[i] + gy;
                }
            }
            PoolType::Sum => each_in(g, s, |i| dx[i] = dx[i] + gy),
            PoolType::Avg => {
                if s.count > 0 {
                    let share = gy / cast(s.count as f64);
                    each_in(g, s, |i| dx[i] = dx[i] + share);
                }
            }
            PoolType::Lp(pv) => {
                // d/dx (sum x^p)^(1/p) = (x / y)^(p-1)
                let yv = yv.to_compute();
                each_in(g, s, |i| {
                    let d = if pv == 1 { T::Compute::one() } else { (x[i].to_compute() / yv).powi(pv - 1) };
                    dx[i] = dx[i] + gy * d;
                });
            }
        }
    }
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
    let windows = spans(&g, &after, p.count_include_pad);
    let (ins, outs) = (g.in_size(), g.out_size());
    oxnet_core::with_float_dtype!(inputs[0].dtype(), T => {
        let x = inputs[0].as_slice::<T>()?;
        let mut y = vec![T::zero(); oxnet_core::shape::numel(outputs[0].shape())];
        if outs > 0 && ins > 0 {
            let chunk = outs * (x.len() / ins).div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
            oxnet_core::parallel::for_each_chunk_mut(&mut y, chunk, |t, ys| {
                let first = t * chunk / outs;
                for (k, plane) in ys.chunks_mut(outs).enumerate() {
                    pool_plane(p, &g, &windows, &x[(first + k) * ins..][..ins], plane);
                }
            });
        }
        store_slice(ctx.req[0], outputs[0].as_mut_slice::<T>()?, &y);
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
    let windows = spans(&g, &after, p.count_include_pad);
    let (ins, outs) = (g.in_size(), g.out_size());
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let (xs, ys, dys) = (x.as_slice::<T>()?, y.as_slice::<T>()?, dy.as_slice::<T>()?);
        let mut dx = vec![<<T as FloatElement>::Compute as Zero>::zero(); xs.len()];
        if outs > 0 && ins > 0 {
            let chunk = ins * (xs.len() / ins).div_ceil(oxnet_core::parallel::num_threads() * 4).max(1);
            oxnet_core::parallel::for_each_chunk_mut(&mut dx, chunk, |t, dxs| {
                let first = t * chunk / ins;
                for (k, plane) in dxs.chunks_mut(ins).enumerate() {
                    let n = first + k;
                    let (xp, yp, dyp) = (&xs[n * ins..][..ins], &ys[n * outs..][..outs], &dys[n * outs..][..outs]);
                    unpool_plane(p, &g, &windows, xp, yp, dyp, plane);
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
