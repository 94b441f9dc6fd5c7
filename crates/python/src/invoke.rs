//! Calling registry operators from Python: `nd.<op>(*arrays, **attrs)`.
//!
//! The Python module `oxnet.ndarray` makes one function per registry
//! operator (with its docstring) that calls [`invoke`] with the operator's
//! [`OpHandle`]. Arrays may come positionally or by argument name;
//! attributes come as keywords (or positionally after the arrays, in
//! declared order); `out=` writes into given arrays.

use crate::array::PyNDArray;
use crate::errors::{IntoPyResult, MXNetError};
use oxnet_core::registry::{self, Op};
use oxnet_core::{AttrKind, AttrValue, NDArray, Req};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A looked-up registry operator.
#[pyclass(frozen, module = "oxnet._oxnet")]
pub struct OpHandle {
    pub(crate) op: Op,
    /// Whether the operator takes a `num_args` attribute that counts its arrays.
    counts_args: bool,
}

#[pymethods]
impl OpHandle {
    /// The operator's registered name.
    #[getter]
    fn name(&self) -> &str {
        &self.op.name
    }

    fn __repr__(&self) -> String {
        format!("<oxnet operator {}>", self.op.name)
    }
}

/// Looks up operator `name` (a clear error if there is none).
#[pyfunction]
pub fn op_handle(name: &str) -> PyResult<OpHandle> {
    let op = registry::get(name).py()?;
    let counts_args = op.attrs.iter().any(|a| a.name == "num_args");
    Ok(OpHandle { op, counts_args })
}

/// Converts a Python keyword value into an attribute value. Strings stay
/// unparsed so that the operator parses them by its declared kind.
pub fn attr_value(obj: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    if obj.is_none() {
        return Ok(AttrValue::None);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(AttrValue::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(AttrValue::Int(obj.extract()?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(AttrValue::Float(obj.extract()?));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(AttrValue::Raw(s.to_string()));
    }
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        // integers of any kind (numpy's too, through `__index__`)
        let ints: PyResult<Vec<i64>> =
            obj.try_iter()?.map(|item| item?.call_method0("__index__")?.extract()).collect();
        if let Ok(ints) = ints {
            return Ok(AttrValue::Ints(ints));
        }
        // other items (numpy floats among them) as their Python values'
        // text: `(np.float64(0.5), 2)` reads as `(0.5, 2)`
        let plain: Vec<Bound<'_, PyAny>> =
            obj.try_iter()?.map(|item| python_value(&item?)).collect::<PyResult<_>>()?;
        return Ok(AttrValue::Raw(PyTuple::new(obj.py(), plain)?.str()?.to_string()));
    }
    // numpy scalars and arrays: their Python values (`np.array([3, 4])`,
    // `np.float32(0.5)`, `np.bool_(True)` read as MXNet reads them), before
    // numpy's dtype constructor could read them as dtypes
    if is_numpy_value(obj)? {
        if let Ok(plain) = obj.call_method0("tolist") {
            return attr_value(&plain);
        }
    }
    if let Ok(dt) = crate::dtype::from_py(obj) {
        return Ok(AttrValue::DType(dt));
    }
    // numpy scalars and anything else: their text, parsed by declared kind
    Ok(AttrValue::Raw(obj.str()?.to_string()))
}

/// Whether `obj` is a numpy scalar or array (not a dtype or a type).
fn is_numpy_value(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.get_type().module()?.to_string() == "numpy" && obj.hasattr("tolist")?)
}

/// `obj` as a plain Python value (a numpy scalar's `tolist()`), else itself.
fn python_value<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if is_numpy_value(obj)? {
        obj.call_method0("tolist")
    } else {
        Ok(obj.clone())
    }
}

/// Python's `str(value)`: how keywords reach operators that accept any
/// attribute (the reference passed a custom operator's kwargs as strings).
fn attr_text(obj: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    Ok(AttrValue::Raw(obj.str()?.to_string()))
}

