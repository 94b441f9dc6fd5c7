//! Packing many host arrays into one buffer and back in one call, for the
//! fused all-reduce of `oxnet.distributed.mpi` (a Python round trip per
//! array cost about 5 us; this costs nanoseconds per array).

use crate::array::PyNDArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Total bytes of `arrays` when every one is a contiguous host array with
/// values, of the dtype numpy names `typestr` (and writable, for
/// `writable`); None when any is not (the caller then takes its general path).
fn packed_bytes(arrays: &[PyRef<'_, PyNDArray>], typestr: &str, writable: bool) -> Option<usize> {
    let mut total = 0;
    for a in arrays {
        let x = &a.inner;
        let fits = x.device().is_host()
            && x.is_contiguous()
            && crate::dtype::typestr(x.dtype()) == Some(typestr)
            && x.check_has_values().is_ok()
            && (!writable || x.check_writable().is_ok());
        if !fits {
            return None;
        }
        total += x.size() * x.dtype().size();
    }
    Some(total)
}

/// The bytes `arrays` would take packed (see [`pack_host`]), or None when
/// they cannot be packed as they are.
#[pyfunction]
pub fn packed_size(arrays: Vec<PyRef<'_, PyNDArray>>, typestr: &str) -> Option<usize> {
    packed_bytes(&arrays, typestr, true)
}

/// Copies the elements of `arrays` one after another into the `nbytes`
/// bytes at `address` (a buffer the caller owns, such as a numpy array's),
/// or with `unpack` from there back into the arrays. The arrays must be
/// packable ([`packed_size`]) and fill exactly `nbytes`.
#[pyfunction]
pub fn pack_host(
    arrays: Vec<PyRef<'_, PyNDArray>>,
    typestr: &str,
    address: usize,
    nbytes: usize,
    unpack: bool,
) -> PyResult<()> {
    match packed_bytes(&arrays, typestr, unpack) {
        Some(total) if total == nbytes => {}
        Some(total) => {
            return Err(PyValueError::new_err(format!(
                "pack_host: the arrays take {total} bytes, the buffer has {nbytes}"
            )))
        }
        None => {
            return Err(PyValueError::new_err(format!(
                "pack_host: every array must be a contiguous{} host array of dtype {typestr}",
                if unpack { ", writable" } else { "" }
            )))
        }
    }
    if address == 0 && nbytes > 0 {
        return Err(PyValueError::new_err("pack_host: the buffer address is null"));
    }
    let mut offset = 0;
    for a in &arrays {
        let x = &a.inner;
        let n = x.size() * x.dtype().size();
        let outside = (address + offset) as *mut u8;
        // SAFETY: the caller's buffer holds `nbytes` bytes and the arrays'
        // sizes sum to exactly that; each array is contiguous host memory of
        // `n` bytes, and the two never overlap (the buffer is not an array's).
        unsafe {
            if unpack {
                std::ptr::copy_nonoverlapping(outside, x.raw_ptr(), n);
            } else {
                std::ptr::copy_nonoverlapping(x.raw_ptr() as *const u8, outside, n);
            }
        }
        offset += n;
    }
    Ok(())
}
