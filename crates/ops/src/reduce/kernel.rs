//! The reduction engine: a strided reduction over any set of axes of a
//! contiguous array.
//!
//! Axes of extent 1 are dropped and neighbouring axes of the same kind (kept
//! or reduced) are merged, which leaves alternating groups. The innermost
//! group decides the loop shape:
//! - innermost reduced: every output element reduces contiguous rows (the
//!   "sum over the last axis" and "sum everything" fast path), with eight
//!   independent accumulators so that LLVM vectorises the row loop;
//! - innermost kept: every group of outputs accumulates contiguous rows into
//!   a vector of accumulators (the "sum over the batch axis" fast path).
//!
//! Both loops, and the row pieces of the parallel split, run in their
//! AVX-512, AVX2+FMA or plain build, whichever
//! [`simd_level`](crate::kernels::simd_math::simd_level) names (chosen once
//! per process). The lane count of the row loop is fixed (eight), so every
//! build adds in the same order and the results are the same bits.
//!
//! Float sums accumulate in `f64`. Work above [`PAR_MIN`] elements is split
//! over the pool ([`oxnet_core::parallel`]), in fixed-size pieces merged in a fixed order, so results do
//! not depend on the number of threads.

use crate::kernels::simd_math::{run_at_level, LevelKernel};
use half::{bf16, f16};
use oxnet_core::parallel;
use oxnet_core::shape::contiguous_strides;
use oxnet_core::strided::for_each_offsets;
use oxnet_core::{Element, Error, Req, Result};

/// Elements below which a reduction runs on the calling thread.
pub(crate) const PAR_MIN: usize = 32 * 1024;
/// Columns accumulated together when the innermost axis is kept.
const TILE: usize = 2048;
/// Elements of one row piece when a single long row is split over threads.
const ROW_PIECE: usize = 16 * 1024;

