//! Depth-wise convolution (one input channel and one filter per group:
//! `num_group == channels == num_filter`) computed directly, without
//! im2col: for each (image, channel) plane and each kernel tap, one scaled
//! add of a stretch of input row into a stretch of output row — contiguous
//! for stride 1, so it vectorises. The backward pass runs the same loops
//! the other way (data gradient) or as dot products (weight gradient).
//! Planes are split over the thread pool.

use super::geometry::Geom3;
use super::sums::lane_dot;
use num_traits::Zero;
use oxnet_core::{parallel, FloatElement};

/// The output positions `lo..hi` along axis `a` whose input coordinate for
/// tap `t` lies inside the input.
#[inline]
fn valid(g: &Geom3, a: usize, t: usize) -> (usize, usize) {
    let off = (t * g.d[a]) as isize - g.p[a];
    let s = g.s[a] as isize;
    // first o with o*s + off >= 0, and one past the last with o*s + off <= inp - 1
    let lo = if off >= 0 { 0 } else { ((-off) + s - 1) / s };
    let last = g.inp[a] as isize - 1 - off;
    let hi = if last < 0 { 0 } else { last / s + 1 };
    let hi = (hi as usize).min(g.out[a]);
    ((lo as usize).min(hi), hi)
}

/// Calls `f(tap, out_index, in_index, len, in_stride)` for every tap and
/// every output row stretch whose inputs lie inside the plane: outputs
/// `out_index..out_index + len` read inputs `in_index + j · in_stride`.
#[inline]
fn for_each_stretch(g: &Geom3, mut f: impl FnMut(usize, usize, usize, usize, usize)) {
    let mut tap = 0;
    for t0 in 0..g.k[0] {
        let (a_lo, a_hi) = valid(g, 0, t0);
        for t1 in 0..g.k[1] {
            let (b_lo, b_hi) = valid(g, 1, t1);
            for t2 in 0..g.k[2] {
                let (c_lo, c_hi) = valid(g, 2, t2);
                if c_hi > c_lo {
                    for o0 in a_lo..a_hi {
                        let z0 = g.coord(0, o0, t0) as usize;
                        for o1 in b_lo..b_hi {
                            let z1 = g.coord(1, o1, t1) as usize;
                            let out = (o0 * g.out[1] + o1) * g.out[2] + c_lo;
                            let inp = (z0 * g.inp[1] + z1) * g.inp[2] + g.coord(2, c_lo, t2) as usize;
                            f(tap, out, inp, c_hi - c_lo, g.s[2]);
                        }
                    }
                }
                tap += 1;
            }
        }
    }
}

/// Planes per parallel task.
fn planes_per_task(planes: usize) -> usize {
    planes.div_ceil(parallel::num_threads() * 4).max(1)
}

/// The forward pass: `y` (all `n · c` output planes) gets the convolution
/// of `x` with the per-channel filters `w` (`c · taps`), plus `bias`;
/// added to `y` when `accumulate`.
#[allow(clippy::too_many_arguments)]
pub(super) fn forward<T: FloatElement>(
    g: &Geom3,
    c: usize,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    y: &mut [T],
    accumulate: bool,
) {
    let (ins, outs, taps) = (g.in_size(), g.out_size(), g.k.iter().product::<usize>());
    if outs == 0 {
        return;
    }
    let per = planes_per_task(y.len() / outs);
    parallel::for_each_chunk_mut(y, per * outs, |t, ys| {
        let mut acc = vec![T::Compute::zero(); outs];
        for (k, yp) in ys.chunks_mut(outs).enumerate() {
            let plane = t * per + k;
            let ch = plane % c;
            let xp = &x[plane * ins..][..ins];
            let b = bias.map_or(T::Compute::zero(), |b| b[ch].to_compute());
            acc.fill(b);
            let wc = &w[ch * taps..][..taps];
            for_each_stretch(g, |tap, o, i, len, stride| {
                let wv = wc[tap].to_compute();
                let dst = &mut acc[o..o + len];
                if stride == 1 {
                    for (a, v) in dst.iter_mut().zip(&xp[i..i + len]) {
                        *a = *a + wv * v.to_compute();
                    }
                } else {
                    for (j, a) in dst.iter_mut().enumerate() {
                        *a = *a + wv * xp[i + j * stride].to_compute();
                    }
                }
            });
            for (o, a) in yp.iter_mut().zip(&acc) {
                *o = T::from_compute(if accumulate { o.to_compute() + *a } else { *a });
            }
        }
    });
}

/// The data gradient: `dx` (all `n · c` input planes, compute type) gets
/// every output gradient spread back over the inputs its filter read.
pub(super) fn data_grad<T: FloatElement>(g: &Geom3, c: usize, dy: &[T], w: &[T], dx: &mut [T::Compute]) {
    let (ins, outs, taps) = (g.in_size(), g.out_size(), g.k.iter().product::<usize>());
    if ins == 0 || outs == 0 {
        return;
    }
    let per = planes_per_task(dx.len() / ins);
    parallel::for_each_chunk_mut(dx, per * ins, |t, dxs| {
        for (k, dxp) in dxs.chunks_mut(ins).enumerate() {
            let plane = t * per + k;
            let ch = plane % c;
            let dyp = &dy[plane * outs..][..outs];
            let wc = &w[ch * taps..][..taps];
            for_each_stretch(g, |tap, o, i, len, stride| {
                let wv = wc[tap].to_compute();
                let src = &dyp[o..o + len];
                if stride == 1 {
                    for (d, v) in dxp[i..i + len].iter_mut().zip(src) {
                        *d = *d + wv * v.to_compute();
                    }
                } else {
                    for (j, v) in src.iter().enumerate() {
                        let d = &mut dxp[i + j * stride];
                        *d = *d + wv * v.to_compute();
                    }
                }
            });
        }
    });
}

/// The weight gradient (`c · taps`, compute type): per channel and tap,
/// the sum over images of out_grad times the inputs that tap read.
pub(super) fn weight_grad<T: FloatElement>(
    g: &Geom3,
    n: usize,
    c: usize,
    dy: &[T],
    x: &[T],
) -> Vec<T::Compute> {
    let (ins, outs, taps) = (g.in_size(), g.out_size(), g.k.iter().product::<usize>());
    let planes = n * c;
    let per = planes_per_task(planes);
    let parts = parallel::map(planes.div_ceil(per), |t| {
        let mut dw = vec![T::Compute::zero(); c * taps];
        for plane in t * per..((t + 1) * per).min(planes) {
            let ch = plane % c;
            let (xp, dyp) = (&x[plane * ins..][..ins], &dy[plane * outs..][..outs]);
            let dwc = &mut dw[ch * taps..][..taps];
            for_each_stretch(g, |tap, o, i, len, stride| {
                let src = &dyp[o..o + len];
                let s = if stride == 1 {
                    lane_dot(src, &xp[i..i + len])
                } else {
                    src.iter().enumerate().fold(T::Compute::zero(), |s, (j, d)| {
                        s + d.to_compute() * xp[i + j * stride].to_compute()
                    })
                };
                dwc[tap] = dwc[tap] + s;
            });
        }
        dw
    });
    let mut dw = vec![T::Compute::zero(); c * taps];
    for part in parts {
        for (s, v) in dw.iter_mut().zip(part) {
            *s = *s + v;
        }
    }
    dw
}
