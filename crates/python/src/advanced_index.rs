//! numpy's advanced indexing for any key that holds an integer array among
//! integers, slices, `...` and `None` (`x[1, [2, 3], :, idx]`): which
//! element of `x` each element of the result is, as row-major positions.
//! Reading gathers them (`take` on the flattened array, so gradients flow);
//! assigning writes the value there ([`NDArray::scatter_flat`]).
//!
//! The rules are numpy's: once one entry is an array, integers count as
//! (0-d) index arrays too; all index arrays broadcast together to one shape
//! `B`; the result has `B`'s axes where the index arrays stand when they are
//! adjacent in the key, and first otherwise; slices and `None` keep their
//! axes in order around them.

use crate::array::PyNDArray;
use crate::errors::IntoPyResult;
use oxnet_core::{AttrValue, NDArray, SliceSpec};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyInt, PyList, PySlice, PyTuple};

/// One entry of a key that holds an index array.
pub(crate) enum Part {
    Int(i64),
    Slice(SliceSpec),
    Ellipsis,
    NewAxis,
    Array(NDArray),
}

/// An integer array given as an index: an NDArray, a numpy array, a list,
/// or (inside a key tuple) a tuple.
fn index_array(k: &Bound<'_, PyAny>, tuples_too: bool) -> PyResult<Option<NDArray>> {
    if let Ok(a) = k.cast::<PyNDArray>() {
        return Ok(Some(a.get().inner.clone()));
    }
    if is_integer(k)? {
        return Ok(None);
    }
    let tuple = tuples_too && k.is_instance_of::<PyTuple>();
    if tuple || k.is_instance_of::<PyList>() || k.hasattr("__array_interface__")? {
        if k.hasattr("dtype")? && k.getattr("dtype")?.getattr("kind")?.extract::<String>()? == "b" {
            return Err(PyIndexError::new_err("boolean-mask indices are not supported; use integer arrays"));
        }
        return crate::create::array_from_any(k, Some(oxnet_core::DType::F64)).map(Some);
    }
    Ok(None)
}

/// A Python slice's start, stop and step (each `None` when unset).
pub(crate) fn slice_spec(s: &Bound<'_, PySlice>) -> PyResult<SliceSpec> {
    let part = |name: &str| -> PyResult<Option<i64>> {
        let v = s.getattr(name)?;
        if v.is_none() {
            Ok(None)
        } else {
            v.extract().map(Some)
        }
    };
    Ok(SliceSpec { begin: part("start")?, end: part("stop")?, step: part("step")? })
}

/// Whether `k` is one integer: a Python int, or a numpy integer (also a
/// 0-d integer array), as numpy reads them in keys.
pub(crate) fn is_integer(k: &Bound<'_, PyAny>) -> PyResult<bool> {
    if k.is_instance_of::<PyInt>() {
        return Ok(true);
    }
    if k.is_instance_of::<PyNDArray>() || !k.hasattr("__index__")? {
        return Ok(false);
    }
    Ok(!k.hasattr("ndim")? || k.getattr("ndim")?.extract::<usize>()? == 0)
}

