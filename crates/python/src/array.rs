//! The `NDArray` Python class: a handle onto an engine array.

use crate::errors::{IntoPyResult, MXNetError};
use crate::{dtype, indexing, numpy_interop};
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::{invoke1, AttrValue, NDArray};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyTuple};

/// An n-dimensional array (the reference's `mxnet.nd.NDArray`).
///
/// Handles share memory: views (`x[1:3]`, `x.reshape(...)`, `x.T`) and the
/// arrays a custom operator receives see the engine's buffers, not copies.
#[pyclass(frozen, weakref, name = "NDArray", module = "oxnet.ndarray")]
pub struct PyNDArray {
    pub(crate) inner: NDArray,
}

impl From<NDArray> for PyNDArray {
    fn from(inner: NDArray) -> Self {
        PyNDArray { inner }
    }
}

/// Wraps an engine array as a new Python object.
pub fn wrap(py: Python<'_>, a: NDArray) -> PyResult<Bound<'_, PyNDArray>> {
    Bound::new(py, PyNDArray { inner: a })
}

/// The engine arrays of one NDArray or a sequence of them (`out=`,
/// `autograd.backward(heads)`, a customop function's result).
pub fn one_or_many(obj: &Bound<'_, PyAny>) -> PyResult<Vec<NDArray>> {
    if let Ok(a) = obj.cast::<PyNDArray>() {
        return Ok(vec![a.get().inner.clone()]);
    }
    Ok(obj.extract::<Vec<PyRef<'_, PyNDArray>>>()?.iter().map(|a| a.inner.clone()).collect())
}

/// A binary operator's operand: an array or a Python number.
enum Operand {
    Array(NDArray),
    Scalar(f64),
}

fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(a) = obj.cast::<PyNDArray>() {
        return Ok(Some(Operand::Array(a.get().inner.clone())));
    }
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        return Ok(Some(Operand::Scalar(obj.extract()?)));
    }
    // numpy scalars
    if obj.hasattr("dtype")? && obj.hasattr("item")? && obj.getattr("ndim")?.extract::<usize>()? == 0 {
        return Ok(Some(Operand::Scalar(obj.call_method0("item")?.extract()?)));
    }
    Ok(None)
}

/// Operator names for one binary operation: (array op, scalar op, reversed scalar op).
type BinaryNames = (&'static str, &'static str, &'static str);

const ADD: BinaryNames = ("broadcast_add", "_plus_scalar", "_plus_scalar");
const SUB: BinaryNames = ("broadcast_sub", "_minus_scalar", "_rminus_scalar");
const MUL: BinaryNames = ("broadcast_mul", "_mul_scalar", "_mul_scalar");
const DIV: BinaryNames = ("broadcast_div", "_div_scalar", "_rdiv_scalar");
const POW: BinaryNames = ("broadcast_power", "_power_scalar", "_rpower_scalar");
const MOD: BinaryNames = ("broadcast_mod", "_mod_scalar", "_rmod_scalar");
const EQ: BinaryNames = ("broadcast_equal", "_equal_scalar", "_equal_scalar");
const NE: BinaryNames = ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar");
const LT: BinaryNames = ("broadcast_lesser", "_lesser_scalar", "_greater_scalar");
const LE: BinaryNames = ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar");
const GT: BinaryNames = ("broadcast_greater", "_greater_scalar", "_lesser_scalar");
const GE: BinaryNames = ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar");

impl PyNDArray {
    fn binary<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        names: BinaryNames,
        reversed: bool,
    ) -> PyResult<Option<NDArray>> {
        let Some(other) = operand(other)? else { return Ok(None) };
        let me = self.inner.clone();
        let out = py.detach(|| match other {
            Operand::Array(o) => {
                let (a, b) = if reversed { (o, me) } else { (me, o) };
                invoke1(names.0, &[&a, &b], &[])
            }
            Operand::Scalar(s) => {
                let name = if reversed { names.2 } else { names.1 };
                invoke1(name, &[&me], &[("scalar", AttrValue::Float(s))])
            }
        });
        out.py().map(Some)
    }

    fn binary_obj<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        names: BinaryNames,
        reversed: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.binary(py, other, names, reversed)? {
            Some(a) => Ok(wrap(py, a)?.into_any()),
            None => Ok(py.NotImplemented().into_bound(py)),
        }
    }

    /// `self op= other`: computes, then writes the result into `self`.
    fn inplace(&self, py: Python<'_>, other: &Bound<'_, PyAny>, names: BinaryNames) -> PyResult<()> {
        match self.binary(py, other, names, false)? {
            Some(result) => self.inner.assign_from(&result).py(),
            None => Err(PyTypeError::new_err(format!(
                "unsupported operand type for an in-place operation on NDArray: {}",
                other.get_type().name()?
            ))),
        }
    }
}

