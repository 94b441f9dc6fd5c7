//! The kernels `LayerNorm`, `GroupNorm` and `InstanceNorm` share: data seen
//! as `(outer, n, inner)`, every lane `(o, ·, i)` of `n` elements
//! normalised on its own to zero mean and unit variance, then scaled by
//! gamma and shifted by beta.
//!
//! A block is the `n · inner` elements of one `o`; the pool takes runs of
//! whole blocks ([`for_block_runs`]). Each block is read twice for its
//! statistics (mean, then the centred sum of squares, both accumulated in
//! f64) and once more to write the output; when `inner` is 1 (a lane is a
//! contiguous row, the common case) the loops run straight over the row.

use oxnet_core::{parallel, FloatElement};

/// Arrays with fewer elements run on the calling thread.
const PAR_MIN: usize = 32 * 1024;
/// Elements per parallel task (rounded to whole blocks).
const PAR_CHUNK: usize = 16 * 1024;

/// Data seen as `(outer, n, inner)`, normalised over `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lanes {
    /// Product of the axes before the normalised ones.
    pub outer: usize,
    /// Elements in each lane.
    pub n: usize,
    /// Product of the axes after the normalised ones.
    pub inner: usize,
}

impl Lanes {
    /// Elements of one block (one `o`).
    pub fn block(&self) -> usize {
        self.n * self.inner
    }

    /// Number of lanes (the size of the statistics).
    pub fn count(&self) -> usize {
        self.outer * self.inner
    }

    /// Blocks per parallel task.
    fn blocks_per_task(&self) -> usize {
        let block = self.block().max(1);
        if self.outer * block < PAR_MIN {
            self.outer.max(1)
        } else {
            (PAR_CHUNK / block).max(1)
        }
    }
}

/// Splits `data` (`per_block` elements per block of `lanes`) into runs of
/// whole blocks and calls `f(first block, run, accumulator)` for each on
/// the pool, every run with an accumulator from `init`; returns the
/// accumulators in run order.
pub(crate) fn for_block_runs<T: Send, A: Send>(
    lanes: Lanes,
    data: &mut [T],
    per_block: usize,
    init: impl Fn() -> A,
    f: impl Fn(usize, &mut [T], &mut A) + Sync,
) -> Vec<A> {
    if per_block == 0 || data.is_empty() {
        return Vec::new();
    }
    let bpt = lanes.blocks_per_task();
    let mut parts: Vec<(usize, &mut [T], A)> =
        data.chunks_mut(bpt * per_block).enumerate().map(|(t, c)| (t * bpt, c, init())).collect();
    parallel::for_each_chunk_mut(&mut parts, 1, |_, p| {
        let (first, run, acc) = &mut p[0];
        f(*first, run, acc)
    });
    parts.into_iter().map(|p| p.2).collect()
}

/// Where gamma and beta apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Affine {
    /// One value per position `k` along the normalised axis (`LayerNorm`).
    PerPosition,
    /// One value per block, `gamma[o % period]` (`GroupNorm`'s groups,
    /// `InstanceNorm`'s channels).
    PerBlock(usize),
}

/// `Σ f(x)` over `xs` in f64, with eight independent partial sums (so
/// that the additions pipeline and vectorise).
#[inline]
pub(crate) fn sum8<T: FloatElement>(xs: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0f64; 8];
    let chunks = xs.chunks_exact(8);
    let tail: f64 = chunks.remainder().iter().map(|v| f(v.to_f64())).sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(v.to_f64());
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Mean and inverse standard deviation of each lane of one block, with
/// the standard deviation `sqrt(var + eps)`: `(mean, std, invstd)`, each
/// `inner` long.
fn block_stats<T: FloatElement>(xb: &[T], n: usize, inner: usize, eps: f64) -> [Vec<f64>; 3] {
    let nf = n.max(1) as f64;
    let (mean, var) = if inner == 1 {
        let m = sum8(xb, |v| v) / nf;
        let v = sum8(xb, |v| (v - m) * (v - m)) / nf;
        (vec![m], vec![v])
    } else {
        let mut m = vec![0.0; inner];
        for row in xb.chunks_exact(inner) {
            m.iter_mut().zip(row).for_each(|(s, v)| *s += v.to_f64());
        }
        m.iter_mut().for_each(|s| *s /= nf);
        let mut v = vec![0.0; inner];
        for row in xb.chunks_exact(inner) {
            v.iter_mut().zip(row).zip(&m).for_each(|((s, x), mu)| *s += (x.to_f64() - mu).powi(2));
        }
        v.iter_mut().for_each(|s| *s /= nf);
        (m, v)
    };
    let std: Vec<f64> = var.iter().map(|v| (v + eps).sqrt()).collect();
    let invstd = std.iter().map(|s| 1.0 / s).collect();
    [mean, std, invstd]
}

