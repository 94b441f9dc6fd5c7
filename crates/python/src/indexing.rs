//! `x[key]` and `x[key] = value`: numpy's basic indexing (integers,
//! slices, `...`, `None`) as views of the same memory, and integer arrays
//! (a copy, through the `take` operator: one along the first axis, a tuple
//! of them over the leading axes, or any mix with other entries, see
//! [`crate::advanced_index`]).

use crate::array::PyNDArray;
use crate::errors::{IntoPyResult, MXNetError};
use oxnet_core::{autograd, invoke1, AttrValue, NDArray, SliceSpec};
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyList, PySlice, PyTuple};

/// One entry of an index tuple.
enum Entry {
    Int(i64),
    Slice(SliceSpec),
    Ellipsis,
    NewAxis,
}

fn entries(key: &Bound<'_, PyAny>) -> PyResult<Vec<Entry>> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    items
        .iter()
        .map(|k| {
            if crate::advanced_index::is_integer(k)? {
                Ok(Entry::Int(k.extract()?))
            } else if let Ok(s) = k.cast::<PySlice>() {
                Ok(Entry::Slice(crate::advanced_index::slice_spec(s)?))
            } else if k.is_instance_of::<PyEllipsis>() {
                Ok(Entry::Ellipsis)
            } else if k.is_none() {
                Ok(Entry::NewAxis)
            } else {
                Err(PyTypeError::new_err(format!(
                    "NDArray indices must be integers, slices, `...`, None or integer arrays, not {}",
                    k.get_type().name()?
                )))
            }
        })
        .collect()
}

/// The view `a[key]` for basic keys. As in MXNet, a key that picks one
/// element gives shape `(1,)`, not `()`, unless NumPy-shape semantics is on
/// (`mx.util.set_np_shape(True)`).
fn basic(a: &NDArray, key: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    let v = basic_numpy(a, key)?;
    if v.ndim() > 0 || a.ndim() == 0 || np_shape(key.py())? {
        return Ok(v);
    }
    if autograd::is_recording() {
        invoke1("reshape", &[&v], &[("shape", AttrValue::Ints(vec![1]))]).py()
    } else {
        v.reshape(&[1]).py()
    }
}

/// Whether NumPy-shape semantics is on in this thread (`oxnet.util`).
fn np_shape(py: Python<'_>) -> PyResult<bool> {
    static IS_NP_SHAPE: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let f = IS_NP_SHAPE
        .get_or_try_init(py, || py.import("oxnet.util")?.getattr("is_np_shape").map(Bound::unbind))?;
    f.bind(py).call0()?.extract()
}

/// `a[key]` for basic keys with numpy's shapes.
fn basic_numpy(a: &NDArray, key: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    let entries = entries(key)?;
    let consuming = entries.iter().filter(|e| matches!(e, Entry::Int(_) | Entry::Slice(_))).count();
    if consuming > a.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices ({consuming}) for an array of {} dimensions",
            a.ndim()
        )));
    }
    // resolve `...` and trailing axes into one spec per axis
    let mut specs: Vec<SliceSpec> = Vec::with_capacity(a.ndim());
    let mut squeeze: Vec<i64> = Vec::new();
    let mut new_axes: Vec<usize> = Vec::new();
    let mut seen_ellipsis = false;
    let mut out_axis = 0usize;
    for e in &entries {
        match e {
            Entry::Int(i) => {
                let axis = specs.len();
                let len = a.shape()[axis] as i64;
                let idx = if *i < 0 { i + len } else { *i };
                if idx < 0 || idx >= len {
                    return Err(PyIndexError::new_err(format!(
                        "index {i} is out of bounds for axis {axis} with size {len}"
                    )));
                }
                specs.push(SliceSpec::range(idx, idx + 1));
                squeeze.push(out_axis as i64);
                out_axis += 1;
            }
            Entry::Slice(s) => {
                specs.push(*s);
                out_axis += 1;
            }
            Entry::Ellipsis => {
                if seen_ellipsis {
                    return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
                }
                seen_ellipsis = true;
                for _ in 0..a.ndim() - consuming {
                    specs.push(SliceSpec::all());
                    out_axis += 1;
                }
            }
            Entry::NewAxis => new_axes.push(out_axis + new_axes.len()),
        }
    }
    if autograd::is_recording() {
        return recorded(a, &specs, &squeeze, &new_axes);
    }
    let mut v = a.slice(&specs).py()?;
    if !squeeze.is_empty() {
        v = v.squeeze(Some(&squeeze)).py()?;
    }
    for axis in remap_new_axes(&new_axes, &squeeze) {
        v = v.expand_dims(axis as i64).py()?;
    }
    Ok(v)
}