#[pymethods]
impl PyNDArray {
    /// The shape, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// The element type, as a numpy type (`numpy.float32`).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dtype::to_numpy_type(py, self.inner.dtype())
    }

    /// The device, as an `oxnet.Context`.
    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::context::to_py(py, self.inner.device())
    }

    /// Alias of `context`.
    #[getter]
    fn ctx<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.context(py)
    }

    /// The storage type (always `'default'`: dense).
    #[getter]
    fn stype(&self) -> &'static str {
        "default"
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// Number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    /// The transpose (reversed axes), sharing memory.
    #[getter(T)]
    fn transposed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyNDArray>> {
        let t = if autograd::is_recording() {
            invoke1("transpose", &[&self.inner], &[]).py()?
        } else {
            self.inner.transpose(None).py()?
        };
        wrap(py, t)
    }

    /// A numpy copy of the array.
    fn asnumpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        numpy_interop::to_numpy(py, &self.inner)
    }

    /// The single element as a numpy scalar of the array's dtype (as MXNet).
    fn asscalar<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.size() != 1 {
            return Err(PyValueError::new_err(format!(
                "asscalar needs an array of one element, this one has shape {:?}",
                self.inner.shape()
            )));
        }
        self.asnumpy(py)?.call_method1("reshape", (-1,))?.get_item(0)
    }

    /// The single element as a Python number (numpy's `item`).
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.asscalar(py)?.call_method0("item")
    }

    /// A copy converted to `dtype` (the array itself when `copy=False` and the
    /// dtype already matches).
    #[pyo3(signature = (dtype, copy=true))]
    fn astype<'py>(
        slf: &Bound<'py, Self>,
        dtype: &Bound<'py, PyAny>,
        copy: bool,
    ) -> PyResult<Bound<'py, PyNDArray>> {
        let py = slf.py();
        let dt = dtype::from_py(dtype)?;
        let me = &slf.get().inner;
        if !copy && dt == me.dtype() {
            return Ok(slf.clone());
        }
        let out = if autograd::is_recording() {
            invoke1("cast", &[me], &[("dtype", AttrValue::DType(dt))]).py()?
        } else {
            py.detach(|| me.astype(dt)).py()?
        };
        wrap(py, out)
    }

    /// A deep copy.
    fn copy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyNDArray>> {
        let out = if autograd::is_recording() {
            invoke1("identity", &[&self.inner], &[]).py()?
        } else {
            py.detach(|| self.inner.copy()).py()?
        };
        wrap(py, out)
    }

    /// Copies into `other` (an NDArray of the same shape, returned) or to a
    /// new array on a Context.
    fn copyto<'py>(&self, py: Python<'py>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(dst) = other.cast::<PyNDArray>() {
            let target = &dst.get().inner;
            if target.shape() != self.inner.shape() {
                return Err(MXNetError::new_err(format!(
                    "copyto: shape mismatch, source {:?} and target {:?}",
                    self.inner.shape(),
                    target.shape()
                )));
            }
            py.detach(|| target.assign_from(&self.inner)).py()?;
            return Ok(other.clone());
        }
        let device = crate::context::from_py(other)?;
        let out = py.detach(|| self.inner.to_device(device)).py()?;
        Ok(wrap(py, out)?.into_any())
    }

    /// This array on `context` (itself when it is already there).
    fn as_in_context<'py>(
        slf: &Bound<'py, Self>,
        context: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let device = crate::context::from_py(context)?;
        let me = &slf.get().inner;
        if device == me.device() {
            return Ok(slf.clone().into_any());
        }
        let py = slf.py();
        let out = py.detach(|| me.to_device(device)).py()?;
        Ok(wrap(py, out)?.into_any())
    }

    /// A new shape over the same memory. Takes a tuple or the sizes as
    /// arguments, with MXNet's special codes (0 keep, -1 infer, ...).
    #[pyo3(signature = (*shape, **kwargs))]
    fn reshape<'py>(
        &self,
        py: Python<'py>,
        shape: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyNDArray>> {
        let spec: Vec<i64> = match (shape.len(), kwargs.and_then(|k| k.get_item("shape").ok().flatten())) {
            (0, Some(s)) => s.extract()?,
            (1, None)
                if shape.get_item(0)?.is_instance_of::<PyTuple>()
                    || shape.get_item(0)?.is_instance_of::<PyList>() =>
            {
                shape.get_item(0)?.extract()?
            }
            (_, None) => shape.extract()?,
            _ => {
                return Err(PyTypeError::new_err("reshape takes the shape either positionally or as shape="))
            }
        };
        let reverse = match kwargs.and_then(|k| k.get_item("reverse").ok().flatten()) {
            Some(r) => r.is_truthy()?,
            None => false,
        };
        let attrs = [("shape", AttrValue::Ints(spec)), ("reverse", AttrValue::Bool(reverse))];
        // MXNet raises ValueError for a shape the array cannot take
        self.view_as_op(py, "reshape", &attrs).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Inserts an axis of size 1 at `axis`; with `inplace`, as a view of
    /// this array's memory (MXNet's NDArray method).
    #[pyo3(signature = (axis, inplace=false))]
    fn expand_dims<'py>(&self, py: Python<'py>, axis: i64, inplace: bool) -> PyResult<Bound<'py, PyNDArray>> {
        self.op_or_view(py, "expand_dims", &[("axis", AttrValue::Int(axis))], inplace)
    }

    /// Flattens to two dimensions; with `inplace`, as a view.
    #[pyo3(signature = (inplace=false))]
    fn flatten<'py>(&self, py: Python<'py>, inplace: bool) -> PyResult<Bound<'py, PyNDArray>> {
        self.op_or_view(py, "flatten", &[], inplace)
    }

    /// Removes axes of size 1 (all, or those in `axis`); with `inplace`, as a view.
    #[pyo3(signature = (axis=None, inplace=false))]
    fn squeeze<'py>(
        &self,
        py: Python<'py>,
        axis: Option<&Bound<'py, PyAny>>,
        inplace: bool,
    ) -> PyResult<Bound<'py, PyNDArray>> {
        let axis = match axis {
            None => AttrValue::None,
            Some(a) => crate::invoke::attr_value(a)?,
        };
        self.op_or_view(py, "squeeze", &[("axis", axis)], inplace)
    }

    /// Attaches a gradient buffer (`grad_req` 'write', 'add' or 'null').
    #[pyo3(signature = (grad_req="write", stype=None))]
    fn attach_grad(&self, grad_req: &str, stype: Option<&str>) -> PyResult<()> {
        if let Some(s) = stype {
            check_dense("attach_grad", s)?;
        }
        self.inner.attach_grad(crate::autograd::parse_req(grad_req)?).py()
    }

    /// The array in storage type `stype` (MXNet's `tostype`): `'default'`
    /// gives a copy (recorded by autograd, as MXNet's `cast_storage`);
    /// oxnet has no sparse storage types.
    fn tostype<'py>(&self, py: Python<'py>, stype: &str) -> PyResult<Bound<'py, PyNDArray>> {
        check_dense("tostype", stype)?;
        self.copy(py)
    }

    /// The gradient buffer (None until `attach_grad`).
    #[getter]
    fn grad<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyNDArray>>> {
        self.inner.grad().map(|g| wrap(py, g)).transpose()
    }

    /// True when a backward pass wrote this variable's gradient since the
    /// flag was last cleared (MXNet's `_fresh_grad`; the Trainer reads and
    /// clears it to report stale gradients). False for non-variables.
    #[getter]
    fn _fresh_grad(&self) -> bool {
        oxnet_core::autograd::fresh_grad(&self.inner).unwrap_or(false)
    }

    #[setter(_fresh_grad)]
    fn set_fresh_grad(&self, fresh: bool) {
        oxnet_core::autograd::set_fresh_grad(&self.inner, fresh);
    }

    /// Back-propagates from this array.
    #[pyo3(signature = (out_grad=None, retain_graph=false, train_mode=true))]
    fn backward(
        &self,
        py: Python<'_>,
        out_grad: Option<PyRef<'_, PyNDArray>>,
        retain_graph: bool,
        train_mode: bool,
    ) -> PyResult<()> {
        let head_grad = out_grad.map(|g| g.inner.clone());
        let opts = BackwardOptions { retain_graph, create_graph: false, train_mode };
        py.detach(|| autograd::backward(&[&self.inner], &[head_grad.as_ref()], opts)).py()
    }

    /// The same memory, outside autograd's graph.
    fn detach<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyNDArray>> {
        wrap(py, self.inner.detach())
    }

    /// Waits until the array can be read: for a GPU array, until the work
    /// queued on its device is done (CPU computation is synchronous).
    fn wait_to_read(&self, py: Python<'_>) -> PyResult<()> {
        match self.inner.device() {
            #[cfg(feature = "cuda")]
            oxnet_core::Device::Gpu(i) => py.detach(|| oxnet_core::gpu::synchronize(i)).py(),
            _ => {
                let _ = py;
                Ok(())
            }
        }
    }

    /// Waits until the array can be written (returns at once).
    fn wait_to_write(&self) {}

    /// The CUDA array interface (version 3) of a GPU array, so that CuPy,
    /// Numba or PyTorch use its memory without a copy. The device's queued
    /// work is finished first (`stream` is None: the data is ready). Absent
    /// (AttributeError) on CPU arrays.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        numpy_interop::cuda_array_interface(py, &self.inner)
    }

    /// numpy's zero-copy view protocol.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        numpy_interop::array_interface(py, &self.inner)
    }

    /// DLPack export (`np.from_dlpack(x)`, `torch.from_dlpack(x)`), sharing memory.
    #[pyo3(signature = (stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (max_version, dl_device);
        let a = if copy == Some(true) { self.inner.copy().py()? } else { self.inner.clone() };
        // DLPack's stream protocol: None or 1 is the legacy default stream,
        // which oxnet's blocking stream is already ordered with; -1 asks for
        // no ordering; 2 (per-thread default) or a handle waits on an event.
        #[cfg(feature = "cuda")]
        if let oxnet_core::Device::Gpu(i) = a.device() {
            let s: Option<i64> = match stream {
                Some(s) if !s.is_none() => Some(s.extract()?),
                _ => None,
            };
            if let Some(handle) = s.filter(|h| *h != 1 && *h != -1 && *h != 0) {
                oxnet_core::gpu::order_stream_after(i, handle as usize as *mut std::ffi::c_void).py()?;
            }
        }
        #[cfg(not(feature = "cuda"))]
        let _ = stream;
        crate::dlpack::export(py, a)
    }

    /// A DLPack capsule sharing this array's memory (MXNet's
    /// `to_dlpack_for_read`; oxnet arrays are always ready to read).
    fn to_dlpack_for_read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::dlpack::export(py, self.inner.clone())
    }

    /// A DLPack capsule sharing this array's memory, for a consumer that
    /// writes into it (MXNet's `to_dlpack_for_write`).
    fn to_dlpack_for_write<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::dlpack::export(py, self.inner.clone())
    }

    /// DLPack device: (kDLCPU, 0) on the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        crate::dlpack::device_of(&self.inner)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyNDArray>> {
        wrap(py, indexing::get(&self.inner, key)?)
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        indexing::set(&self.inner, key, value)
    }

    /// Whether basic indexing with the tuple `key` (integers and slices) of
    /// an array of `shape` gives a view that is one row-major run of memory
    /// (MXNet's private helper of the same name).
    #[staticmethod]
    fn _basic_indexing_slice_is_contiguous(key: &Bound<'_, PyAny>, shape: Vec<usize>) -> PyResult<bool> {
        indexing::basic_key_is_contiguous(key, &shape)
    }

    fn __len__(&self) -> PyResult<usize> {
        self.inner.shape().first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d array"))
    }

    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = &slf.get().inner;
        let n =
            me.shape().first().copied().ok_or_else(|| PyTypeError::new_err("iteration over a 0-d array"))?;
        // (as `x[i]`: the items of a 1-d array have shape (1,) unless np_shape is on)
        let items = (0..n)
            .map(|i| wrap(py, indexing::get(me, &(i as i64).into_pyobject(py)?.into_any())?))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)?.try_iter().map(Bound::into_any)
    }

    fn __bool__(&self) -> PyResult<bool> {
        match self.inner.size() {
            0 => Ok(false),
            1 => Ok(self.inner.to_scalar().py()? != 0.0),
            _ => Err(PyValueError::new_err(
                "the truth value of an NDArray with more than one element is ambiguous",
            )),
        }
    }

    fn __float__(&self) -> PyResult<f64> {
        if self.inner.size() != 1 {
            return Err(PyTypeError::new_err("only one-element arrays convert to Python scalars"));
        }
        self.inner.to_scalar().py()
    }

    fn __int__(&self) -> PyResult<i64> {
        Ok(self.__float__()? as i64)
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }

    fn __str__(&self) -> String {
        format!("{:?}", self.inner)
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize / 16
    }

    fn __add__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, ADD, false)
    }
    fn __radd__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, ADD, true)
    }
    fn __sub__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, SUB, false)
    }
    fn __rsub__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, SUB, true)
    }
    fn __mul__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, MUL, false)
    }
    fn __rmul__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, MUL, true)
    }
    fn __truediv__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, DIV, false)
    }
    fn __rtruediv__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, DIV, true)
    }
    fn __pow__<'py>(
        &self,
        py: Python<'py>,
        o: &Bound<'py, PyAny>,
        _modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, POW, false)
    }
    fn __rpow__<'py>(
        &self,
        py: Python<'py>,
        o: &Bound<'py, PyAny>,
        _modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, POW, true)
    }
    fn __mod__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, MOD, false)
    }
    fn __rmod__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, MOD, true)
    }
    fn __eq__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, EQ, false)
    }
    fn __ne__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, NE, false)
    }
    fn __lt__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, LT, false)
    }
    fn __le__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, LE, false)
    }
    fn __gt__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, GT, false)
    }
    fn __ge__<'py>(&self, py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.binary_obj(py, o, GE, false)
    }
    fn __iadd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inplace(py, o, ADD)
    }
    fn __isub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inplace(py, o, SUB)
    }
    fn __imul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inplace(py, o, MUL)
    }
    fn __itruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inplace(py, o, DIV)
    }
    fn __imod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inplace(py, o, MOD)
    }

    fn __neg__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyNDArray>> {
        wrap(py, invoke1("negative", &[&self.inner], &[]).py()?)
    }

    fn __abs__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyNDArray>> {
        wrap(py, invoke1("abs", &[&self.inner], &[]).py()?)
    }

    /// MXNet's pickled state: `{'handle': bytearray}`, the array as one
    /// record of MXNet's binary format (`NDArray.__getstate__`).
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let bytes = py.detach(|| oxnet_nn::io::mxnet_format::array_to_record(&self.inner)).py()?;
        let state = PyDict::new(py);
        state.set_item("handle", pyo3::types::PyByteArray::new(py, &bytes))?;
        Ok(state)
    }

    /// Loads a pickled state (from [`__getstate__`], or MXNet's) into this
    /// array. oxnet arrays keep their shape and dtype for life, so the
    /// state's must equal this array's; pickle itself goes through
    /// `__reduce__` and makes a new array of any shape.
    fn __setstate__(&self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let loaded = state_array(state)?;
        if loaded.shape() != self.inner.shape() || loaded.dtype() != self.inner.dtype() {
            return Err(MXNetError::new_err(format!(
                "__setstate__: the state holds an array of shape {:?} and dtype {}, this array has {:?} and {}; \
                 oxnet arrays keep their shape and dtype (unpickle to get a new array)",
                loaded.shape(),
                loaded.dtype(),
                self.inner.shape(),
                self.inner.dtype()
            )));
        }
        self.inner.assign_from(&loaded).py()
    }

    /// Pickling: a new array rebuilt from [`__getstate__`]'s record.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let rebuild = py.import("oxnet._oxnet")?.getattr("ndarray_from_state")?;
        Ok((rebuild, (self.__getstate__(py)?,)))
    }

    /// Fluent operator methods: `x.sum(axis=1)` is `nd.sum(x, axis=1)`, for
    /// every registry operator.
    fn __getattr__<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if !name.starts_with('_') && oxnet_core::registry::contains(name) {
            let func = py.import("oxnet.ndarray")?.getattr(name)?;
            return py.import("functools")?.getattr("partial")?.call1((func, slf));
        }
        Err(pyo3::exceptions::PyAttributeError::new_err(format!(
            "'NDArray' object has no attribute '{name}'"
        )))
    }
}

