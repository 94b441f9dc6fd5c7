//! The element-wise driver every update operator runs on.
//!
//! An update reads the weight and the gradient, reads and rewrites `K` state
//! arrays (momentum, moving averages, a float32 master copy) and stores a
//! new value into the output, element by element and independently per
//! element. [`update_elementwise`] owns the parts that are the same for
//! every optimizer — dtype and layout checks, the output request, the case
//! where the output buffer *is* the weight (Python's `out=weight`), and the
//! split over the pool ([`oxnet_core::parallel`]) for long arrays — so that an operator states only its
//! per-element formula.
//!
//! Element `i` of every buffer is read before element `i` of any buffer is
//! written, and no other element is touched, so an output that is the weight
//! itself is updated in place correctly. States must not share memory with
//! any other array of the call (that would make the formula read values it
//! has already changed); the driver rejects such calls.

use num_traits::Float;
use oxnet_core::attrs::Attrs;
use oxnet_core::dtype::FloatElement;
use oxnet_core::{Error, NDArray, Req, Result};

/// Element count from which updates are split over the pool.
const PAR_MIN: usize = 32 * 1024;
/// Elements per parallel piece.
const PIECE: usize = 16 * 1024;

/// Converts a hyper-parameter to the compute type (out-of-range values
/// become infinities, as a C cast would).
#[inline]
pub(super) fn cst<C: Float>(x: f64) -> C {
    C::from(x).unwrap_or_else(|| if x > 0.0 { C::infinity() } else { C::neg_infinity() })
}

/// The float attributes `names`, in the compute type.
pub(super) fn floats<C: Float, const N: usize>(attrs: &Attrs, names: [&str; N]) -> Result<[C; N]> {
    let mut values = [C::zero(); N];
    for (v, name) in values.iter_mut().zip(names) {
        *v = cst(attrs.float(name)?);
    }
    Ok(values)
}

/// MXNet's `clip(x, bound)`: `x` limited to `[-bound, bound]` (NaN passes).
#[inline(always)]
pub(super) fn clip<C: Float>(x: C, bound: C) -> C {
    if x > bound {
        bound
    } else if x < -bound {
        -bound
    } else {
        x
    }
}

/// The rescaled gradient `rescale * g`, clipped to `[-clip, clip]` when
/// `clip >= 0` (a negative bound turns clipping off).
#[inline(always)]
pub(super) fn rescaled<C: Float>(g: C, rescale: C, clip_bound: C) -> C {
    let x = rescale * g;
    if clip_bound >= C::zero() {
        clip(x, clip_bound)
    } else {
        x
    }
}

/// -1, 0 or 1 (0 for zero, unlike `f32::signum`).
#[inline(always)]
pub(super) fn sign<C: Float>(x: C) -> C {
    if x > C::zero() {
        C::one()
    } else if x < C::zero() {
        -C::one()
    } else {
        C::zero()
    }
}

/// Raw buffer addresses handed to the parallel pieces.
#[derive(Clone, Copy)]
struct Ptrs<const K: usize> {
    weight: usize,
    grad: usize,
    states: [usize; K],
    out: usize,
}

/// Checks that `a` is a dense array of `n` elements the kernel can address.
fn dense(a: &NDArray, what: &str, n: usize) -> Result<()> {
    a.check_has_values()?;
    if !a.is_contiguous() {
        return Err(Error::Invalid(format!("{what} must be contiguous")));
    }
    if a.size() != n {
        return Err(Error::Shape(format!(
            "{what} has {} elements, the weight {n} (shape {:?})",
            a.size(),
            a.shape()
        )));
    }
    Ok(())
}

/// A copy of `input` when it overlaps `out` without being exactly it
/// (partially overlapping views would read already-written elements).
fn unaliased(input: &NDArray, out: &NDArray) -> Result<NDArray> {
    if input.shares_storage(out) && input.raw_ptr() != out.raw_ptr() {
        input.copy()
    } else {
        Ok(input.clone())
    }
}

