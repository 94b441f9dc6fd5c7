//! What the `_linalg_*` operators share: batches of matrices over the
//! trailing two axes, float32/float64-only dtype inference, reading inputs
//! as float64 and storing float64 results under a request.

use super::fmt_shape;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{numel, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{BackwardArgs, DType, Error, NDArray, Req, Result};

/// A batch of `batch` matrices of `rows x cols`, stored one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Batch {
    /// Number of matrices (the product of the leading axes).
    pub batch: usize,
    /// Rows of each matrix (the second-to-last axis).
    pub rows: usize,
    /// Columns of each matrix (the last axis).
    pub cols: usize,
}

/// `shape` as a batch of matrices over its last two axes; `op` and `what`
/// name the operator and the input in the error when it has fewer than two.
pub(super) fn batch_of(op: &str, what: &str, shape: &[usize]) -> Result<Batch> {
    let nd = shape.len();
    if nd < 2 {
        return Err(Error::Shape(format!(
            "{op}: input {what} must have at least 2 axes (a batch of matrices), got shape {}",
            fmt_shape(shape)
        )));
    }
    Ok(Batch { batch: numel(&shape[..nd - 2]), rows: shape[nd - 2], cols: shape[nd - 1] })
}

/// Like [`batch_of`], also requiring square matrices; returns `(batch, n)`.
pub(super) fn square_of(op: &str, what: &str, shape: &[usize]) -> Result<(usize, usize)> {
    let b = batch_of(op, what, shape)?;
    if b.rows != b.cols {
        return Err(Error::Shape(format!(
            "{op}: input {what} must be a tensor of square matrices, got shape {}",
            fmt_shape(shape)
        )));
    }
    Ok((b.batch, b.rows))
}

/// `shape` without its last `k` axes.
pub(super) fn leading(shape: &[usize], k: usize) -> Shape {
    Shape::from_slice(&shape[..shape.len().saturating_sub(k)])
}

/// Fills output `i` with `shape`, or errs when it is known and differs.
pub(super) fn set_out(op: &str, outs: &mut [Option<Shape>], i: usize, shape: Shape) -> Result<()> {
    match &outs[i] {
        Some(have) if *have != shape => Err(Error::Shape(format!(
            "{op}: output {i} has shape {}, the inputs give {}",
            fmt_shape(have),
            fmt_shape(&shape)
        ))),
        _ => {
            outs[i] = Some(shape);
            Ok(())
        }
    }
}

/// Dtype inference for the `_linalg_*` operators: every input and output
/// shares one dtype, which must be float32 or float64 (as in MXNet).
pub(super) fn infer_float(
    op: &'static str,
) -> impl Fn(&Attrs, &mut [Option<DType>], &mut [Option<DType>]) -> Result<()> + Send + Sync + 'static {
    move |attrs, ins, outs| {
        oxnet_core::op::same_dtype(attrs, ins, outs)?;
        match ins.iter().chain(outs.iter()).flatten().next() {
            Some(DType::F32 | DType::F64) | None => Ok(()),
            Some(other) => Err(Error::DType(format!(
                "{op}: this operation only supports float32 and float64, got {other}"
            ))),
        }
    }
}

/// The values of `x` as float64, row-major.
pub(super) fn read(x: &NDArray) -> Result<Vec<f64>> {
    x.to_vec::<f64>()
}

/// Stores float64 `values` into the contiguous output `out` under `req`,
/// rounded to its dtype.
pub(super) fn write(req: Req, out: &NDArray, values: &[f64]) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    if out.size() != values.len() {
        return Err(Error::Shape(format!(
            "linalg: a result of {} elements for an output of shape {}",
            values.len(),
            fmt_shape(out.shape())
        )));
    }
    match out.dtype() {
        DType::F32 => {
            let v: Vec<f32> = values.iter().map(|x| *x as f32).collect();
            store_slice(req, out.as_mut_slice::<f32>()?, &v);
        }
        DType::F64 => store_slice(req, out.as_mut_slice::<f64>()?, values),
        other => {
            return Err(Error::DType(format!("linalg: only float32 and float64 are supported, got {other}")))
        }
    }
    Ok(())
}

/// A saved array a backward kernel needs (`kind` is "input", "output" or
/// "output gradient").
pub(super) fn saved<'a>(op: &str, list: &'a [Option<NDArray>], i: usize, kind: &str) -> Result<&'a NDArray> {
    list.get(i)
        .and_then(Option::as_ref)
        .ok_or_else(|| Error::Autograd(format!("{op}: the backward kernel lacks {kind} {i}")))
}

/// The gradient of output `i` as float64 values (zeros of `len` when none
/// is given).
pub(super) fn out_grad(args: &BackwardArgs, i: usize, len: usize) -> Result<Vec<f64>> {
    match args.out_grads.get(i).and_then(Option::as_ref) {
        Some(g) => read(g),
        None => Ok(vec![0.0; len]),
    }
}

/// Runs `f` on each matrix of a batch: `f(b)` returns the results of item
/// `b`, appended to the output vectors in order.
pub(super) fn per_item<const N: usize>(
    batch: usize,
    mut f: impl FnMut(usize) -> Result<[Vec<f64>; N]>,
) -> Result<[Vec<f64>; N]> {
    let mut outs: [Vec<f64>; N] = std::array::from_fn(|_| Vec::new());
    for b in 0..batch {
        for (o, part) in outs.iter_mut().zip(f(b)?) {
            o.extend(part);
        }
    }
    Ok(outs)
}
