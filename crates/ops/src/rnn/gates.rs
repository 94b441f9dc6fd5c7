//! The element-wise part of one recurrent step, forward and backward, for
//! a block of rows (one per sequence in the batch). The matrix products
//! are the caller's: these functions get the gate pre-activations and
//! return what the next step and the gradient need.
//!
//! Gate blocks within a row follow the weight rows: i, f, g, o (LSTM) and
//! r, z, n (GRU), each `H` wide.

use crate::kernels::matmul::MatmulScalar;
use crate::kernels::simd_math;
use num_traits::Float;
use oxnet_core::Element;

/// A float the RNN kernels run in (float32 or float64), with vectorised
/// activations over slices.
pub(crate) trait RnnFloat: Element + Float + MatmulScalar + Default + Send + Sync {
    /// `x = sigmoid(x)`.
    fn sigmoid(x: &mut [Self]);
    /// `x = tanh(x)`.
    fn tanh(x: &mut [Self]);
    /// `out = tanh(x)`.
    fn tanh_into(x: &[Self], out: &mut [Self]);
    /// From an attribute value.
    fn of(v: f64) -> Self;
}

impl RnnFloat for f32 {
    fn sigmoid(x: &mut [f32]) {
        simd_math::sigmoid_f32_inplace(x)
    }
    fn tanh(x: &mut [f32]) {
        simd_math::tanh_f32_inplace(x)
    }
    fn tanh_into(x: &[f32], out: &mut [f32]) {
        simd_math::tanh_f32(x, out)
    }
    fn of(v: f64) -> f32 {
        v as f32
    }
}

impl RnnFloat for f64 {
    fn sigmoid(x: &mut [f64]) {
        simd_math::sigmoid_f64_inplace(x)
    }
    fn tanh(x: &mut [f64]) {
        simd_math::tanh_f64_inplace(x)
    }
    fn tanh_into(x: &[f64], out: &mut [f64]) {
        simd_math::tanh_f64(x, out)
    }
    fn of(v: f64) -> f64 {
        v
    }
}

/// Zero of `T` (several traits of `T` name one).
#[inline(always)]
pub(crate) fn zero<T: RnnFloat>() -> T {
    <T as num_traits::Zero>::zero()
}

/// One of `T`.
#[inline(always)]
pub(crate) fn one<T: RnnFloat>() -> T {
    <T as num_traits::One>::one()
}

/// `a[i] += b[i]`.
#[inline]
pub(crate) fn add_into<T: RnnFloat>(a: &mut [T], b: &[T]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = *x + y;
    }
}

/// The cell-state clipping of an LSTM: into `[lo, hi]`, NaN to `lo` when
/// `nan` (else NaN stays).
#[derive(Clone, Copy)]
pub(crate) struct Clip<T> {
    pub lo: T,
    pub hi: T,
    pub nan: bool,
}

impl<T: RnnFloat> Clip<T> {
    #[inline]
    fn apply(&self, c: T) -> T {
        if c.is_nan() {
            if self.nan {
                self.lo
            } else {
                c
            }
        } else {
            c.max(self.lo).min(self.hi)
        }
    }

    /// Whether a clipped value passed the gradient (it was inside the range).
    #[inline]
    fn passes(&self, c: T) -> bool {
        c > self.lo && c < self.hi
    }
}

/// One LSTM step over a row block. `gates` holds the rows' input
/// pre-activations (x·Wxᵀ + bx) and receives the activated gates; `hidden`
/// is h·Whᵀ + bh. Writes the new cell state to `c` (from `c_prev`) and
/// `o·tanh(c)` to `h`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lstm_forward<T: RnnFloat>(
    hsize: usize,
    gates: &mut [T],
    hidden: &[T],
    c_prev: &[T],
    c: &mut [T],
    h: &mut [T],
    clip: Option<Clip<T>>,
) {
    let rows = c.len() / hsize.max(1);
    for r in 0..rows {
        let g = &mut gates[r * 4 * hsize..(r + 1) * 4 * hsize];
        add_into(g, &hidden[r * 4 * hsize..(r + 1) * 4 * hsize]);
        T::sigmoid(&mut g[..2 * hsize]);
        <T as RnnFloat>::tanh(&mut g[2 * hsize..3 * hsize]);
        T::sigmoid(&mut g[3 * hsize..]);
        let (cp, cr, hr) =
            (&c_prev[r * hsize..][..hsize], &mut c[r * hsize..][..hsize], &mut h[r * hsize..][..hsize]);
        for j in 0..hsize {
            cr[j] = g[hsize + j] * cp[j] + g[j] * g[2 * hsize + j];
        }
        if let Some(clip) = clip {
            for v in cr.iter_mut() {
                *v = clip.apply(*v);
            }
        }
        T::tanh_into(cr, hr);
        for j in 0..hsize {
            hr[j] = hr[j] * g[3 * hsize + j];
        }
    }
}

