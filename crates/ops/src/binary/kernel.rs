//! The element-wise binary engine: `out = f(a, b)` with numpy broadcasting.
//!
//! Fast paths: equal element counts (flat loop) and a one-element operand
//! (scalar loop); otherwise the broadcast layout is collapsed to rows whose
//! operands have inner stride 1 or 0, so every inner loop is one of three
//! flat loops. Loops use raw pointers because an output may alias an input
//! (`req = inplace`); each element is read before it is written. Work above
//! [`PAR_MIN`] elements is split over the pool ([`oxnet_core::parallel`]).

use half::{bf16, f16};
use oxnet_core::shape::{broadcast_strides, contiguous_strides};
use oxnet_core::{Element, Error, NDArray, Req, Result};

/// Elements below which a kernel runs on the calling thread.
pub(crate) const PAR_MIN: usize = 32 * 1024;
/// Elements per parallel piece of a flat loop.
const PIECE: usize = 16 * 1024;

/// Arithmetic of the numeric element types (f16/bf16 compute in f32;
/// integers wrap, and integer division by zero gives 0).
pub(crate) trait BNum: Element {
    fn b_add(self, o: Self) -> Self;
    fn b_sub(self, o: Self) -> Self;
    fn b_mul(self, o: Self) -> Self;
    fn b_div(self, o: Self) -> Self;
    fn b_pow(self, o: Self) -> Self;
    /// Maximum; NaN propagates.
    fn b_max(self, o: Self) -> Self;
    /// Minimum; NaN propagates.
    fn b_min(self, o: Self) -> Self;
    /// Remainder with the sign of the divisor (Python's `%`); 0 for a zero divisor.
    fn b_mod(self, o: Self) -> Self;
    /// `sqrt(self^2 + o^2)` without undue overflow (integers through f64).
    fn b_hypot(self, o: Self) -> Self;
}

/// Float remainder with the sign of the divisor; 0 when `b` is 0.
#[inline(always)]
fn float_mod<F: num_traits::Float>(a: F, b: F) -> F {
    if b == F::zero() {
        return F::zero();
    }
    let r = a % b;
    if r != F::zero() && ((r < F::zero()) != (b < F::zero())) {
        r + b
    } else {
        r
    }
}

macro_rules! bnum_float {
    ($t:ty) => {
        impl BNum for $t {
            #[inline(always)]
            fn b_add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn b_sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn b_mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn b_div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn b_pow(self, o: Self) -> Self {
                self.powf(o)
            }
            #[inline(always)]
            fn b_max(self, o: Self) -> Self {
                if o > self || o.is_nan() {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            fn b_min(self, o: Self) -> Self {
                if o < self || o.is_nan() {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            fn b_mod(self, o: Self) -> Self {
                float_mod(self, o)
            }
            #[inline(always)]
            fn b_hypot(self, o: Self) -> Self {
                self.hypot(o)
            }
        }
    };
}
bnum_float!(f32);
bnum_float!(f64);

macro_rules! bnum_half {
    ($t:ty) => {
        impl BNum for $t {
            #[inline(always)]
            fn b_add(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() + o.to_f32())
            }
            #[inline(always)]
            fn b_sub(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() - o.to_f32())
            }
            #[inline(always)]
            fn b_mul(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() * o.to_f32())
            }
            #[inline(always)]
            fn b_div(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() / o.to_f32())
            }
            #[inline(always)]
            fn b_pow(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().powf(o.to_f32()))
            }
            #[inline(always)]
            fn b_max(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().b_max(o.to_f32()))
            }
            #[inline(always)]
            fn b_min(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().b_min(o.to_f32()))
            }
            #[inline(always)]
            fn b_mod(self, o: Self) -> Self {
                <$t>::from_f32(float_mod(self.to_f32(), o.to_f32()))
            }
            #[inline(always)]
            fn b_hypot(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().hypot(o.to_f32()))
            }
        }
    };
}
bnum_half!(f16);
bnum_half!(bf16);