/// Runs `f(w, g, states) -> new value` over every element: `w` and `g` are
/// element `i` of `weight` and `grad` widened to the compute type, `states`
/// holds element `i` of each state array (written back after the call), and
/// the returned value is stored into `out[i]` under `req`.
///
/// `T` is the element type of weight, gradient and output; `S` that of the
/// states (`T` itself, or `f32` for the multi-precision operators whose
/// states are float32 copies). `names` labels the states in errors.
pub(super) fn update_elementwise<T, S, const K: usize>(
    req: Req,
    weight: &NDArray,
    grad: &NDArray,
    states: [&NDArray; K],
    names: [&str; K],
    out: &NDArray,
    f: impl Fn(T::Compute, T::Compute, &mut [T::Compute; K]) -> T::Compute + Sync + Copy,
) -> Result<()>
where
    T: FloatElement,
    S: FloatElement<Compute = T::Compute>,
{
    let n = weight.size();
    dense(weight, "weight", n)?;
    dense(grad, "grad", n)?;
    dense(out, "the output", n)?;
    for (k, s) in states.iter().enumerate() {
        dense(s, names[k], n)?;
        s.check_writable()?;
        let clash = [weight, grad, out].iter().any(|o| o.shares_storage(s))
            || states.iter().enumerate().any(|(j, o)| j != k && o.shares_storage(s));
        if clash {
            return Err(Error::Invalid(format!(
                "state `{}` shares memory with another array of the call; each state needs its own buffer",
                names[k]
            )));
        }
    }
    if req != Req::Null {
        out.check_writable()?;
    }
    let weight = unaliased(weight, out)?;
    // the gradient is read through a shared slice beside the output's mutable one
    let grad = if grad.shares_storage(out) { grad.copy()? } else { grad.clone() };
    let mut sp = [0usize; K];
    for (k, s) in states.iter().enumerate() {
        sp[k] = s.data_ptr::<S>()? as usize;
    }
    let ptrs = Ptrs {
        weight: weight.data_ptr::<T>()? as usize,
        grad: grad.data_ptr::<T>()? as usize,
        states: sp,
        out: out.data_ptr::<T>()? as usize,
    };
    let run = |start: usize, len: usize| {
        // SAFETY: every pointer addresses `n` elements of its dtype (checked
        // above); this piece touches only indices start..start+len, pieces
        // are disjoint, and element i of each buffer is read before element i
        // of any buffer is written (the output may be the weight itself).
        unsafe {
            match req {
                Req::Null => piece::<T, S, K, 0>(ptrs, start, len, &f),
                Req::Write | Req::Inplace => piece::<T, S, K, 1>(ptrs, start, len, &f),
                Req::Add => piece::<T, S, K, 2>(ptrs, start, len, &f),
            }
        }
    };
    if n < PAR_MIN {
        run(0, n);
    } else {
        oxnet_core::parallel::for_each(n.div_ceil(PIECE), |p| {
            let start = p * PIECE;
            run(start, PIECE.min(n - start));
        });
    }
    Ok(())
}

/// One piece of [`update_elementwise`]; `MODE` 0 discards the result, 1
/// stores it, 2 adds it to the output.
///
/// # Safety
/// As described at the call site; besides, the gradient and the states do
/// not overlap the output or each other (checked by the caller), so the
/// slices made here do not alias, except the weight and the output, which
/// are then one slice.
#[inline(always)]
unsafe fn piece<T, S, const K: usize, const MODE: u8>(
    ptrs: Ptrs<K>,
    start: usize,
    len: usize,
    f: &(impl Fn(T::Compute, T::Compute, &mut [T::Compute; K]) -> T::Compute + Copy),
) where
    T: FloatElement,
    S: FloatElement<Compute = T::Compute>,
{
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernels::simd_math::{simd_level, SimdLevel};
        match simd_level() {
            // SAFETY: simd_level() never exceeds what the CPU supports; the
            // rest is the caller's contract.
            SimdLevel::Avx512 => return piece_avx512::<T, S, K, MODE>(ptrs, start, len, f),
            SimdLevel::Avx2Fma => return piece_avx2::<T, S, K, MODE>(ptrs, start, len, f),
            SimdLevel::Plain => {}
        }
    }
    piece_slices::<T, S, K, MODE>(ptrs, start, len, f)
}

/// [`piece_slices`] built for AVX2: 8 floats per instruction instead of
/// SSE's 4, which halves the instructions of this memory-bound loop. (The
/// rules' multiplies and adds stay separate: no FMA contraction, so results
/// are the same bits as the plain build's.)
///
/// # Safety
/// As for [`piece`]; besides, the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn piece_avx2<T, S, const K: usize, const MODE: u8>(
    ptrs: Ptrs<K>,
    start: usize,
    len: usize,
    f: &(impl Fn(T::Compute, T::Compute, &mut [T::Compute; K]) -> T::Compute + Copy),
) where
    T: FloatElement,
    S: FloatElement<Compute = T::Compute>,
{
    piece_slices::<T, S, K, MODE>(ptrs, start, len, f)
}