impl PyNDArray {
    /// Operator `name` on this array: a new array, or with `inplace` a
    /// view of this array's memory in the shape the operator infers.
    fn op_or_view<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        attrs: &[(&str, AttrValue)],
        inplace: bool,
    ) -> PyResult<Bound<'py, PyNDArray>> {
        if inplace {
            self.view_as_op(py, name, attrs)
        } else {
            wrap(py, invoke1(name, &[&self.inner], attrs).py()?)
        }
    }

    /// A view of this array in the shape operator `name` infers under
    /// `attrs` (while autograd records, or for a strided array, the
    /// operator itself runs, so the call is recorded).
    fn view_as_op<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        attrs: &[(&str, AttrValue)],
    ) -> PyResult<Bound<'py, PyNDArray>> {
        if autograd::is_recording() || !self.inner.is_contiguous() {
            return wrap(py, invoke1(name, &[&self.inner], attrs).py()?);
        }
        let op = oxnet_core::registry::get(name).py()?;
        let parsed = op.parse_attrs(attrs).map_err(|e| e.in_op(name)).py()?;
        let shapes = [oxnet_core::Shape::from_slice(self.inner.shape())];
        let (out, _) = oxnet_core::dispatch::infer_outputs(&op, &parsed, &shapes, &[self.inner.dtype()], 1)
            .map_err(|e| e.in_op(name))
            .py()?;
        wrap(py, self.inner.reshape_to(&out[0]).py()?)
    }
}