macro_rules! bnum_int {
    ($t:ty) => {
        impl BNum for $t {
            #[inline(always)]
            fn b_add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn b_sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn b_mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn b_div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            #[inline(always)]
            fn b_pow(self, o: Self) -> Self {
                (self as f64).powf(o as f64) as $t
            }
            #[inline(always)]
            fn b_max(self, o: Self) -> Self {
                if o > self {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            fn b_min(self, o: Self) -> Self {
                if o < self {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn b_mod(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                }
            }
            #[inline(always)]
            fn b_hypot(self, o: Self) -> Self {
                (self as f64).hypot(o as f64) as $t
            }
        }
    };
}
bnum_int!(u8);
bnum_int!(i8);
bnum_int!(i32);
bnum_int!(i64);

#[inline(always)]
unsafe fn put<T: Element, const ADD: bool>(o: *mut T, v: T) {
    *o = if ADD { (*o).add(v) } else { v };
}

/// One flat row: `o[i] = f(a[i*sa], b[i*sb])` with strides 0 or 1.
///
/// # Safety
/// The pointers must be valid for `n` elements at their strides; `o` may
/// equal `a` or `b` (same stride 1) but must not overlap them otherwise.
#[inline(always)]
unsafe fn row<T: Element, F: Fn(T, T) -> T, const ADD: bool>(
    n: usize,
    a: *const T,
    sa: isize,
    b: *const T,
    sb: isize,
    o: *mut T,
    f: &F,
) {
    match (sa != 0, sb != 0) {
        (true, true) => {
            for i in 0..n {
                put::<T, ADD>(o.add(i), f(*a.add(i), *b.add(i)));
            }
        }
        (true, false) => {
            let y = *b;
            for i in 0..n {
                put::<T, ADD>(o.add(i), f(*a.add(i), y));
            }
        }
        (false, true) => {
            let x = *a;
            for i in 0..n {
                put::<T, ADD>(o.add(i), f(x, *b.add(i)));
            }
        }
        (false, false) => {
            let v = f(*a, *b);
            for i in 0..n {
                put::<T, ADD>(o.add(i), v);
            }
        }
    }
}

/// A flat loop over `n` elements, split over the pool when long.
///
/// # Safety
/// As for [`row`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn flat<T: Element, F: Fn(T, T) -> T + Sync>(
    n: usize,
    a: *const T,
    sa: isize,
    b: *const T,
    sb: isize,
    o: *mut T,
    req: Req,
    f: &F,
) {
    match req {
        Req::Null => {}
        Req::Add => flat_req::<T, F, true>(n, a, sa, b, sb, o, f),
        Req::Write | Req::Inplace => flat_req::<T, F, false>(n, a, sa, b, sb, o, f),
    }
}

unsafe fn flat_req<T: Element, F: Fn(T, T) -> T + Sync, const ADD: bool>(
    n: usize,
    a: *const T,
    sa: isize,
    b: *const T,
    sb: isize,
    o: *mut T,
    f: &F,
) {
    if n < PAR_MIN {
        return row::<T, F, ADD>(n, a, sa, b, sb, o, f);
    }
    let (ap, bp, op) = (a as usize, b as usize, o as usize);
    oxnet_core::parallel::for_each(n.div_ceil(PIECE), |p| {
        let start = p * PIECE;
        let len = PIECE.min(n - start);
        let (a, b, o) = (ap as *const T, bp as *const T, op as *mut T);
        // SAFETY: pieces are disjoint ranges of the caller's buffers.
        unsafe {
            row::<T, F, ADD>(
                len,
                a.offset(start as isize * sa),
                sa,
                b.offset(start as isize * sb),
                sb,
                o.add(start),
                f,
            )
        }
    });
}

/// `out = f(a, b)` (stored under `req`) where `out` has the broadcast shape
/// of `a` and `b`; all three contiguous, of element type `T`.
pub(crate) fn apply<T: Element, F: Fn(T, T) -> T + Sync>(
    a: &NDArray,
    b: &NDArray,
    out: &NDArray,
    req: Req,
    f: F,
) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    out.check_writable()?;
    for x in [a, b, out] {
        if !x.is_contiguous() {
            return Err(Error::Invalid("binary kernel needs contiguous arrays".into()));
        }
    }
    let ap = a.data_ptr::<T>()? as *const T;
    let bp = b.data_ptr::<T>()? as *const T;
    let op = out.data_ptr::<T>()?;
    let n = out.size();
    if n == 0 {
        return Ok(());
    }
    let sa = broadcast_strides(a.shape(), &contiguous_strides(a.shape()), out.shape())?;
    let sb = broadcast_strides(b.shape(), &contiguous_strides(b.shape()), out.shape())?;
    let (fa, fb) = (a.size() == n, b.size() == n);
    if (fa || a.size() == 1) && (fb || b.size() == 1) {
        // SAFETY: each operand holds n elements or one (stride 0).
        unsafe { flat(n, ap, fa as isize, bp, fb as isize, op, req, &f) };
        return Ok(());
    }
    let so = contiguous_strides(out.shape());
    // drop unit axes, merge axes that are contiguous in all three operands
    let mut dims: Vec<(usize, [isize; 3])> = Vec::with_capacity(out.ndim());
    for (i, &d) in out.shape().iter().enumerate() {
        if d == 1 {
            continue;
        }
        let s = [so[i], sa[i], sb[i]];
        match dims.last_mut() {
            Some((ld, ls)) if (0..3).all(|k| ls[k] == s[k] * d as isize) => {
                *ld *= d;
                *ls = s;
            }
            _ => dims.push((d, s)),
        }
    }
    let (inner, is) = dims.pop().unwrap_or((1, [1, 1, 1]));
    let rows: usize = dims.iter().map(|d| d.0).product();
    let offsets = |mut r: usize| -> [isize; 3] {
        let mut off = [0isize; 3];
        for (d, s) in dims.iter().rev() {
            let i = (r % d) as isize;
            r /= d;
            for k in 0..3 {
                off[k] += i * s[k];
            }
        }
        off
    };
    let (apu, bpu, opu) = (ap as usize, bp as usize, op as usize);
    let do_rows = |r0: usize, r1: usize| {
        let (ap, bp, op) = (apu as *const T, bpu as *const T, opu as *mut T);
        for r in r0..r1 {
            let [oo, oa, ob] = offsets(r);
            // SAFETY: the broadcast strides keep row r inside each operand;
            // the inner strides are 0 or 1.
            unsafe { flat(inner, ap.offset(oa), is[1], bp.offset(ob), is[2], op.offset(oo), req, &f) };
        }
    };
    if n >= PAR_MIN && rows >= 2 {
        let per = PIECE.div_ceil(inner).max(1);
        oxnet_core::parallel::for_each(rows.div_ceil(per), |p| do_rows(p * per, ((p + 1) * per).min(rows)));
    } else {
        do_rows(0, rows);
    }
    Ok(())
}