/// Element types the reductions handle, with a wide accumulation type
/// (`f64` for floats, wrapping `i64` for integers).
pub(crate) trait RNum: Element {
    /// The accumulation type of sums and products.
    type Wide: Copy + Send + Sync + 'static;
    /// Widens to the accumulation type.
    fn widen(self) -> Self::Wide;
    /// Narrows from the accumulation type.
    fn narrow(w: Self::Wide) -> Self;
    /// Zero of the accumulation type.
    fn w_zero() -> Self::Wide;
    /// One of the accumulation type.
    fn w_one() -> Self::Wide;
    /// Sum in the accumulation type.
    fn w_add(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// Product in the accumulation type.
    fn w_mul(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// Division by an element count (mean); integer division for integers.
    fn w_div(a: Self::Wide, n: usize) -> Self::Wide;
    /// The smallest value (identity of max).
    fn lowest() -> Self;
    /// The largest value (identity of min).
    fn highest() -> Self;
    /// True for NaN (never for integers).
    fn nan(self) -> bool;
}

macro_rules! rnum_float {
    ($t:ty, $lo:expr, $hi:expr) => {
        impl RNum for $t {
            type Wide = f64;
            #[inline(always)]
            fn widen(self) -> f64 {
                Element::to_f64(self)
            }
            #[inline(always)]
            fn narrow(w: f64) -> Self {
                <$t as Element>::from_f64(w)
            }
            #[inline(always)]
            fn w_zero() -> f64 {
                0.0
            }
            #[inline(always)]
            fn w_one() -> f64 {
                1.0
            }
            #[inline(always)]
            fn w_add(a: f64, b: f64) -> f64 {
                a + b
            }
            #[inline(always)]
            fn w_mul(a: f64, b: f64) -> f64 {
                a * b
            }
            #[inline(always)]
            fn w_div(a: f64, n: usize) -> f64 {
                a / n as f64
            }
            #[inline(always)]
            fn lowest() -> Self {
                $lo
            }
            #[inline(always)]
            fn highest() -> Self {
                $hi
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn nan(self) -> bool {
                self != self
            }
        }
    };
}
rnum_float!(f32, f32::NEG_INFINITY, f32::INFINITY);
rnum_float!(f64, f64::NEG_INFINITY, f64::INFINITY);
rnum_float!(f16, f16::NEG_INFINITY, f16::INFINITY);
rnum_float!(bf16, bf16::NEG_INFINITY, bf16::INFINITY);

macro_rules! rnum_int {
    ($t:ty) => {
        impl RNum for $t {
            type Wide = i64;
            #[inline(always)]
            fn widen(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn narrow(w: i64) -> Self {
                w as $t
            }
            #[inline(always)]
            fn w_zero() -> i64 {
                0
            }
            #[inline(always)]
            fn w_one() -> i64 {
                1
            }
            #[inline(always)]
            fn w_add(a: i64, b: i64) -> i64 {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn w_mul(a: i64, b: i64) -> i64 {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn w_div(a: i64, n: usize) -> i64 {
                if n == 0 {
                    0
                } else {
                    a.wrapping_div(n as i64)
                }
            }
            #[inline(always)]
            fn lowest() -> Self {
                <$t>::MIN
            }
            #[inline(always)]
            fn highest() -> Self {
                <$t>::MAX
            }
            #[inline(always)]
            fn nan(self) -> bool {
                false
            }
        }
    };
}
rnum_int!(u8);
rnum_int!(i8);
rnum_int!(i32);
rnum_int!(i64);

/// A reduction: an accumulator with an identity, a step, an associative
/// merge and a final conversion.
pub(crate) trait Reducer<T>: Sync {
    /// The accumulator.
    type A: Copy + Send + Sync;
    /// False where an empty reduction has no value (max, min).
    const HAS_IDENTITY: bool = true;
    /// The identity.
    fn init(&self) -> Self::A;
    /// Adds one element.
    fn step(&self, a: Self::A, x: T) -> Self::A;
    /// Combines two partial results.
    fn merge(&self, a: Self::A, b: Self::A) -> Self::A;
    /// The result over `count` elements.
    fn finish(&self, a: Self::A, count: usize) -> T;
}

/// Sum, or mean with `MEAN`.
pub(crate) struct Sum<const MEAN: bool>;
/// Product.
pub(crate) struct Prod;
/// Maximum (NaN propagates).
pub(crate) struct Max;
/// Minimum (NaN propagates).
pub(crate) struct Min;
/// L1 (`ORD = 1`) or L2 (`ORD = 2`) norm, accumulated in `f64`.
pub(crate) struct Norm<const ORD: u8>;

impl<T: RNum, const MEAN: bool> Reducer<T> for Sum<MEAN> {
    type A = T::Wide;
    #[inline(always)]
    fn init(&self) -> T::Wide {
        T::w_zero()
    }
    #[inline(always)]
    fn step(&self, a: T::Wide, x: T) -> T::Wide {
        T::w_add(a, x.widen())
    }
    #[inline(always)]
    fn merge(&self, a: T::Wide, b: T::Wide) -> T::Wide {
        T::w_add(a, b)
    }
    #[inline(always)]
    fn finish(&self, a: T::Wide, count: usize) -> T {
        if MEAN {
            T::narrow(T::w_div(a, count))
        } else {
            T::narrow(a)
        }
    }
}

/// `R` over the elements that are not NaN (NaN counts as absent: `nansum`,
/// `nanprod`).
pub(crate) struct SkipNan<R>(pub R);

impl<T: RNum, R: Reducer<T>> Reducer<T> for SkipNan<R> {
    type A = R::A;
    const HAS_IDENTITY: bool = R::HAS_IDENTITY;
    #[inline(always)]
    fn init(&self) -> R::A {
        self.0.init()
    }
    #[inline(always)]
    fn step(&self, a: R::A, x: T) -> R::A {
        if x.nan() {
            a
        } else {
            self.0.step(a, x)
        }
    }
    #[inline(always)]
    fn merge(&self, a: R::A, b: R::A) -> R::A {
        self.0.merge(a, b)
    }
    #[inline(always)]
    fn finish(&self, a: R::A, count: usize) -> T {
        self.0.finish(a, count)
    }
}

impl<T: RNum> Reducer<T> for Prod {
    type A = T::Wide;
    #[inline(always)]
    fn init(&self) -> T::Wide {
        T::w_one()
    }
    #[inline(always)]
    fn step(&self, a: T::Wide, x: T) -> T::Wide {
        T::w_mul(a, x.widen())
    }
    #[inline(always)]
    fn merge(&self, a: T::Wide, b: T::Wide) -> T::Wide {
        T::w_mul(a, b)
    }
    #[inline(always)]
    fn finish(&self, a: T::Wide, _: usize) -> T {
        T::narrow(a)
    }
}

impl<T: RNum> Reducer<T> for Max {
    type A = T;
    const HAS_IDENTITY: bool = false;
    #[inline(always)]
    fn init(&self) -> T {
        T::lowest()
    }
    #[inline(always)]
    fn step(&self, a: T, x: T) -> T {
        if x > a || x.nan() {
            x
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        if b > a || b.nan() {
            b
        } else {
            a
        }
    }
    #[inline(always)]
    fn finish(&self, a: T, _: usize) -> T {
        a
    }
}

impl<T: RNum> Reducer<T> for Min {
    type A = T;
    const HAS_IDENTITY: bool = false;
    #[inline(always)]
    fn init(&self) -> T {
        T::highest()
    }
    #[inline(always)]
    fn step(&self, a: T, x: T) -> T {
        if x < a || x.nan() {
            x
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        if b < a || b.nan() {
            b
        } else {
            a
        }
    }
    #[inline(always)]
    fn finish(&self, a: T, _: usize) -> T {
        a
    }
}

impl<T: RNum, const ORD: u8> Reducer<T> for Norm<ORD> {
    type A = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, a: f64, x: T) -> f64 {
        let v = x.to_f64();
        if ORD == 1 {
            a + v.abs()
        } else {
            a + v * v
        }
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize) -> T {
        T::from_f64(if ORD == 1 { a } else { a.sqrt() })
    }
}

/// A walk over some axes of the input: the offset of its `i`-th position.
struct Walk {
    dims: Vec<(usize, isize)>,
    n: usize,
    table: Vec<isize>,
}

impl Walk {
    fn new(dims: Vec<(usize, isize)>) -> Walk {
        let n = dims.iter().map(|d| d.0).product();
        let mut table = Vec::new();
        if dims.len() >= 2 {
            table.reserve(n);
            let shape: Vec<usize> = dims.iter().map(|d| d.0).collect();
            let strides: Vec<isize> = dims.iter().map(|d| d.1).collect();
            for_each_offsets(&shape, [strides.as_slice()], [0], |[o]| table.push(o));
        }
        Walk { dims, n, table }
    }

    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        match self.dims.len() {
            0 => 0,
            1 => i * self.dims[0].1 as usize,
            _ => self.table[i] as usize,
        }
    }
}

/// How to reduce one input shape over one set of axes.
pub(crate) struct Plan {
    kept: Walk,
    red: Walk,
    inner: usize,
    inner_reduced: bool,
    /// Elements reduced into each output.
    pub count: usize,
    /// Number of outputs.
    pub out_len: usize,
}

impl Plan {
    /// Plans the reduction of a contiguous array of `shape` over the axes
    /// where `mask` is true.
    pub(crate) fn new(shape: &[usize], mask: &[bool]) -> Plan {
        let strides = contiguous_strides(shape);
        let count = shape.iter().zip(mask).filter(|(_, m)| **m).map(|(d, _)| *d).product();
        let out_len = shape.iter().zip(mask).filter(|(_, m)| !**m).map(|(d, _)| *d).product();
        let mut dims: Vec<(usize, isize, bool)> = Vec::with_capacity(shape.len());
        for ((&d, &s), &m) in shape.iter().zip(strides.iter()).zip(mask) {
            if d == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.2 == m && last.1 == s * d as isize => {
                    last.0 *= d;
                    last.1 = s;
                }
                _ => dims.push((d, s, m)),
            }
        }
        let (inner, inner_reduced) = match dims.pop() {
            Some((d, _, m)) => (d, m),
            None => (1, true),
        };
        let kept = Walk::new(dims.iter().filter(|d| !d.2).map(|d| (d.0, d.1)).collect());
        let red = Walk::new(dims.iter().filter(|d| d.2).map(|d| (d.0, d.1)).collect());
        Plan { kept, red, inner, inner_reduced, count, out_len }
    }
}

#[inline(always)]
fn put<T: Element, const ADD: bool>(o: &mut T, v: T) {
    *o = if ADD { o.add(v) } else { v };
}

/// Reduces a contiguous row with eight independent accumulators: the
/// lane count is fixed, whatever the build, so every [`SimdLevel`](crate::kernels::simd_math::SimdLevel) adds in
/// the same order and gives the same bits (a wider build holds the eight
/// lanes in fewer registers).
#[inline(always)]
fn reduce_row_loop<T: Copy, R: Reducer<T>>(r: &R, x: &[T]) -> R::A {
    const W: usize = 8;
    let mut lanes = [r.init(); W];
    let mut chunks = x.chunks_exact(W);
    for c in &mut chunks {
        for j in 0..W {
            lanes[j] = r.step(lanes[j], c[j]);
        }
    }
    let mut acc = lanes[0];
    for lane in &lanes[1..] {
        acc = r.merge(acc, *lane);
    }
    for &v in chunks.remainder() {
        acc = r.step(acc, v);
    }
    acc
}

/// Merges [`reduce_row_loop`] over the reduced rows `k0..k1` of the kept
/// position at offset `base`.
#[inline(always)]
fn rows_loop<T: RNum, R: Reducer<T>>(r: &R, x: &[T], plan: &Plan, base: usize, k0: usize, k1: usize) -> R::A {
    let l = plan.inner;
    let mut acc = r.init();
    for k in k0..k1 {
        let off = base + plan.red.at(k);
        acc = r.merge(acc, reduce_row_loop(r, &x[off..off + l]));
    }
    acc
}

/// Accumulates columns `t0..t1` of the reduced rows `k0..k1` (innermost
/// axis kept) of the kept position at offset `base`, one accumulator per
/// column.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile_loop<T: RNum, R: Reducer<T>>(
    r: &R,
    x: &[T],
    plan: &Plan,
    base: usize,
    t0: usize,
    t1: usize,
    k0: usize,
    k1: usize,
) -> Vec<R::A> {
    let mut acc = vec![r.init(); t1 - t0];
    for k in k0..k1 {
        let off = base + plan.red.at(k) + t0;
        let row = &x[off..off + (t1 - t0)];
        for (a, v) in acc.iter_mut().zip(row) {
            *a = r.step(*a, *v);
        }
    }
    acc
}

/// The outputs of kept positions `first..` on the calling thread, `out`
/// holding their values (one per position, or a row of `inner`).
#[inline(always)]
fn items_loop<T: RNum, R: Reducer<T>, const ADD: bool>(
    r: &R,
    x: &[T],
    plan: &Plan,
    first: usize,
    out: &mut [T],
) {
    let c = if plan.inner_reduced { 1 } else { plan.inner };
    for (j, o) in out.chunks_mut(c).enumerate() {
        let i = first + j;
        let base = plan.kept.at(i);
        if plan.inner_reduced {
            let acc = rows_loop(r, x, plan, base, 0, plan.red.n);
            put::<T, ADD>(&mut o[0], r.finish(acc, plan.count));
            continue;
        }
        let l = plan.inner;
        for t in 0..l.div_ceil(TILE) {
            let (t0, t1) = (t * TILE, ((t + 1) * TILE).min(l));
            let acc = tile_loop(r, x, plan, base, t0, t1, 0, plan.red.n);
            for (o, a) in o[t0..t1].iter_mut().zip(acc) {
                put::<T, ADD>(o, r.finish(a, plan.count));
            }
        }
    }
}

// The loops above, each as a `LevelKernel`, so that `run_at_level` runs
// them in their AVX-512, AVX2+FMA or plain build (whole loops per call:
// the level is looked up once per row piece or per group of outputs).

/// [`reduce_row_loop`] as a kernel.
struct RowK<'a, T, R> {
    r: &'a R,
    x: &'a [T],
}

impl<T: Copy, R: Reducer<T>> LevelKernel for RowK<'_, T, R> {
    type Out = R::A;
    #[inline(always)]
    fn run(self) -> R::A {
        reduce_row_loop(self.r, self.x)
    }
}

/// [`rows_loop`] as a kernel.
struct RowsK<'a, T, R> {
    r: &'a R,
    x: &'a [T],
    plan: &'a Plan,
    base: usize,
    k0: usize,
    k1: usize,
}

impl<T: RNum, R: Reducer<T>> LevelKernel for RowsK<'_, T, R> {
    type Out = R::A;
    #[inline(always)]
    fn run(self) -> R::A {
        rows_loop(self.r, self.x, self.plan, self.base, self.k0, self.k1)
    }
}