/// [`piece_slices`] built for AVX-512 (16 floats per instruction, masked
/// loop tails); the same bits as the plain and AVX2 builds, for the same
/// reason.
///
/// # Safety
/// As for [`piece`]; besides, the CPU must support AVX-512 F/BW/DQ/VL,
/// AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn piece_avx512<T, S, const K: usize, const MODE: u8>(
    ptrs: Ptrs<K>,
    start: usize,
    len: usize,
    f: &(impl Fn(T::Compute, T::Compute, &mut [T::Compute; K]) -> T::Compute + Copy),
) where
    T: FloatElement,
    S: FloatElement<Compute = T::Compute>,
{
    piece_slices::<T, S, K, MODE>(ptrs, start, len, f)
}

/// The slices of one piece, handed to [`slices`].
///
/// # Safety
/// As for [`piece`].
#[inline(always)]
unsafe fn piece_slices<T, S, const K: usize, const MODE: u8>(
    ptrs: Ptrs<K>,
    start: usize,
    len: usize,
    f: &(impl Fn(T::Compute, T::Compute, &mut [T::Compute; K]) -> T::Compute + Copy),
) where
    T: FloatElement,
    S: FloatElement<Compute = T::Compute>,
{
    let g = std::slice::from_raw_parts((ptrs.grad as *const T).add(start), len);
    let mut st: [&mut [S]; K] =
        ptrs.states.map(|p| std::slice::from_raw_parts_mut((p as *mut S).add(start), len));
    let o = std::slice::from_raw_parts_mut((ptrs.out as *mut T).add(start), len);
    if ptrs.weight == ptrs.out {
        slices::<T, S, K, MODE, true>(&[], g, &mut st, o, f)
    } else {
        let w = std::slice::from_raw_parts((ptrs.weight as *const T).add(start), len);
        slices::<T, S, K, MODE, false>(w, g, &mut st, o, f)
    }
}