/// The parts of `key` when it holds at least one index array; `None` for
/// keys of integers, slices, `...` and `None` alone (basic indexing).
pub(crate) fn parts(key: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Part>>> {
    if let Some(a) = index_array(key, false)? {
        return Ok(Some(vec![Part::Array(a)]));
    }
    let Ok(t) = key.cast::<PyTuple>() else { return Ok(None) };
    let mut out = Vec::with_capacity(t.len());
    let mut any_array = false;
    for k in t.iter() {
        let part = if is_integer(&k)? {
            Part::Int(k.extract()?)
        } else if let Ok(s) = k.cast::<PySlice>() {
            Part::Slice(slice_spec(s)?)
        } else if k.is_instance_of::<PyEllipsis>() {
            Part::Ellipsis
        } else if k.is_none() {
            Part::NewAxis
        } else if let Some(a) = index_array(&k, true)? {
            any_array = true;
            Part::Array(a)
        } else {
            return Err(PyTypeError::new_err(format!(
                "NDArray indices must be integers, slices, `...`, None or integer arrays, not {}",
                k.get_type().name()?
            )));
        };
        out.push(part);
    }
    Ok(any_array.then_some(out))
}

/// Python's `slice.indices` for an axis of `n`: first index, step, length.
pub(crate) fn slice_range(s: &SliceSpec, n: i64) -> PyResult<(i64, i64, usize)> {
    let step = s.step.unwrap_or(1);
    if step == 0 {
        return Err(PyValueError::new_err("slice step cannot be zero"));
    }
    let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let clamp = |v: Option<i64>, default: i64| match v {
        None => default,
        Some(v) if v < 0 => (v + n).max(lo),
        Some(v) => v.min(hi),
    };
    let (start, stop) = if step > 0 {
        (clamp(s.begin, 0), clamp(s.end, n))
    } else {
        (clamp(s.begin, n - 1), clamp(s.end, -1))
    };
    let len = if step > 0 { (stop - start + step - 1) / step } else { (start - stop - step - 1) / -step };
    Ok((start, step, len.max(0) as usize))
}

/// One axis of the result: its length and, for each of its indices, what
/// it adds to the row-major position in the indexed array.
struct ResultAxis {
    dims: Vec<usize>,
    offsets: Vec<usize>,
}

/// The shape of `x[parts]` for `x` of `shape`, and the row-major position
/// in `x` of each of its elements.
pub(crate) fn positions(shape: &[usize], parts: &[Part]) -> PyResult<(Vec<usize>, Vec<usize>)> {
    let ndim = shape.len();
    let consuming = parts.iter().filter(|p| !matches!(p, Part::Ellipsis | Part::NewAxis)).count();
    if consuming > ndim {
        return Err(PyIndexError::new_err(format!(
            "too many indices ({consuming}) for an array of {ndim} dimensions"
        )));
    }
    if parts.iter().filter(|p| matches!(p, Part::Ellipsis)).count() > 1 {
        return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
    }
    // row-major strides of `shape`, in elements
    let mut stride = vec![1usize; ndim];
    for d in (0..ndim.saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * shape[d + 1];
    }
    let mut axes: Vec<ResultAxis> = Vec::new();
    // the index arrays: (axis of x, values) and where they stand among the parts
    let mut arrays: Vec<(usize, NDArray)> = Vec::new();
    let mut array_slots: Vec<usize> = Vec::new();
    let mut broadcast_at = None;
    let mut axis = 0usize;
    let full = |axis: usize| ResultAxis {
        dims: vec![shape[axis]],
        offsets: (0..shape[axis]).map(|j| j * stride[axis]).collect(),
    };
    for (slot, p) in parts.iter().enumerate() {
        match p {
            Part::Int(i) => {
                arrays.push((axis, NDArray::from_vec(vec![*i as f64], &[]).py()?));
                array_slots.push(slot);
                broadcast_at.get_or_insert(axes.len());
                axis += 1;
            }
            Part::Array(a) => {
                arrays.push((axis, a.clone()));
                array_slots.push(slot);
                broadcast_at.get_or_insert(axes.len());
                axis += 1;
            }
            Part::Slice(s) => {
                let (start, step, len) = slice_range(s, shape[axis] as i64)?;
                let offsets = (0..len as i64).map(|j| (start + j * step) as usize * stride[axis]).collect();
                axes.push(ResultAxis { dims: vec![len], offsets });
                axis += 1;
            }
            Part::NewAxis => axes.push(ResultAxis { dims: vec![1], offsets: vec![0] }),
            Part::Ellipsis => {
                for _ in 0..ndim - consuming {
                    axes.push(full(axis));
                    axis += 1;
                }
            }
        }
    }
    while axis < ndim {
        axes.push(full(axis));
        axis += 1;
    }
    // the index arrays broadcast together, each element a position offset
    let mut b_shape: Vec<usize> = Vec::new();
    for (_, a) in &arrays {
        b_shape = oxnet_core::shape::broadcast_shapes(&b_shape, a.shape())
            .map_err(|_| {
                let shapes: Vec<String> = arrays.iter().map(|(_, a)| format!("{:?}", a.shape())).collect();
                PyIndexError::new_err(format!(
                    "shape mismatch: indexing arrays could not be broadcast together with shapes {}",
                    shapes.join(" ")
                ))
            })?
            .to_vec();
    }
    let mut gathered = vec![0usize; b_shape.iter().product()];
    for (x_axis, a) in &arrays {
        let n = shape[*x_axis] as i64;
        let values = a.broadcast_to(&b_shape).py()?.to_vec::<f64>().py()?;
        for (g, v) in gathered.iter_mut().zip(values) {
            let j = v as i64;
            let j = if j < 0 { j + n } else { j };
            if v.fract() != 0.0 || !(0..n).contains(&j) {
                return Err(PyIndexError::new_err(format!(
                    "index {v} is out of bounds for axis {x_axis} with size {n}"
                )));
            }
            *g += j as usize * stride[*x_axis];
        }
    }
    let adjacent = array_slots.windows(2).all(|w| w[1] == w[0] + 1);
    let at = if adjacent { broadcast_at.unwrap_or(0) } else { 0 };
    axes.insert(at, ResultAxis { dims: b_shape, offsets: gathered });
    // every combination, the last axis fastest
    let mut out_shape = Vec::new();
    let mut pos = vec![0usize];
    for ax in &axes {
        out_shape.extend(&ax.dims);
        pos = pos.iter().flat_map(|&p| ax.offsets.iter().map(move |&o| p + o)).collect();
    }
    Ok((out_shape, pos))
}

/// `x[parts]`: a gather through `take`, so that autograd records it.
pub(crate) fn get(x: &NDArray, parts: &[Part]) -> PyResult<NDArray> {
    let (shape, pos) = positions(x.shape(), parts)?;
    let idx = NDArray::from_vec(pos.iter().map(|&p| p as i64).collect::<Vec<_>>(), &shape).py()?;
    let flat = oxnet_core::invoke1("reshape", &[x], &[("shape", AttrValue::Ints(vec![-1]))]).py()?;
    oxnet_core::invoke1("take", &[&flat, &idx], &[]).py()
}

/// `x[parts] = value` (`value` broadcast to the indexed shape, numpy's way).
pub(crate) fn set(x: &NDArray, parts: &[Part], value: &Bound<'_, PyAny>) -> PyResult<()> {
    let (shape, pos) = positions(x.shape(), parts)?;
    let src = match value.cast::<PyNDArray>() {
        Ok(v) => v.get().inner.clone(),
        Err(_) => match value.extract::<f64>() {
            Ok(f) => NDArray::from_vec(vec![f], &[]).py()?,
            Err(_) => crate::create::array_from_any(value, Some(x.dtype()))?,
        },
    };
    let extra = src.ndim().saturating_sub(shape.len());
    let src = if extra > 0 && src.shape()[..extra].iter().all(|&d| d == 1) {
        src.squeeze(Some(&(0..extra as i64).collect::<Vec<_>>())).py()?
    } else {
        src
    };
    let src = src.broadcast_to(&shape).map_err(|e| {
        crate::errors::MXNetError::new_err(format!(
            "cannot assign an array of shape {:?} to an indexed region of shape {shape:?}: {e}",
            src.shape()
        ))
    })?;
    x.scatter_flat(&pos, &src).py()
}