/// [`tile_loop`] as a kernel.
struct TileK<'a, T, R> {
    r: &'a R,
    x: &'a [T],
    plan: &'a Plan,
    base: usize,
    t0: usize,
    t1: usize,
    k0: usize,
    k1: usize,
}

impl<T: RNum, R: Reducer<T>> LevelKernel for TileK<'_, T, R> {
    type Out = Vec<R::A>;
    #[inline(always)]
    fn run(self) -> Vec<R::A> {
        tile_loop(self.r, self.x, self.plan, self.base, self.t0, self.t1, self.k0, self.k1)
    }
}

/// [`items_loop`] as a kernel.
struct ItemsK<'a, T, R, const ADD: bool> {
    r: &'a R,
    x: &'a [T],
    plan: &'a Plan,
    first: usize,
    out: &'a mut [T],
}

impl<T: RNum, R: Reducer<T>, const ADD: bool> LevelKernel for ItemsK<'_, T, R, ADD> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        items_loop::<T, R, ADD>(self.r, self.x, self.plan, self.first, self.out)
    }
}

/// Reduces a contiguous row ([`reduce_row_loop`] in the build for the
/// current [`SimdLevel`](crate::kernels::simd_math::SimdLevel)).
fn reduce_row<T: Copy, R: Reducer<T>>(r: &R, x: &[T]) -> R::A {
    run_at_level(RowK { r, x })
}