/// What the forward pass needs besides the data.
pub(crate) struct Normalize<'a> {
    /// The lane view of the data.
    pub lanes: Lanes,
    /// Added to the variance.
    pub eps: f64,
    /// The scale, as f64.
    pub gamma: &'a [f64],
    /// The shift, as f64.
    pub beta: &'a [f64],
    /// Where gamma and beta apply.
    pub affine: Affine,
}

/// Normalises `x` into `y` and returns each lane's mean and standard
/// deviation `sqrt(var + eps)`, in lane order `(o, i)`.
pub(crate) fn forward<T: FloatElement>(p: &Normalize, x: &[T], y: &mut [T]) -> (Vec<f64>, Vec<f64>) {
    let Lanes { n, inner, .. } = p.lanes;
    let block = p.lanes.block();
    let cast = |v: &[f64]| -> Vec<T::Compute> { v.iter().map(|&e| T::from_f64(e).to_compute()).collect() };
    let (gc, bc) = (cast(p.gamma), cast(p.beta));
    if block == 0 {
        // empty lanes: no elements, so the mean of none is taken as 0
        return (vec![0.0; p.lanes.count()], vec![p.eps.sqrt(); p.lanes.count()]);
    }
    let runs = for_block_runs(
        p.lanes,
        y,
        block,
        || (Vec::new(), Vec::new()),
        |first, run, acc| {
            for (b, yb) in run.chunks_exact_mut(block).enumerate() {
                let o = first + b;
                let xb = &x[o * block..][..block];
                let [mean, std, invstd] = block_stats(xb, n, inner, p.eps);
                let to_c = |v: &[f64]| -> Vec<T::Compute> {
                    v.iter().map(|&e| T::from_f64(e).to_compute()).collect()
                };
                match p.affine {
                    Affine::PerPosition if inner == 1 => {
                        let m = T::from_f64(mean[0]).to_compute();
                        let is = T::from_f64(invstd[0]).to_compute();
                        for (((yo, xv), g), s) in yb.iter_mut().zip(xb).zip(&gc).zip(&bc) {
                            *yo = T::from_compute((xv.to_compute() - m) * is * *g + *s);
                        }
                    }
                    Affine::PerPosition => {
                        let (mc, ic) = (to_c(&mean), to_c(&invstd));
                        for (k, (yr, xr)) in
                            yb.chunks_exact_mut(inner).zip(xb.chunks_exact(inner)).enumerate()
                        {
                            let (g, s) = (gc[k], bc[k]);
                            for (((yo, xv), m), is) in yr.iter_mut().zip(xr).zip(&mc).zip(&ic) {
                                *yo = T::from_compute((xv.to_compute() - *m) * *is * g + s);
                            }
                        }
                    }
                    Affine::PerBlock(period) => {
                        let (g, s) = (p.gamma[o % period], p.beta[o % period]);
                        let scale: Vec<f64> = invstd.iter().map(|is| g * is).collect();
                        let shift =
                            to_c(&scale.iter().zip(&mean).map(|(sc, m)| s - m * sc).collect::<Vec<_>>());
                        let scale = to_c(&scale);
                        for (yr, xr) in yb.chunks_exact_mut(inner).zip(xb.chunks_exact(inner)) {
                            for (((yo, xv), sc), sh) in yr.iter_mut().zip(xr).zip(&scale).zip(&shift) {
                                *yo = T::from_compute(xv.to_compute() * *sc + *sh);
                            }
                        }
                    }
                }
                acc.0.extend_from_slice(&mean);
                acc.1.extend_from_slice(&std);
            }
        },
    );
    let mut mean = Vec::with_capacity(p.lanes.count());
    let mut std = Vec::with_capacity(p.lanes.count());
    for (m, s) in runs {
        mean.extend(m);
        std.extend(s);
    }
    (mean, std)
}