/// Calls `handle`'s operator and returns its output (a list when it has
/// several), or `out` when given.
#[pyfunction]
#[pyo3(signature = (handle, args, kwargs=None))]
pub fn invoke<'py>(
    py: Python<'py>,
    handle: &OpHandle,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let _api = crate::profiler::api_span("ImperativeInvoke");
    let op = &handle.op;
    let mut positional: Vec<NDArray> = Vec::with_capacity(args.len());
    let mut attr_pairs: Vec<(String, AttrValue)> = Vec::new();
    let mut positional_attrs = op.attrs.iter();
    for arg in args.iter() {
        if let Ok(a) = arg.cast::<PyNDArray>() {
            if !attr_pairs.is_empty() {
                return Err(MXNetError::new_err(format!(
                    "operator `{}`: arrays must come before positional attributes",
                    op.name
                )));
            }
            positional.push(a.get().inner.clone());
        } else if arg.is_none() {
            continue;
        } else {
            let spec = positional_attrs.next().ok_or_else(|| {
                MXNetError::new_err(format!(
                    "operator `{}`: too many positional arguments (got {})",
                    op.name,
                    args.len()
                ))
            })?;
            attr_pairs.push((spec.name.clone(), attr_value(&arg)?));
        }
    }
    let mut named: Vec<(String, NDArray)> = Vec::new();
    let mut out: Option<Bound<'py, PyAny>> = None;
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            let key = k.cast::<PyString>()?.to_string();
            match key.as_str() {
                "out" => {
                    if !v.is_none() {
                        out = Some(v);
                    }
                    continue;
                }
                "name" | "ctx" if !op.attrs.iter().any(|a| a.name == key) => continue,
                _ => {}
            }
            if let Ok(a) = v.cast::<PyNDArray>() {
                named.push((key, a.get().inner.clone()));
            } else if op.allow_extra_attrs && !op.attrs.iter().any(|a| a.name == key) {
                attr_pairs.push((key, attr_text(&v)?));
            } else {
                let spec_kind = op.attrs.iter().find(|a| a.name == key).map(|a| &a.kind);
                let value = match (spec_kind, attr_value(&v)?) {
                    // a dtype attribute given as a numpy type
                    (Some(AttrKind::DType), AttrValue::Raw(_)) => {
                        AttrValue::DType(crate::dtype::from_py(&v)?)
                    }
                    (_, value) => value,
                };
                attr_pairs.push((key, value));
            }
        }
    }
    if handle.counts_args && !attr_pairs.iter().any(|(k, _)| k == "num_args") {
        attr_pairs.push(("num_args".into(), AttrValue::Int((positional.len() + named.len()) as i64)));
    }
    let pairs: Vec<(&str, AttrValue)> = attr_pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let attrs = op.parse_attrs(&pairs).py()?;
    let inputs = if named.is_empty() { positional } else { arrange_inputs(op, &attrs, positional, named)? };

    match out {
        None => {
            let outputs = py.detach(|| {
                let refs: Vec<&NDArray> = inputs.iter().collect();
                oxnet_core::invoke_op(op, &refs, &attrs)
            });
            let mut outputs = outputs.py()?;
            outputs.truncate(op.visible_count(outputs.len()));
            wrap_outputs(py, outputs)
        }
        Some(out_obj) => {
            let targets = crate::array::one_or_many(&out_obj)?;
            let req = vec![Req::Write; targets.len()];
            py.detach(|| {
                let refs: Vec<&NDArray> = inputs.iter().collect();
                let total = oxnet_core::dispatch::arity(op, &attrs)?.2;
                match op.visible_count(total) {
                    // `out` names the visible outputs only (Dropout, RNN): the
                    // hidden ones get fresh buffers and the visible are copied over
                    n if n < total && targets.len() == n => {
                        let outputs = oxnet_core::invoke_op(op, &refs, &attrs)?;
                        for (t, o) in targets.iter().zip(&outputs) {
                            t.assign_from(o)?;
                        }
                        Ok(())
                    }
                    _ => oxnet_core::invoke_into(op, &refs, &attrs, &targets, &req),
                }
            })
            .py()?;
            Ok(out_obj)
        }
    }
}

/// Places keyword arrays by argument (and aux-state) name after the positional ones.
fn arrange_inputs(
    op: &Op,
    attrs: &oxnet_core::Attrs,
    positional: Vec<NDArray>,
    named: Vec<(String, NDArray)>,
) -> PyResult<Vec<NDArray>> {
    let mut names = (op.arguments)(attrs).py()?;
    names.extend((op.aux_states)(attrs).py()?);
    let mut slots: Vec<Option<NDArray>> = vec![None; names.len().max(positional.len())];
    for (i, a) in positional.into_iter().enumerate() {
        slots[i] = Some(a);
    }
    for (key, a) in named {
        let i = names.iter().position(|n| *n == key).ok_or_else(|| {
            MXNetError::new_err(format!(
                "operator `{}` has no argument `{key}` (its arguments: {})",
                op.name,
                names.join(", ")
            ))
        })?;
        if slots[i].is_some() {
            return Err(MXNetError::new_err(format!("operator `{}`: argument `{key}` given twice", op.name)));
        }
        slots[i] = Some(a);
    }
    let filled = slots.iter().take_while(|s| s.is_some()).count();
    if slots[filled..].iter().any(Option::is_some) {
        return Err(MXNetError::new_err(format!(
            "operator `{}`: argument `{}` is missing",
            op.name, names[filled]
        )));
    }
    Ok(slots.into_iter().flatten().collect())
}

/// One output as an NDArray, several as a list.
pub fn wrap_outputs(py: Python<'_>, mut outputs: Vec<NDArray>) -> PyResult<Bound<'_, PyAny>> {
    if outputs.len() == 1 {
        return Ok(Bound::new(py, PyNDArray::from(outputs.swap_remove(0)))?.into_any());
    }
    let items =
        outputs.into_iter().map(|o| Bound::new(py, PyNDArray::from(o))).collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any())
}

/// What `oxnet.ndarray` needs to generate a function per operator: for each,
/// `(name, aliases, doc, arguments, attrs, variadic)` where `attrs` lists
/// `(name, kind, default or None, doc)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn list_ops(
) -> Vec<(String, Vec<String>, String, Vec<String>, Vec<(String, String, Option<String>, String)>, bool)> {
    registry::list_ops()
        .into_iter()
        .map(|info| {
            let attrs = info
                .attrs
                .iter()
                .map(|a| {
                    (
                        a.name.clone(),
                        a.kind.to_string(),
                        a.default.as_ref().map(|d| d.to_string()),
                        a.doc.clone(),
                    )
                })
                .collect();
            let variadic = info.allow_extra_attrs || info.attrs.iter().any(|a| a.name == "num_args");
            (info.name, info.aliases, info.doc, info.arguments, attrs, variadic)
        })
        .collect()
}