/// Reduces `x` (contiguous, of the planned shape) into `out` under `req`.
pub(crate) fn reduce<T: RNum, R: Reducer<T>>(
    r: &R,
    x: &[T],
    plan: &Plan,
    out: &mut [T],
    req: Req,
) -> Result<()> {
    match req {
        Req::Null => Ok(()),
        Req::Add => run::<T, R, true>(r, x, plan, out),
        Req::Write | Req::Inplace => run::<T, R, false>(r, x, plan, out),
    }
}

fn run<T: RNum, R: Reducer<T>, const ADD: bool>(r: &R, x: &[T], plan: &Plan, out: &mut [T]) -> Result<()> {
    if out.len() != plan.out_len {
        return Err(Error::Shape(format!(
            "reduction output holds {} elements, expected {}",
            out.len(),
            plan.out_len
        )));
    }
    if plan.out_len == 0 {
        return Ok(());
    }
    if plan.count == 0 {
        if !R::HAS_IDENTITY {
            return Err(Error::Shape(
                "cannot reduce over an empty axis: the reduction has no identity".into(),
            ));
        }
        let v = r.finish(r.init(), 0);
        out.iter_mut().for_each(|o| put::<T, ADD>(o, v));
        return Ok(());
    }
    if x.len() != plan.out_len * plan.count {
        return Err(Error::Shape(format!(
            "reduction input holds {} elements, expected {}",
            x.len(),
            plan.out_len * plan.count
        )));
    }
    let par = x.len() >= PAR_MIN;
    let items = plan.kept.n;
    let c = if plan.inner_reduced { 1 } else { plan.inner };
    if par && items >= 8 {
        let per = items.div_ceil(parallel::num_threads() * 4).max(1);
        parallel::for_each_chunk_mut(out, per * c, |ci, oc| {
            run_at_level(ItemsK::<T, R, ADD> { r, x, plan, first: ci * per, out: oc })
        });
    } else if par {
        for (i, o) in out.chunks_mut(c).enumerate() {
            item_par::<T, R, ADD>(r, x, plan, i, o);
        }
    } else {
        run_at_level(ItemsK::<T, R, ADD> { r, x, plan, first: 0, out });
    }
    Ok(())
}