/// Errors unless `stype` is `default`: oxnet arrays are dense only.
fn check_dense(what: &str, stype: &str) -> PyResult<()> {
    match stype {
        "default" => Ok(()),
        "csr" | "row_sparse" => Err(MXNetError::new_err(format!(
            "{what}: storage type `{stype}` is not supported: oxnet has no sparse storage types, only dense \
             arrays (stype='default')"
        ))),
        other => Err(MXNetError::new_err(format!(
            "{what}: unknown storage type `{other}` (MXNet's are default, csr and row_sparse; oxnet has default)"
        ))),
    }
}

/// The array in a pickled state `{'handle': bytes}`.
fn state_array(state: &Bound<'_, PyDict>) -> PyResult<NDArray> {
    let handle = state.get_item("handle")?.ok_or_else(|| {
        MXNetError::new_err("NDArray state: no 'handle' entry (expected {'handle': bytes})")
    })?;
    let bytes: Vec<u8> = handle.extract()?;
    oxnet_nn::io::mxnet_format::array_from_record(&bytes).py()
}

/// Rebuilds an array from its pickled state (what `NDArray.__reduce__`
/// names for pickle).
#[pyfunction]
pub fn ndarray_from_state<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyNDArray>> {
    wrap(py, state_array(state)?)
}
