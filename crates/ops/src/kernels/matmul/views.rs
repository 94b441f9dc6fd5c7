//! Strided matrix views: [`MatRef`] and [`MatMut`], bounds-checked on construction.

use super::MatmulError;

/// Checks that every element of a `rows x cols` view lies inside `len`.
/// Returns the offset to store (0 for an empty view, which is never read).
fn check_view(
    len: usize,
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
) -> Result<usize, MatmulError> {
    // Keeps every index `gemm` computes (`i as isize * stride`) exact.
    if rows > isize::MAX as usize || cols > isize::MAX as usize {
        return Err(MatmulError::Overflow);
    }
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    let r = (rows as i128 - 1) * row_stride as i128;
    let c = (cols as i128 - 1) * col_stride as i128;
    let lo = offset as i128 + r.min(0) + c.min(0);
    let hi = offset as i128 + r.max(0) + c.max(0);
    if lo < 0 || hi >= len as i128 {
        return Err(MatmulError::OutOfBounds { rows, cols, offset, row_stride, col_stride, len });
    }
    Ok(offset)
}

/// True when no two elements of a `rows x cols` view share an address.
///
/// Sufficient condition (exact for the usual layouts): along the dimension
/// with the smaller absolute stride, the whole extent fits between two
/// steps of the other dimension.
fn is_injective(rows: usize, cols: usize, row_stride: isize, col_stride: isize) -> bool {
    let mut dims = [(rows, row_stride.unsigned_abs()), (cols, col_stride.unsigned_abs())];
    if rows == 0 || cols == 0 {
        return true;
    }
    if rows == 1 || cols == 1 {
        let (extent, stride) = if rows > 1 { dims[0] } else { dims[1] };
        return extent <= 1 || stride != 0;
    }
    if dims[0].1 > dims[1].1 {
        dims.swap(0, 1);
    }
    let (inner, outer) = (dims[0], dims[1]);
    inner.1 != 0 && (inner.0 as u128) * (inner.1 as u128) <= outer.1 as u128
}

pub(super) fn to_isize(x: usize) -> Result<isize, MatmulError> {
    isize::try_from(x).map_err(|_| MatmulError::Overflow)
}

pub(super) fn checked_len(x: usize, y: usize) -> Result<usize, MatmulError> {
    x.checked_mul(y).ok_or(MatmulError::Overflow)
}

/// A read-only, bounds-checked strided matrix view over a slice.
///
/// Element `(i, j)` lives at `data[offset + i·row_stride + j·col_stride]`.
/// Strides are in elements and may be zero (broadcast) or negative.
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    data: &'a [T],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a, T> MatRef<'a, T> {
    /// Builds a view, checking that every element it describes is inside
    /// `data`.
    pub fn new(
        data: &'a [T],
        offset: usize,
        rows: usize,
        cols: usize,
        row_stride: isize,
        col_stride: isize,
    ) -> Result<Self, MatmulError> {
        let offset = check_view(data.len(), offset, rows, cols, row_stride, col_stride)?;
        Ok(Self { data, offset, rows, cols, row_stride, col_stride })
    }

    /// Views `data` as a contiguous row-major `rows x cols` matrix; its
    /// length must be exactly `rows·cols`.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Result<Self, MatmulError> {
        let expected = checked_len(rows, cols)?;
        if data.len() != expected {
            return Err(MatmulError::LengthMismatch { operand: "matrix", expected, actual: data.len() });
        }
        Self::new(data, 0, rows, cols, to_isize(cols)?, 1)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance between consecutive rows, in elements.
    pub fn row_stride(&self) -> isize {
        self.row_stride
    }

    /// Distance between consecutive columns, in elements.
    pub fn col_stride(&self) -> isize {
        self.col_stride
    }

    /// The transposed view (no data moves).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Element `(i, j)`, or `None` outside the view.
    pub fn get(&self, i: usize, j: usize) -> Option<&'a T> {
        if i >= self.rows || j >= self.cols {
            return None;
        }
        let idx = self.offset as isize + i as isize * self.row_stride + j as isize * self.col_stride;
        self.data.get(idx as usize)
    }

    /// Pointer to element (0, 0). Only dereferenced for non-empty views.
    pub(super) fn as_ptr(&self) -> *const T {
        self.data.as_ptr().wrapping_add(self.offset)
    }
}

/// A mutable, bounds-checked strided matrix view over a slice.
///
/// Same layout rules as [`MatRef`], plus: no two elements may share memory
/// (checked on construction), so a product can write them in parallel.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    data: &'a mut [T],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a, T> MatMut<'a, T> {
    /// Builds a view, checking that every element it describes is inside
    /// `data` and that distinct elements do not overlap.
    pub fn new(
        data: &'a mut [T],
        offset: usize,
        rows: usize,
        cols: usize,
        row_stride: isize,
        col_stride: isize,
    ) -> Result<Self, MatmulError> {
        let offset = check_view(data.len(), offset, rows, cols, row_stride, col_stride)?;
        if !is_injective(rows, cols, row_stride, col_stride) {
            return Err(MatmulError::OverlappingDestination);
        }
        Ok(Self { data, offset, rows, cols, row_stride, col_stride })
    }

    /// Views `data` as a contiguous row-major `rows x cols` matrix; its
    /// length must be exactly `rows·cols`.
    pub fn row_major(data: &'a mut [T], rows: usize, cols: usize) -> Result<Self, MatmulError> {
        let expected = checked_len(rows, cols)?;
        if data.len() != expected {
            return Err(MatmulError::LengthMismatch { operand: "matrix", expected, actual: data.len() });
        }
        let rs = to_isize(cols)?;
        Self::new(data, 0, rows, cols, rs, 1)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance between consecutive rows, in elements.
    pub fn row_stride(&self) -> isize {
        self.row_stride
    }

    /// Distance between consecutive columns, in elements.
    pub fn col_stride(&self) -> isize {
        self.col_stride
    }

    /// A shorter-lived view of the same elements, so the view can be used
    /// again after being passed by value.
    pub fn reborrow(&mut self) -> MatMut<'_, T> {
        MatMut {
            data: self.data,
            offset: self.offset,
            rows: self.rows,
            cols: self.cols,
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }

    /// The transposed view (no data moves).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Element `(i, j)`, or `None` outside the view.
    pub fn get(&self, i: usize, j: usize) -> Option<&T> {
        if i >= self.rows || j >= self.cols {
            return None;
        }
        let idx = self.offset as isize + i as isize * self.row_stride + j as isize * self.col_stride;
        self.data.get(idx as usize)
    }

    /// Pointer to element (0, 0). Only dereferenced for non-empty views.
    pub(super) fn as_mut_ptr(&mut self) -> *mut T {
        self.data.as_mut_ptr().wrapping_add(self.offset)
    }
}

/// Checks that `dst = a·b` is well-shaped; returns `(m, n, k)`.
pub(super) fn check_shapes<T>(
    dst: &MatMut<'_, T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
) -> Result<(usize, usize, usize), MatmulError> {
    if dst.rows != a.rows || a.cols != b.rows || dst.cols != b.cols {
        return Err(MatmulError::ShapeMismatch {
            dst_rows: dst.rows,
            dst_cols: dst.cols,
            a_rows: a.rows,
            a_cols: a.cols,
            b_rows: b.rows,
            b_cols: b.cols,
        });
    }
    Ok((dst.rows, dst.cols, a.cols))
}