/// Computes the outputs of kept position `i` (one value, or a row of
/// `inner`), splitting its reduction over the pool.
fn item_par<T: RNum, R: Reducer<T>, const ADD: bool>(r: &R, x: &[T], plan: &Plan, i: usize, out: &mut [T]) {
    let base = plan.kept.at(i);
    let nred = plan.red.n;
    let l = plan.inner;
    if plan.inner_reduced {
        let acc = if nred == 1 {
            let row = &x[base..base + l];
            let parts: Vec<R::A> = parallel::map(row.len().div_ceil(ROW_PIECE), |c| {
                reduce_row(r, &row[c * ROW_PIECE..][..ROW_PIECE.min(row.len() - c * ROW_PIECE)])
            });
            parts.into_iter().fold(r.init(), |a, b| r.merge(a, b))
        } else {
            let per = nred.div_ceil(64).max(1);
            let parts: Vec<R::A> = parallel::map(nred.div_ceil(per), |g| {
                run_at_level(RowsK { r, x, plan, base, k0: g * per, k1: ((g + 1) * per).min(nred) })
            });
            parts.into_iter().fold(r.init(), |a, b| r.merge(a, b))
        };
        put::<T, ADD>(&mut out[0], r.finish(acc, plan.count));
        return;
    }
    // innermost axis kept: accumulate rows of `l` columns, tile by tile,
    // the reduced rows split into groups
    let ntiles = l.div_ceil(TILE);
    let want = parallel::num_threads() * 4;
    let groups = if ntiles >= want { 1 } else { want.div_ceil(ntiles).min(nred).max(1) };
    let per = nred.div_ceil(groups);
    let groups = nred.div_ceil(per);
    let parts: Vec<Vec<R::A>> = parallel::map(ntiles * groups, |u| {
        let (t, g) = (u / groups, u % groups);
        run_at_level(TileK {
            r,
            x,
            plan,
            base,
            t0: t * TILE,
            t1: ((t + 1) * TILE).min(l),
            k0: g * per,
            k1: ((g + 1) * per).min(nred),
        })
    });
    for t in 0..ntiles {
        let (t0, t1) = (t * TILE, ((t + 1) * TILE).min(l));
        let mut acc = parts[t * groups].clone();
        for g in 1..groups {
            for (a, b) in acc.iter_mut().zip(&parts[t * groups + g]) {
                *a = r.merge(*a, *b);
            }
        }
        for (o, a) in out[t0..t1].iter_mut().zip(acc) {
            put::<T, ADD>(o, r.finish(a, plan.count));
        }
    }
}

