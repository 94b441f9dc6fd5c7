//! Devices between the engine and `oxnet.context.Context`.

use oxnet_core::{Device, HostKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// The `oxnet.Context` for `device`.
pub fn to_py(py: Python<'_>, device: Device) -> PyResult<Bound<'_, PyAny>> {
    let kind = device.type_name();
    static CONTEXT_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let class = CONTEXT_CLASS
        .get_or_try_init(py, || py.import("oxnet.context")?.getattr("Context").map(Bound::unbind))?;
    class.bind(py).call1((kind, device.ordinal()))
}

/// The device of a `Context` (or of a string such as `'cpu'`/`'cpu(0)'`).
pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    let (kind, id): (String, usize) = if let Ok(s) = obj.extract::<String>() {
        let s = s.trim().to_string();
        match s.split_once('(') {
            Some((k, rest)) => (k.to_string(), rest.trim_end_matches(')').parse().unwrap_or(0)),
            None => (s, 0),
        }
    } else {
        (obj.getattr("device_type")?.extract()?, obj.getattr("device_id")?.extract()?)
    };
    match kind.as_str() {
        "cpu" => Ok(Device::host(HostKind::Cpu, id)),
        "cpu_pinned" => Ok(Device::host(HostKind::Pinned, id)),
        "cpu_shared" => Ok(Device::host(HostKind::Shared, id)),
        "gpu" => Ok(Device::Gpu(id)),
        other => Err(PyValueError::new_err(format!("unknown device type `{other}` (expected cpu or gpu)"))),
    }
}

/// Like [`from_py`], with `None` meaning the CPU.
pub fn from_py_opt(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    match obj {
        Some(o) if !o.is_none() => from_py(o),
        _ => Ok(Device::Cpu),
    }
}