/// Positions of new axes in the result after the integer-indexed axes are gone.
fn remap_new_axes(new_axes: &[usize], squeezed: &[i64]) -> Vec<usize> {
    new_axes
        .iter()
        .enumerate()
        .map(|(k, &pos)| {
            // `pos` counts earlier new axes and consumed axes; subtract squeezed axes before it
            let before = squeezed.iter().filter(|&&s| (s as usize) + k < pos).count();
            pos - before
        })
        .collect()
}

/// `a[key]` through operators, so that autograd records it.
fn recorded(a: &NDArray, specs: &[SliceSpec], squeeze: &[i64], new_axes: &[usize]) -> PyResult<NDArray> {
    let text = |f: fn(&SliceSpec) -> Option<i64>| {
        let parts: Vec<String> =
            specs.iter().map(|s| f(s).map_or("None".to_string(), |v| v.to_string())).collect();
        if parts.is_empty() {
            "()".to_string()
        } else {
            format!("({},)", parts.join(","))
        }
    };
    let mut v = invoke1(
        "slice",
        &[a],
        &[
            ("begin", AttrValue::Raw(text(|s| s.begin))),
            ("end", AttrValue::Raw(text(|s| s.end))),
            ("step", AttrValue::Raw(text(|s| s.step))),
        ],
    )
    .py()?;
    if !squeeze.is_empty() || !new_axes.is_empty() {
        let mut shape: Vec<i64> = v
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !squeeze.contains(&(*i as i64)))
            .map(|(_, &d)| d as i64)
            .collect();
        for axis in remap_new_axes(new_axes, squeeze) {
            shape.insert(axis, 1);
        }
        v = invoke1("reshape", &[&v], &[("shape", AttrValue::Ints(shape))]).py()?;
    }
    Ok(v)
}

fn as_index_array(key: &Bound<'_, PyAny>) -> PyResult<Option<NDArray>> {
    if let Ok(a) = key.cast::<PyNDArray>() {
        return Ok(Some(a.get().inner.clone()));
    }
    if !crate::advanced_index::is_integer(key)?
        && (key.is_instance_of::<PyList>() || key.hasattr("__array_interface__")?)
    {
        let arr = crate::create::array_from_any(key, None)?;
        return Ok(Some(arr));
    }
    Ok(None)
}

/// The index arrays of a tuple key made only of integer arrays (lists,
/// NDArrays, numpy arrays), or `None` for any other key.
fn index_array_tuple(key: &Bound<'_, PyAny>) -> PyResult<Option<Vec<NDArray>>> {
    let Ok(t) = key.cast::<PyTuple>() else { return Ok(None) };
    if t.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(t.len());
    for k in t.iter() {
        match as_index_array(&k)? {
            Some(a) => out.push(a),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// `a[i0, i1, ...]` for integer arrays `ik` (numpy's advanced indexing on
/// the leading axes): the arrays broadcast together, pick one element (or
/// sub-array) each. Computed as `take` on `a` with its indexed axes merged,
/// so that gradients flow as through `take`.
fn gather_leading(a: &NDArray, idx: &[NDArray]) -> PyResult<NDArray> {
    let k = idx.len();
    if k > a.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices ({k}) for an array of {} dimensions",
            a.ndim()
        )));
    }
    let mut shape: Vec<usize> = Vec::new();
    for i in idx {
        shape = oxnet_core::shape::broadcast_shapes(&shape, i.shape())
            .map_err(|_| {
                let shapes: Vec<String> = idx.iter().map(|a| format!("{:?}", a.shape())).collect();
                PyIndexError::new_err(format!(
                    "shape mismatch: indexing arrays could not be broadcast together with shapes {}",
                    shapes.join(" ")
                ))
            })?
            .to_vec();
    }
    let dims = &a.shape()[..k];
    let mut flat = vec![0f64; shape.iter().product()];
    for (axis, i) in idx.iter().enumerate() {
        let values = i.broadcast_to(&shape).py()?.to_vec::<f64>().py()?;
        let n = dims[axis] as i64;
        for (f, v) in flat.iter_mut().zip(values) {
            let j = v as i64;
            let j = if j < 0 { j + n } else { j };
            if v.fract() != 0.0 || !(0..n).contains(&j) {
                return Err(PyIndexError::new_err(format!(
                    "index {v} is out of bounds for axis {axis} with size {n}"
                )));
            }
            *f = *f * n as f64 + j as f64;
        }
    }
    let flat = NDArray::from_vec(flat, &shape).py()?;
    let mut merged: Vec<i64> = vec![dims.iter().product::<usize>() as i64];
    merged.extend(a.shape()[k..].iter().map(|&d| d as i64));
    let a2 = invoke1("reshape", &[a], &[("shape", AttrValue::Ints(merged))]).py()?;
    invoke1("take", &[&a2, &flat], &[]).py()
}

