//! The kernels of `topk`, `sort`, `argsort` and `_backward_topk`: each
//! line is ordered with MXNet's own choice of sort (a full sort when more
//! than an eighth of the line is kept, else a partial sort), then values,
//! positions or a mask are written out.

use super::introsort::{partial_sort, sort};
use super::params::Layout;
use oxnet_core::store::store_slice;
use oxnet_core::{parallel, DType, Element, Error, NDArray, Req, Result};

/// For every line `b = o * inner + i`, the positions along the line of its
/// first `k` elements in order, at `b * k..(b + 1) * k`.
pub(crate) fn select<T: Element>(xs: &[T], l: &Layout, ascend: bool) -> Vec<usize> {
    let mut sel = vec![0usize; l.lines() * l.k];
    if l.k == 0 {
        return sel;
    }
    let full = l.k * 8 > l.n;
    parallel::for_each_chunk_mut(&mut sel, l.k, |b, out| {
        let (o, i) = (b / l.inner, b % l.inner);
        let line: Vec<T> = (0..l.n).map(|j| xs[(o * l.n + j) * l.inner + i]).collect();
        let mut order: Vec<usize> = (0..l.n).collect();
        match (ascend, full) {
            (true, true) => sort(&mut order, &|a, b| line[a] < line[b]),
            (false, true) => sort(&mut order, &|a, b| line[a] > line[b]),
            (true, false) => partial_sort(&mut order, l.k, &|a, b| line[a] < line[b]),
            (false, false) => partial_sort(&mut order, l.k, &|a, b| line[a] > line[b]),
        }
        out.copy_from_slice(&order[..l.k]);
    });
    sel
}

/// The flat position in the kept-shaped output of element `j` of line `b`.
#[inline]
fn kept_at(l: &Layout, b: usize, j: usize) -> usize {
    let (o, i) = (b / l.inner, b % l.inner);
    (o * l.k + j) * l.inner + i
}

/// The flat position in the input of position `p` of line `b`.
#[inline]
fn input_at(l: &Layout, b: usize, p: usize) -> usize {
    let (o, i) = (b / l.inner, b % l.inner);
    (o * l.n + p) * l.inner + i
}

/// Writes the selected values of `xs` into `out` (kept-shaped) under `req`.
pub(crate) fn store_values<T: Element>(
    xs: &[T],
    sel: &[usize],
    l: &Layout,
    req: Req,
    out: &NDArray,
) -> Result<()> {
    let mut vals = vec![T::zero(); sel.len()];
    for b in 0..l.lines() {
        for j in 0..l.k {
            vals[kept_at(l, b, j)] = xs[input_at(l, b, sel[b * l.k + j])];
        }
    }
    store_slice(req, out.as_mut_slice::<T>()?, &vals);
    Ok(())
}

/// An index in an index dtype, converted as MXNet's cast does (integers
/// wrap, floats round).
trait IndexValue: Element {
    fn index(p: usize) -> Self;
}

macro_rules! index_value {
    ($($t:ty),*) => {$(
        impl IndexValue for $t {
            #[inline]
            fn index(p: usize) -> Self {
                p as $t
            }
        }
    )*};
}
index_value!(u8, i8, i32, i64, f32, f64);

impl IndexValue for oxnet_core::half::f16 {
    fn index(p: usize) -> Self {
        oxnet_core::half::f16::from_f32(p as f32)
    }
}

impl IndexValue for oxnet_core::half::bf16 {
    fn index(p: usize) -> Self {
        oxnet_core::half::bf16::from_f32(p as f32)
    }
}

fn store_indices_as<T: IndexValue>(sel: &[usize], l: &Layout, req: Req, out: &NDArray) -> Result<()> {
    let mut vals = vec![T::zero(); sel.len()];
    for b in 0..l.lines() {
        for j in 0..l.k {
            vals[kept_at(l, b, j)] = T::index(sel[b * l.k + j]);
        }
    }
    store_slice(req, out.as_mut_slice::<T>()?, &vals);
    Ok(())
}

/// Writes the selected positions into `out` (kept-shaped, in its dtype)
/// under `req`.
pub(crate) fn store_indices(sel: &[usize], l: &Layout, req: Req, out: &NDArray) -> Result<()> {
    use oxnet_core::half::{bf16, f16};
    match out.dtype() {
        DType::U8 => store_indices_as::<u8>(sel, l, req, out),
        DType::I8 => store_indices_as::<i8>(sel, l, req, out),
        DType::I32 => store_indices_as::<i32>(sel, l, req, out),
        DType::I64 => store_indices_as::<i64>(sel, l, req, out),
        DType::F16 => store_indices_as::<f16>(sel, l, req, out),
        DType::BF16 => store_indices_as::<bf16>(sel, l, req, out),
        DType::F32 => store_indices_as::<f32>(sel, l, req, out),
        DType::F64 => store_indices_as::<f64>(sel, l, req, out),
        DType::Bool => Err(Error::DType("indices cannot be stored as bool".into())),
    }
}

/// Writes the mask (input-shaped: 1 at the selected positions, 0
/// elsewhere) into `out` under `req`.
pub(crate) fn store_mask<T: Element>(sel: &[usize], l: &Layout, req: Req, out: &NDArray) -> Result<()> {
    let mut mask = vec![T::zero(); l.outer * l.n * l.inner];
    for b in 0..l.lines() {
        for j in 0..l.k {
            mask[input_at(l, b, sel[b * l.k + j])] = T::one();
        }
    }
    store_slice(req, out.as_mut_slice::<T>()?, &mask);
    Ok(())
}

/// Scatters the kept-shaped `ograd` into zeros shaped like the input, at
/// the positions `index` (kept-shaped, any dtype) gives, under `req`.
pub(crate) fn scatter_grad<T: Element>(
    ograd: &[T],
    index: &NDArray,
    l: &Layout,
    req: Req,
    out: &NDArray,
) -> Result<()> {
    let pos = index.to_vec::<f64>()?;
    let mut dx = vec![T::zero(); l.outer * l.n * l.inner];
    for b in 0..l.lines() {
        for j in 0..l.k {
            let at = kept_at(l, b, j);
            let p = pos[at];
            if !(p >= 0.0 && p < l.n as f64) {
                return Err(Error::Invalid(format!(
                    "_backward_topk: index {p} is outside the sorted axis of length {}",
                    l.n
                )));
            }
            dx[input_at(l, b, p as usize)] = ograd[at];
        }
    }
    store_slice(req, out.as_mut_slice::<T>()?, &dx);
    Ok(())
}