/// Index of the largest (`is_max`) or smallest element along the middle
/// axis of a contiguous `(pre, n, post)` array, for each of the `pre * post`
/// positions. NaN counts as the extreme (its first occurrence wins); ties
/// go to the first occurrence.
pub(crate) fn arg_reduce<T: RNum>(
    x: &[T],
    pre: usize,
    n: usize,
    post: usize,
    is_max: bool,
) -> Result<Vec<usize>> {
    let mut idx = vec![0usize; pre * post];
    if pre * post == 0 {
        return Ok(idx);
    }
    if n == 0 {
        return Err(Error::Shape("cannot take argmax/argmin over an empty axis".into()));
    }
    let better = |v: T, best: T| -> bool {
        if best.nan() {
            false
        } else if is_max {
            v > best || v.nan()
        } else {
            v < best || v.nan()
        }
    };
    let block = |p: usize, out: &mut [usize]| {
        let base = p * n * post;
        if post == 1 {
            // the extreme value with a vectorised pass, then its first position
            let row = &x[base..base + n];
            let m = if is_max { reduce_row(&Max, row) } else { reduce_row(&Min, row) };
            let pos =
                if m.nan() { row.iter().position(|v| v.nan()) } else { row.iter().position(|v| *v == m) };
            out[0] = pos.unwrap_or(0);
        } else {
            let mut bv: Vec<T> = x[base..base + post].to_vec();
            out.iter_mut().for_each(|o| *o = 0);
            for k in 1..n {
                let row = &x[base + k * post..base + (k + 1) * post];
                for j in 0..post {
                    if better(row[j], bv[j]) {
                        bv[j] = row[j];
                        out[j] = k;
                    }
                }
            }
        }
    };
    if x.len() >= PAR_MIN && pre >= 2 {
        parallel::for_each_chunk_mut(&mut idx, post, |p, o| block(p, o));
    } else {
        for (p, o) in idx.chunks_mut(post).enumerate() {
            block(p, o);
        }
    }
    Ok(idx)
}