/// The gradients of [`forward`]'s output: `dx` written into `dx`, and the
/// gradients of gamma and beta returned.
pub(crate) fn backward<T: FloatElement>(
    p: &Normalize,
    x: &[T],
    dy: &[T],
    dx: &mut [T],
) -> (Vec<f64>, Vec<f64>) {
    let Lanes { n, inner, .. } = p.lanes;
    let block = p.lanes.block();
    let params = p.gamma.len();
    let nf = n.max(1) as f64;
    let runs = for_block_runs(
        p.lanes,
        dx,
        block,
        || (vec![0.0; params], vec![0.0; params]),
        |first, run, (dgamma, dbeta)| {
            for (b, db) in run.chunks_exact_mut(block).enumerate() {
                let o = first + b;
                let xb = &x[o * block..][..block];
                let gb = &dy[o * block..][..block];
                let [mean, _, invstd] = block_stats(xb, n, inner, p.eps);
                if inner == 1 {
                    let stats = (mean[0], invstd[0], nf);
                    row_backward(p, o, stats, xb, gb, db, dgamma, dbeta);
                    continue;
                }
                let gamma_of = |k: usize| match p.affine {
                    Affine::PerPosition => k,
                    Affine::PerBlock(period) => o % period,
                };
                // per lane: Σ dxhat and Σ dxhat·xhat, with dxhat = dy·gamma
                let mut s1 = vec![0.0; inner];
                let mut s2 = vec![0.0; inner];
                for (k, (xr, gr)) in xb.chunks_exact(inner).zip(gb.chunks_exact(inner)).enumerate() {
                    let j = gamma_of(k);
                    let g = p.gamma[j];
                    for i in 0..inner {
                        let xhat = (xr[i].to_f64() - mean[i]) * invstd[i];
                        let d = gr[i].to_f64();
                        s1[i] += d * g;
                        s2[i] += d * g * xhat;
                        dgamma[j] += d * xhat;
                        dbeta[j] += d;
                    }
                }
                for (k, ((dr, xr), gr)) in db
                    .chunks_exact_mut(inner)
                    .zip(xb.chunks_exact(inner))
                    .zip(gb.chunks_exact(inner))
                    .enumerate()
                {
                    let g = p.gamma[gamma_of(k)];
                    for i in 0..inner {
                        let xhat = (xr[i].to_f64() - mean[i]) * invstd[i];
                        let v = invstd[i] * (gr[i].to_f64() * g - s1[i] / nf - xhat * s2[i] / nf);
                        dr[i] = T::from_f64(v);
                    }
                }
            }
        },
    );
    let mut dgamma = vec![0.0; params];
    let mut dbeta = vec![0.0; params];
    for (g, b) in runs {
        dgamma.iter_mut().zip(g).for_each(|(a, v)| *a += v);
        dbeta.iter_mut().zip(b).for_each(|(a, v)| *a += v);
    }
    (dgamma, dbeta)
}

/// [`backward`] for one block whose lane is a contiguous row (`inner` is
/// 1), with the row's `(mean, invstd, n)`.
#[allow(clippy::too_many_arguments)]
fn row_backward<T: FloatElement>(
    p: &Normalize,
    o: usize,
    (mean, invstd, nf): (f64, f64, f64),
    x: &[T],
    dy: &[T],
    dx: &mut [T],
    dgamma: &mut [f64],
    dbeta: &mut [f64],
) {
    let xhat = |v: &T| (v.to_f64() - mean) * invstd;
    match p.affine {
        Affine::PerPosition => {
            let (mut s1, mut s2) = (0.0, 0.0);
            for (k, (v, d)) in x.iter().zip(dy).enumerate() {
                let (h, d) = (xhat(v), d.to_f64());
                let dh = d * p.gamma[k];
                s1 += dh;
                s2 += dh * h;
                dgamma[k] += d * h;
                dbeta[k] += d;
            }
            let (m1, m2) = (s1 / nf, s2 / nf);
            for (((o, v), d), g) in dx.iter_mut().zip(x).zip(dy).zip(p.gamma) {
                *o = T::from_f64(invstd * (d.to_f64() * g - m1 - xhat(v) * m2));
            }
        }
        Affine::PerBlock(period) => {
            let j = o % period;
            let (mut sd, mut sdh) = (0.0, 0.0);
            for (v, d) in x.iter().zip(dy) {
                let d = d.to_f64();
                sd += d;
                sdh += d * xhat(v);
            }
            dgamma[j] += sdh;
            dbeta[j] += sd;
            let scale = p.gamma[j] * invstd;
            let (m1, m2) = (sd / nf, sdh / nf);
            for ((o, v), d) in dx.iter_mut().zip(x).zip(dy) {
                *o = T::from_f64(scale * (d.to_f64() - m1 - xhat(v) * m2));
            }
        }
    }
}
