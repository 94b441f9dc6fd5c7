//! BatchNorm's passes over data seen as `(outer, channels, inner)`
//! ([`ChannelView`]): per-channel sums and element-wise writes, split over
//! the thread pool by runs of whole outer blocks (`channels · inner`
//! elements each), with eight partial sums per run so that the additions
//! vectorise.

use super::params::ChannelView;
use oxnet_core::{parallel, FloatElement};

/// Arrays with fewer elements run on the calling thread.
const PAR_MIN: usize = 32 * 1024;

/// Outer blocks per parallel task.
fn blocks_per_task(v: &ChannelView) -> usize {
    let block = (v.channels * v.inner).max(1);
    if v.outer * block < PAR_MIN {
        v.outer.max(1)
    } else {
        v.outer.div_ceil(parallel::num_threads() * 4).max(1)
    }
}

/// `Σ f(a, b)` over two equally long runs in f64, eight partial sums.
#[inline]
fn sum8_pair<T: FloatElement>(a: &[T], b: &[T], f: impl Fn(f64, f64) -> f64) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| f(x.to_f64(), y.to_f64())).sum();
    for (x8, y8) in ca.zip(cb) {
        for ((s, x), y) in acc.iter_mut().zip(x8).zip(y8) {
            *s += f(x.to_f64(), y.to_f64());
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Per channel, the sums `K` functions of its elements make: `run(ch, xs,
/// ys)` gives the `K` sums of one contiguous run of channel `ch` (`ys` the
/// same run of `y`, an empty slice when `y` is `None`).
pub(crate) fn channel_sums<T: FloatElement, const K: usize>(
    v: &ChannelView,
    x: &[T],
    y: Option<&[T]>,
    run: impl Fn(usize, &[T], &[T]) -> [f64; K] + Sync,
) -> [Vec<f64>; K] {
    let per = blocks_per_task(v);
    let tasks = v.outer.div_ceil(per);
    let parts = parallel::map(tasks, |t| {
        let mut acc = vec![[0.0f64; K]; v.channels];
        for o in t * per..((t + 1) * per).min(v.outer) {
            for (c, a) in acc.iter_mut().enumerate() {
                let start = (o * v.channels + c) * v.inner;
                let r = start..start + v.inner;
                let sums = run(c, &x[r.clone()], y.map_or(&[][..], |y| &y[r]));
                for (s, add) in a.iter_mut().zip(sums) {
                    *s += add;
                }
            }
        }
        acc
    });
    std::array::from_fn(|k| (0..v.channels).map(|c| parts.iter().map(|p| p[c][k]).sum()).collect())
}

/// Sum of a run (f64).
pub(crate) fn run_sum<T: FloatElement>(xs: &[T]) -> f64 {
    super::lanes::sum8(xs, |e| e)
}

/// Sum of squared distances of a run from `mu` (f64).
pub(crate) fn run_sq_dev<T: FloatElement>(xs: &[T], mu: f64) -> f64 {
    super::lanes::sum8(xs, |e| (e - mu) * (e - mu))
}

/// `(Σ dy, Σ dy · (x - mu))` of one run.
pub(crate) fn run_grad_sums<T: FloatElement>(x: &[T], dy: &[T], mu: f64) -> [f64; 2] {
    [super::lanes::sum8(dy, |d| d), sum8_pair(x, dy, |xv, d| d * (xv - mu))]
}

/// Writes `out[i] = f(channel, x[i], y[i])` for every element, in
/// parallel over outer blocks (`y`: a second input of the same layout, or
/// `None`). The per-channel closure `coef(ch)` is called once per run and
/// its result handed to `f`, so per-channel constants are looked up once.
pub(crate) fn channel_map<T: FloatElement, C: Copy>(
    v: &ChannelView,
    x: &[T],
    y: Option<&[T]>,
    out: &mut [T],
    coef: impl Fn(usize) -> C + Sync,
    f: impl Fn(C, T::Compute, T::Compute) -> T::Compute + Sync,
) {
    let block = v.channels * v.inner;
    if block == 0 || out.is_empty() {
        return;
    }
    let per = blocks_per_task(v);
    parallel::for_each_chunk_mut(out, per * block, |t, chunk| {
        for (k, ob) in chunk.chunks_mut(block).enumerate() {
            let base = (t * per + k) * block;
            for (c, orun) in ob.chunks_mut(v.inner).enumerate() {
                let k = coef(c);
                let start = base + c * v.inner;
                let xr = &x[start..start + v.inner];
                match y {
                    Some(y) => {
                        for ((o, a), b) in orun.iter_mut().zip(xr).zip(&y[start..start + v.inner]) {
                            *o = T::from_compute(f(k, a.to_compute(), b.to_compute()));
                        }
                    }
                    None => {
                        for (o, a) in orun.iter_mut().zip(xr) {
                            *o = T::from_compute(f(k, a.to_compute(), a.to_compute()));
                        }
                    }
                }
            }
        }
    });
}