/// The gradient of one LSTM step over a row block: from `dh` (of
/// `o·tanh(c)`) and `dc` (flowing from the next step, updated in place to
/// the gradient of `c_prev`), writes the pre-activation gradients to `dg`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lstm_backward<T: RnnFloat>(
    hsize: usize,
    gates: &[T],
    c: &[T],
    c_prev: &[T],
    dh: &[T],
    dc: &mut [T],
    dg: &mut [T],
    clip: Option<Clip<T>>,
    scratch: &mut [T],
) {
    let rows = c.len() / hsize.max(1);
    let one = one::<T>();
    for r in 0..rows {
        let g = &gates[r * 4 * hsize..(r + 1) * 4 * hsize];
        let d = &mut dg[r * 4 * hsize..(r + 1) * 4 * hsize];
        let (cr, cp, dhr, dcr) = (
            &c[r * hsize..][..hsize],
            &c_prev[r * hsize..][..hsize],
            &dh[r * hsize..][..hsize],
            &mut dc[r * hsize..][..hsize],
        );
        let tc = &mut scratch[..hsize];
        T::tanh_into(cr, tc);
        for j in 0..hsize {
            let (i, f, gg, o) = (g[j], g[hsize + j], g[2 * hsize + j], g[3 * hsize + j]);
            let mut dct = dcr[j] + dhr[j] * o * (one - tc[j] * tc[j]);
            if let Some(clip) = clip {
                if !clip.passes(cr[j]) {
                    dct = zero::<T>();
                }
            }
            let do_ = dhr[j] * tc[j];
            d[j] = dct * gg * i * (one - i);
            d[hsize + j] = dct * cp[j] * f * (one - f);
            d[2 * hsize + j] = dct * i * (one - gg * gg);
            d[3 * hsize + j] = do_ * o * (one - o);
            dcr[j] = dct * f;
        }
    }
}

/// One GRU step over a row block. `gates` holds the input pre-activations
/// and receives r, z, n; `hidden` is h·Whᵀ + bh, whose n block is kept in
/// `hn`; the new state goes to `h` (from `h_prev`).
pub(crate) fn gru_forward<T: RnnFloat>(
    hsize: usize,
    gates: &mut [T],
    hidden: &[T],
    h_prev: &[T],
    hn: &mut [T],
    h: &mut [T],
) {
    let rows = h.len() / hsize.max(1);
    let one = one::<T>();
    for r in 0..rows {
        let g = &mut gates[r * 3 * hsize..(r + 1) * 3 * hsize];
        let hid = &hidden[r * 3 * hsize..(r + 1) * 3 * hsize];
        add_into(&mut g[..2 * hsize], &hid[..2 * hsize]);
        T::sigmoid(&mut g[..2 * hsize]);
        let hnr = &mut hn[r * hsize..][..hsize];
        hnr.copy_from_slice(&hid[2 * hsize..]);
        for j in 0..hsize {
            g[2 * hsize + j] = g[2 * hsize + j] + g[j] * hnr[j];
        }
        <T as RnnFloat>::tanh(&mut g[2 * hsize..]);
        let (hp, hr) = (&h_prev[r * hsize..][..hsize], &mut h[r * hsize..][..hsize]);
        for j in 0..hsize {
            let (z, n) = (g[hsize + j], g[2 * hsize + j]);
            hr[j] = (one - z) * n + z * hp[j];
        }
    }
}

/// The gradient of one GRU step over a row block: from `dh` (of the new
/// state), writes the input-side pre-activation gradients to `dgx`, the
/// hidden-side ones (the n block times r) to `dgh`, and the direct part
/// of the gradient of `h_prev` (`dh·z`) to `dh_prev`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gru_backward<T: RnnFloat>(
    hsize: usize,
    gates: &[T],
    hn: &[T],
    h_prev: &[T],
    dh: &[T],
    dgx: &mut [T],
    dgh: &mut [T],
    dh_prev: &mut [T],
) {
    let rows = dh.len() / hsize.max(1);
    let one = one::<T>();
    for r in 0..rows {
        let g = &gates[r * 3 * hsize..(r + 1) * 3 * hsize];
        let dx = &mut dgx[r * 3 * hsize..(r + 1) * 3 * hsize];
        let dhh = &mut dgh[r * 3 * hsize..(r + 1) * 3 * hsize];
        for j in 0..hsize {
            let (rr, z, n) = (g[j], g[hsize + j], g[2 * hsize + j]);
            let (hp, d) = (h_prev[r * hsize + j], dh[r * hsize + j]);
            let dn = d * (one - z) * (one - n * n);
            let dz = d * (hp - n) * z * (one - z);
            let dr = dn * hn[r * hsize + j] * rr * (one - rr);
            dx[j] = dr;
            dx[hsize + j] = dz;
            dx[2 * hsize + j] = dn;
            dhh[j] = dr;
            dhh[hsize + j] = dz;
            dhh[2 * hsize + j] = dn * rr;
            dh_prev[r * hsize + j] = d * z;
        }
    }
}

/// One plain RNN step: `gates` (input pre-activations) becomes the new
/// state `act(gates + hidden)`.
pub(crate) fn plain_forward<T: RnnFloat>(relu: bool, gates: &mut [T], hidden: &[T]) {
    add_into(gates, hidden);
    if relu {
        for v in gates.iter_mut() {
            *v = v.max(zero::<T>());
        }
    } else {
        <T as RnnFloat>::tanh(gates);
    }
}

/// The gradient of a plain RNN step: `dg = dh·act'` from the new state `h`.
pub(crate) fn plain_backward<T: RnnFloat>(relu: bool, h: &[T], dh: &[T], dg: &mut [T]) {
    let one = one::<T>();
    for ((d, &y), &g) in dg.iter_mut().zip(h).zip(dh) {
        *d = if relu {
            if y > zero::<T>() {
                g
            } else {
                zero::<T>()
            }
        } else {
            g * (one - y * y)
        };
    }
}
