//! The kernels of `topk`, `sort` and `argsort` and `_backward_topk`: each
//! line is ordered by [`radix`](super::radix) keys (ties in position
//! order), then values, positions or a mask are written out.

use super::params::Layout;
use super::radix::{first_positions, parts_for, sort_keys, OrderKey, RadixItem, RadixKey};
use oxnet_core::store::store_slice;
use oxnet_core::{parallel, DType, Element, Error, NDArray, Req, Result};

/// For every line `b = o * inner + i`, the positions along the line of its
/// first `k` elements in order, at `b * k..(b + 1) * k`.
pub(crate) fn select<T: Element + OrderKey>(xs: &[T], l: &Layout, ascend: bool) -> Vec<usize> {
    let mut sel = vec![0usize; l.lines() * l.k];
    if l.k == 0 {
        return sel;
    }
    parallel::for_each_chunk_mut(&mut sel, l.k, |b, out| {
        let (o, i) = (b / l.inner, b % l.inner);
        let line = &xs[o * l.n * l.inner + i..];
        if ascend {
            first_positions(l.n, |j| line[j * l.inner].order_key(), out);
        } else {
            first_positions(l.n, |j| line[j * l.inner].order_key().flip(), out);
        }
    });
    sel
}

/// Writes the first `k` values of every line, in order, into `out`
/// (kept-shaped) under `req`, sorting the keys alone (no positions: the
/// value outputs of `sort` and of `topk` keeping more than a few). Keys
/// give back every value but the sign of `-0.0` and NaN payloads; a line
/// that holds those gets its runs of zeros and NaN refilled from the line
/// itself, in line order, so every output bit is an input's.
pub(crate) fn store_sorted_values<T>(
    xs: &[T],
    l: &Layout,
    ascend: bool,
    req: Req,
    out: &NDArray,
) -> Result<()>
where
    T: Element + OrderKey,
    T::Key: RadixItem<Key = T::Key>,
{
    let sort_line = |b: usize, dst: &mut [T]| {
        let (o, i) = (b / l.inner, b % l.inner);
        let gathered: Vec<T>;
        let line = if l.inner == 1 {
            &xs[o * l.n..(o + 1) * l.n]
        } else {
            gathered = (0..l.n).map(|j| xs[(o * l.n + j) * l.inner + i]).collect();
            &gathered
        };
        let key = |v: T| if ascend { v.order_key() } else { v.order_key().flip() };
        let keys = sort_keys(line.iter().map(|&v| key(v)).collect());
        let share = l.k.div_ceil(parts_for(l.k)).max(1);
        parallel::for_each_chunk_mut(dst, share, |t, part| {
            for (d, &k) in part.iter_mut().zip(&keys[t * share..]) {
                *d = T::from_key(if ascend { k } else { k.flip() });
            }
        });
        if !line.iter().fold(true, |all, v| all & v.key_is_exact()) {
            refill_inexact_runs(line, key, &keys, dst);
        }
    };
    if l.inner == 1 && matches!(req, Req::Write | Req::Inplace) {
        parallel::for_each_chunk_mut(out.as_mut_slice::<T>()?, l.k, sort_line);
        return Ok(());
    }
    let mut vals = vec![T::zero(); l.lines() * l.k];
    parallel::for_each_chunk_mut(&mut vals, l.k, sort_line);
    store_kept(l, req, out, |b, j, _| vals[b * l.k + j])
}

/// Refills, in `dst` (the first of a line's values sorted by `key`, whose
/// sorted keys are `keys`), the runs of keys that hold an element the key
/// does not give back exactly, with the line's elements of that key in
/// line order.
fn refill_inexact_runs<T: OrderKey>(line: &[T], key: impl Fn(T) -> T::Key, keys: &[T::Key], dst: &mut [T]) {
    let mut inexact: Vec<T::Key> = Vec::new();
    for &v in line {
        if !v.key_is_exact() && !inexact.contains(&key(v)) {
            inexact.push(key(v));
        }
    }
    for run in inexact {
        let mut to = keys.partition_point(|&k| k < run);
        for &v in line {
            if key(v) == run {
                if let Some(d) = dst.get_mut(to) {
                    *d = v;
                }
                to += 1;
            }
        }
    }
}

/// Where line `b`'s kept elements start in a kept-shaped array, and where
/// the line starts in the input; both step by `inner` along the line.
#[inline]
fn bases(l: &Layout, b: usize) -> (usize, usize) {
    let (o, i) = (b / l.inner, b % l.inner);
    (o * l.k * l.inner + i, o * l.n * l.inner + i)
}

/// Stores a kept-shaped output under `req`, element `j` of line `b` being
/// `value(b, j, line_start)`, `line_start` where the line starts in the input.
fn store_kept<T: Element>(
    l: &Layout,
    req: Req,
    out: &NDArray,
    value: impl Fn(usize, usize, usize) -> T,
) -> Result<()> {
    let fill = |dst: &mut [T]| {
        for b in 0..l.lines() {
            let (kb, ib) = bases(l, b);
            for j in 0..l.k {
                dst[kb + j * l.inner] = value(b, j, ib);
            }
        }
    };
    match req {
        Req::Null => {}
        Req::Write | Req::Inplace => fill(out.as_mut_slice::<T>()?),
        Req::Add => {
            let mut vals = vec![T::zero(); l.lines() * l.k];
            fill(&mut vals);
            store_slice(req, out.as_mut_slice::<T>()?, &vals);
        }
    }
    Ok(())
}

/// Writes the selected values of `xs` into `out` (kept-shaped) under `req`.
pub(crate) fn store_values<T: Element>(
    xs: &[T],
    sel: &[usize],
    l: &Layout,
    req: Req,
    out: &NDArray,
) -> Result<()> {
    store_kept(l, req, out, |b, j, line| xs[line + sel[b * l.k + j] * l.inner])
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
    store_kept(l, req, out, |b, j, _| T::index(sel[b * l.k + j]))
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
        let (_, ib) = bases(l, b);
        for &p in &sel[b * l.k..(b + 1) * l.k] {
            mask[ib + p * l.inner] = T::one();
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
        let (kb, ib) = bases(l, b);
        for j in 0..l.k {
            let at = kb + j * l.inner;
            let p = pos[at];
            if !(p >= 0.0 && p < l.n as f64) {
                return Err(Error::Invalid(format!(
                    "_backward_topk: index {p} is outside the sorted axis of length {}",
                    l.n
                )));
            }
            dx[ib + p as usize * l.inner] = ograd[at];
        }
    }
    store_slice(req, out.as_mut_slice::<T>()?, &dx);
    Ok(())
}