/// `a[key]`.
pub fn get(a: &NDArray, key: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    if let Some(idx) = as_index_array(key)? {
        return invoke1("take", &[a, &idx], &[]).py();
    }
    if let Some(idx) = index_array_tuple(key)? {
        return gather_leading(a, &idx);
    }
    if let Some(parts) = crate::advanced_index::parts(key)? {
        return crate::advanced_index::get(a, &parts);
    }
    basic(a, key)
}

/// `a[key] = value` (value: an NDArray, a number, or anything numpy takes).
pub fn set(a: &NDArray, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    // As in MXNet: an in-place write is not recorded, so under record() it
    // would silently cut gradients; refuse it when autograd tracks either side.
    if autograd::is_recording()
        && (a.takes_part_in_autograd()
            || value.cast::<PyNDArray>().is_ok_and(|v| v.get().inner.takes_part_in_autograd()))
    {
        return Err(MXNetError::new_err(
            "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with autograd: \
             x[key] = value would not be differentiated; build the result with operators instead",
        ));
    }
    if let Some(parts) = crate::advanced_index::parts(key)? {
        return crate::advanced_index::set(a, &parts, value);
    }
    let target = {
        let _pause = autograd::pause();
        basic(a, key)?
    };
    if let Ok(f) = value.extract::<f64>() {
        if !value.is_instance_of::<PyNDArray>() {
            return target.fill(f).py();
        }
    }
    let src = match value.cast::<PyNDArray>() {
        Ok(v) => v.get().inner.clone(),
        Err(_) => crate::create::array_from_any(value, Some(target.dtype()))?,
    };
    // numpy's rule: a value may carry extra leading dimensions of size 1
    let extra = src.ndim().saturating_sub(target.ndim());
    let src = if extra > 0 && src.shape()[..extra].iter().all(|&d| d == 1) {
        let leading: Vec<i64> = (0..extra as i64).collect();
        src.squeeze(Some(&leading)).py()?
    } else {
        src
    };
    let src = if src.shape() == target.shape() {
        src
    } else {
        src.broadcast_to(target.shape()).map_err(|e| {
            MXNetError::new_err(format!(
                "cannot assign an array of shape {:?} to a region of shape {:?}: {e}",
                src.shape(),
                target.shape()
            ))
        })?
    };
    target.assign_from(&src).py()
}

/// Whether `x[key]` for `x` of `shape` and a key of integers and slices is
/// one row-major run of `x`'s memory (numpy's `flags.contiguous` of that
/// view). MXNet's NDArray offers this as a private helper; so does oxnet.
pub fn basic_key_is_contiguous(key: &Bound<'_, PyAny>, shape: &[usize]) -> PyResult<bool> {
    let mut stride = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * shape[d + 1] as i64;
    }
    // (length, stride in elements) of each axis the view keeps
    let mut axes: Vec<(usize, i64)> = Vec::new();
    let entries = entries(key)?;
    if entries.len() > shape.len() {
        return Err(PyIndexError::new_err(format!(
            "too many indices ({}) for an array of {} dimensions",
            entries.len(),
            shape.len()
        )));
    }
    for (axis, e) in entries.iter().enumerate() {
        match e {
            Entry::Int(_) => {}
            Entry::Slice(s) => {
                let (_, step, len) = crate::advanced_index::slice_range(s, shape[axis] as i64)?;
                axes.push((len, step * stride[axis]));
            }
            _ => return Err(PyTypeError::new_err("the key must hold integers and slices only")),
        }
    }
    axes.extend((entries.len()..shape.len()).map(|axis| (shape[axis], stride[axis])));
    if axes.iter().any(|&(len, _)| len == 0) {
        return Ok(true);
    }
    let mut expected = 1i64;
    for &(len, s) in axes.iter().rev() {
        if len != 1 {
            if s != expected {
                return Ok(false);
            }
            expected *= len as i64;
        }
    }
    Ok(true)
}
