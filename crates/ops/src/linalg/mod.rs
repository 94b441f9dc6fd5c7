//! Built-in operators: matrix products (`dot`, `batch_dot`, `FullyConnected`,
//! `khatri_rao`)
//! and MXNet's `linalg` family (`_linalg_gemm`, `_linalg_potrf`, ...,
//! exposed in Python as `mx.nd.linalg.*`).
//!
//! Every product goes through [`crate::kernels::matmul`]. Operands that are
//! transposed views of dense buffers (such as `x.T`) are handed to the GEMM
//! as transposed operands, not copied; `req = add` is the GEMM's native
//! accumulation.

mod dot;
mod fully_connected;
mod khatri_rao;
mod la_common;
mod la_dense;
mod la_diag;
mod la_factor;
mod la_gemm;
mod la_inverse;
mod la_tri;

use crate::kernels::matmul::{self, MatmulError};
use crate::util::call;
use oxnet_core::{AttrValue, Element, Error, NDArray, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    dot::register();
    fully_connected::register();
    khatri_rao::register();
    la_gemm::register();
    la_tri::register();
    la_factor::register();
    la_inverse::register();
    la_diag::register();
}

/// Merges a run of axes into one `(extent, stride)`, if the layout allows
/// it (axes of length 1 are ignored).
fn merge_axes(shape: &[usize], strides: &[isize]) -> Option<(usize, isize)> {
    let mut extent = 1usize;
    let mut inner_stride = 0isize;
    let mut expect: Option<isize> = None;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d == 1 {
            continue;
        }
        match expect {
            None => inner_stride = s,
            Some(e) if e != s => return None,
            Some(_) => {}
        }
        extent *= d;
        expect = Some(s.checked_mul(d as isize)?);
    }
    Some((extent, inner_stride))
}

/// `x` seen as `batch` dense matrices of `rows x cols`: the axes
/// `[0, b_end)` form the batch, `[b_end, r_end)` the rows and the rest the
/// columns. Returns the buffer and whether it stores each matrix transposed
/// (column-major), or `None` when the layout is not dense that way.
fn dense_matrices<T: Element>(x: &NDArray, b_end: usize, r_end: usize) -> Result<Option<(&[T], bool)>> {
    let (shape, strides) = (x.shape(), x.strides());
    let merged = |lo: usize, hi: usize| merge_axes(&shape[lo..hi], &strides[lo..hi]);
    let (Some((nb, bs)), Some((rows, rs)), Some((cols, cs))) =
        (merged(0, b_end), merged(b_end, r_end), merged(r_end, shape.len()))
    else {
        return Ok(None);
    };
    let len = nb * rows * cols;
    let ptr = x.data_ptr::<T>()?;
    x.device().ensure_available()?;
    if len == 0 {
        return Ok(Some((&[], false)));
    }
    let batch_ok = nb <= 1 || bs == (rows * cols) as isize;
    let row_major = (rows <= 1 || rs == cols as isize) && (cols <= 1 || cs == 1);
    let col_major = (cols <= 1 || cs == rows as isize) && (rows <= 1 || rs == 1);
    if !batch_ok || !(row_major || col_major) {
        return Ok(None);
    }
    // SAFETY: the checks above make the view a dense block of `len`
    // elements starting at element 0, inside the storage that `x` keeps alive.
    let data = unsafe { std::slice::from_raw_parts(ptr as *const T, len) };
    Ok(Some((data, !row_major)))
}

/// Converts a matmul refusal (a bug in the callers' shape logic, since
/// shapes are checked first) into an engine error.
fn gemm_err(e: MatmulError) -> Error {
    Error::Shape(e.to_string())
}

/// One product: `out (m x n) = op(a)·op(b)` where `a` views `x` as
/// `batch x (rows split at a_split)` matrices, likewise `b`. `accumulate`
/// adds into `out`.
#[allow(clippy::too_many_arguments)]
fn gemm_arrays<T: matmul::MatmulScalar + Element>(
    x: &NDArray,
    x_split: (usize, usize),
    trans_x: bool,
    w: &NDArray,
    w_split: (usize, usize),
    trans_w: bool,
    out: &mut [T],
    dims: (usize, usize, usize, usize),
    accumulate: bool,
) -> Result<()> {
    let (batch, m, k, n) = dims;
    let x_copy;
    let (a, a_col) = match dense_matrices::<T>(x, x_split.0, x_split.1)? {
        Some(v) => v,
        None => {
            x_copy = x.copy()?;
            (x_copy.as_slice::<T>()?, false)
        }
    };
    let w_copy;
    let (b, b_col) = match dense_matrices::<T>(w, w_split.0, w_split.1)? {
        Some(v) => v,
        None => {
            w_copy = w.copy()?;
            (w_copy.as_slice::<T>()?, false)
        }
    };
    let (ta, tb) = (trans_x ^ a_col, trans_w ^ b_col);
    if batch == 1 {
        matmul::matmul(a, b, out, m, k, n, ta, tb, accumulate).map_err(gemm_err)
    } else {
        matmul::batch_matmul(a, b, out, batch, m, k, n, ta, tb, accumulate).map_err(gemm_err)
    }
}

/// Reshapes through the `reshape` operator (so that autograd sees it),
/// unless `x` already has `shape`.
fn reshape_op(x: &NDArray, shape: &[usize]) -> Result<NDArray> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let spec: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
    call("reshape", &[x], &[("shape", AttrValue::Ints(spec))])
}

/// Calls `dot` with transpose flags.
fn dot_op(a: &NDArray, b: &NDArray, ta: bool, tb: bool) -> Result<NDArray> {
    call("dot", &[a, b], &[("transpose_a", ta.into()), ("transpose_b", tb.into())])
}

/// Calls `batch_dot` with transpose flags.
fn batch_dot_op(a: &NDArray, b: &NDArray, ta: bool, tb: bool) -> Result<NDArray> {
    call("batch_dot", &[a, b], &[("transpose_a", ta.into()), ("transpose_b", tb.into())])
}

/// Formats a shape for error messages: `(2, 3)`.
fn fmt_shape(s: &[usize]) -> String {
    match s.len() {
        1 => format!("({},)", s[0]),
        _ => format!("({})", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::DType;

    #[test]
    fn merging_and_dense_views() {
        assert_eq!(merge_axes(&[2, 3, 4], &[12, 4, 1]), Some((24, 1)));
        assert_eq!(merge_axes(&[2, 1, 4], &[4, 99, 1]), Some((8, 1)));
        assert_eq!(merge_axes(&[2, 3], &[1, 2]), None);
        assert_eq!(merge_axes(&[], &[]), Some((1, 0)));
        let x = NDArray::arange(0.0, 6.0, 1.0, DType::F32).unwrap().reshape(&[2, 3]).unwrap();
        let (d, col) = dense_matrices::<f32>(&x, 0, 1).unwrap().unwrap();
        assert!(!col && d.len() == 6);
        let t = x.transpose(None).unwrap();
        let (d, col) = dense_matrices::<f32>(&t, 0, 1).unwrap().unwrap();
        assert!(col && d == [0., 1., 2., 3., 4., 5.]);
        // a strided slice is not dense
        let s = x.slice_axis(1, 0, Some(2)).unwrap();
        assert!(dense_matrices::<f32>(&s, 0, 1).unwrap().is_none());
        assert_eq!(fmt_shape(&[3]), "(3,)");
        assert_eq!(fmt_shape(&[2, 3]), "(2, 3)");
    }
}