/// The loop of [`piece_slices`] over slices; with `SAME` the weight is read from
/// the output slice itself (`w` is then empty).
#[inline(always)]
fn slices<T, S, const K: usize, const MODE: u8, const SAME: bool>(
    w: &[T],
    g: &[T],
    st: &mut [&mut [S]; K],
    o: &mut [T],
    f: &(impl Fn(T::Compute, T::Compute, &mut [T::Compute; K]) -> T::Compute + Copy),
) where
    T: FloatElement,
    S: FloatElement<Compute = T::Compute>,
{
    // A local copy of the rule (the callers' closures own their parameters):
    // its values then sit in registers, and the loop vectorises.
    let f = *f;
    let n = o.len();
    let (g, w) = (&g[..n], if SAME { w } else { &w[..n] });
    for s in st.iter() {
        assert_eq!(s.len(), n);
    }
    // Unchecked indexing below: every slice holds `n` elements (sliced or
    // asserted above), and bounds checks in this loop kept it from being
    // vectorised (several times slower than the memory traffic it does).
    for i in 0..n {
        // SAFETY: i < n, and each of `g`, `w` (unless SAME), `o` and the
        // states has exactly n elements.
        unsafe {
            let mut v = [<T::Compute as num_traits::Zero>::zero(); K];
            for k in 0..K {
                v[k] = st[k].get_unchecked(i).to_compute();
            }
            let wi = if SAME { *o.get_unchecked(i) } else { *w.get_unchecked(i) };
            let r = f(wi.to_compute(), g.get_unchecked(i).to_compute(), &mut v);
            for k in 0..K {
                *st[k].get_unchecked_mut(i) = S::from_compute(v[k]);
            }
            let oi = o.get_unchecked_mut(i);
            match MODE {
                1 => *oi = T::from_compute(r),
                2 => *oi = T::from_compute(oi.to_compute() + r),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::simd_math::SimdLevel;
    use half::{bf16, f16};

    /// An Adam-like rule with clipping, a square root, a division and a
    /// sign: every kind of operation the real rules use.
    #[inline(always)]
    fn rule<C: Float>(w: C, g: C, s: &mut [C; 2]) -> C {
        let (b1, b2, lr, eps) = (cst::<C>(0.9), cst::<C>(0.999), cst::<C>(0.01), cst::<C>(1e-8));
        let g = rescaled(g, cst(0.5), cst(3.0)) + cst::<C>(1e-4) * w;
        s[0] = b1 * s[0] + (C::one() - b1) * g;
        s[1] = b2 * s[1] + (C::one() - b2) * g * g;
        w - lr * s[0] / (s[1].sqrt() + eps) - sign(w) * cst(1e-5)
    }

    /// Runs one piece of `len` elements at `level` with output mode `MODE`
    /// (the weight updated in place when `same`); returns the output and
    /// the two states as f64 bits, or `None` when the CPU lacks the level.
    fn run<T: FloatElement, S: FloatElement<Compute = T::Compute>, const MODE: u8>(
        level: SimdLevel,
        len: usize,
        same: bool,
    ) -> Option<Vec<u64>> {
        if !level.is_supported() {
            return None;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0
        };
        let conv = |x: f64| cst::<T::Compute>(x);
        let w: Vec<T> = (0..len).map(|_| T::from_compute(conv(next()))).collect();
        let g: Vec<T> =
            (0..len).map(|i| T::from_compute(conv(if i % 7 == 3 { 0.0 } else { next() }))).collect();
        let mut s0: Vec<S> = (0..len).map(|_| S::from_compute(conv(next() * 0.1))).collect();
        let mut s1: Vec<S> = (0..len).map(|_| S::from_compute(conv(next().abs()))).collect();
        let mut o: Vec<T> =
            if same { w.clone() } else { (0..len).map(|_| T::from_compute(conv(next()))).collect() };
        let ptrs = Ptrs {
            weight: if same { o.as_mut_ptr() as usize } else { w.as_ptr() as usize },
            grad: g.as_ptr() as usize,
            states: [s0.as_mut_ptr() as usize, s1.as_mut_ptr() as usize],
            out: o.as_mut_ptr() as usize,
        };
        let f = |w, g, s: &mut [T::Compute; 2]| rule(w, g, s);
        // SAFETY: every buffer holds `len` elements and only the weight and
        // the output may be one buffer; each level is checked above.
        unsafe {
            match level {
                SimdLevel::Plain => piece_slices::<T, S, 2, MODE>(ptrs, 0, len, &f),
                #[cfg(target_arch = "x86_64")]
                SimdLevel::Avx2Fma => piece_avx2::<T, S, 2, MODE>(ptrs, 0, len, &f),
                #[cfg(target_arch = "x86_64")]
                SimdLevel::Avx512 => piece_avx512::<T, S, 2, MODE>(ptrs, 0, len, &f),
                #[cfg(not(target_arch = "x86_64"))]
                _ => return None,
            }
        }
        let bits = |v: T::Compute| num_traits::ToPrimitive::to_f64(&v).unwrap().to_bits();
        Some(
            o.iter()
                .map(|v| bits(v.to_compute()))
                .chain(s0.iter().map(|v| bits(v.to_compute())))
                .chain(s1.iter().map(|v| bits(v.to_compute())))
                .collect(),
        )
    }

    fn levels_agree<T: FloatElement, S: FloatElement<Compute = T::Compute>>(what: &str) {
        for len in [1, 15, 16, 17, 63, 1000] {
            for same in [false, true] {
                let plain = [
                    run::<T, S, 0>(SimdLevel::Plain, len, same),
                    run::<T, S, 1>(SimdLevel::Plain, len, same),
                    run::<T, S, 2>(SimdLevel::Plain, len, same),
                ];
                for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                    let got = [
                        run::<T, S, 0>(level, len, same),
                        run::<T, S, 1>(level, len, same),
                        run::<T, S, 2>(level, len, same),
                    ];
                    for (mode, (p, g)) in plain.iter().zip(&got).enumerate() {
                        if let Some(g) = g {
                            assert_eq!(
                                p.as_ref().unwrap(),
                                g,
                                "{what} {level} len {len} same {same} mode {mode}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Every build the CPU supports updates bit for bit as the plain build.
    #[test]
    fn simd_levels_agree() {
        levels_agree::<f32, f32>("f32");
        levels_agree::<f64, f64>("f64");
        levels_agree::<f16, f16>("f16");
        levels_agree::<f16, f32>("f16 with f32 states");
        levels_agree::<bf16, bf16>("bf16");
    }
}