#[cfg(test)]
mod level_tests {
    use super::*;
    use crate::kernels::simd_math::{run_at, SimdLevel};

    /// Values in [-3, 3) (some NaN when `nan`), converted to `T`.
    fn data<T: RNum>(n: usize, seed: u64, nan: bool) -> Vec<T> {
        let mut s = seed | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let v = (s >> 11) as f64 / (1u64 << 53) as f64 * 6.0 - 3.0;
                T::from_f64(if nan && i % 97 == 13 { f64::NAN } else { v })
            })
            .collect()
    }

    /// `x` reduced over `mask` by `r` at `level` on the calling thread,
    /// each output as f64 bits, plus the whole-row reduction of `x`.
    fn at<T: RNum, R: Reducer<T>>(
        level: SimdLevel,
        r: &R,
        x: &[T],
        shape: &[usize],
        mask: &[bool],
    ) -> Vec<u64>
    where
        R::A: Into<f64>,
    {
        let plan = Plan::new(shape, mask);
        let mut out = vec![T::from_f64(0.0); plan.out_len];
        run_at(level, ItemsK::<T, R, false> { r, x, plan: &plan, first: 0, out: &mut out });
        let mut bits: Vec<u64> = out.iter().map(|v| v.to_f64().to_bits()).collect();
        bits.push(run_at(level, RowK { r, x }).into().to_bits());
        let tile = run_at(level, TileK { r, x, plan: &plan, base: 0, t0: 0, t1: 1, k0: 0, k1: 1 });
        bits.extend(tile.into_iter().map(|a| a.into().to_bits()));
        bits
    }

    fn agree<T: RNum, R: Reducer<T>>(what: &str, r: R, nan: bool)
    where
        R::A: Into<f64>,
    {
        let cases: [(&[usize], &[bool]); 6] = [
            (&[1000, 37], &[false, true]),
            (&[37, 1000], &[true, false]),
            (&[5, 6, 7], &[true, false, true]),
            (&[6, 5, 7, 3], &[false, true, false, true]),
            (&[10_007], &[true]),
            (&[3, 5000], &[true, true]),
        ];
        for (shape, mask) in cases {
            let x = data::<T>(shape.iter().product(), shape.len() as u64 * 7919, nan);
            let plain = at(SimdLevel::Plain, &r, &x, shape, mask);
            for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                if level.is_supported() {
                    assert_eq!(plain, at(level, &r, &x, shape, mask), "{what} at {level}, shape {shape:?}");
                }
            }
        }
    }

    /// Every build the CPU supports reduces to the same bits as the plain one.
    #[test]
    fn simd_levels_agree() {
        for nan in [false, true] {
            agree::<f32, _>("f32 sum", Sum::<false>, nan);
            agree::<f32, _>("f32 mean", Sum::<true>, nan);
            agree::<f32, _>("f32 nansum", SkipNan(Sum::<false>), nan);
            agree::<f32, _>("f32 prod", Prod, nan);
            agree::<f32, _>("f32 norm1", Norm::<1>, nan);
            agree::<f32, _>("f32 norm2", Norm::<2>, nan);
            agree::<f64, _>("f64 sum", Sum::<false>, nan);
            agree::<f64, _>("f64 norm2", Norm::<2>, nan);
            agree::<f16, _>("f16 sum", Sum::<false>, nan);
            agree::<bf16, _>("bf16 norm2", Norm::<2>, nan);
            agree::<f64, _>("f64 max", Max, nan);
            agree::<f64, _>("f64 min", Min, nan);
        }
        agree::<f32, _>("f32 max", Max, false);
        agree::<f32, _>("f32 min", Min, true);
        agree::<u8, _>("u8 max", Max, false);
        agree::<i32, _>("i32 min", Min, false);
    }
}
