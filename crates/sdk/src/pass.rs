//! Graph passes: a function from graph JSON and options to new graph JSON,
//! with the host's services for creating parameters.

use crate::abi;
use crate::traits::OpResult;
use crate::{Attrs, DType, TensorMut};
use std::ffi::CString;
use std::marker::PhantomData;

pub(crate) type PassFn = Box<dyn Fn(&str, &Attrs, &mut PassResource) -> OpResult<String> + Send + Sync>;

/// What a graph pass receives besides the graph: new parameters, created
/// and owned by the host, valid until the pass returns.
pub struct PassResource<'a> {
    raw: *const abi::PassResource,
    _call: PhantomData<&'a abi::PassResource>,
}

impl<'a> PassResource<'a> {
    /// Wraps the host's resource of the current call.
    pub(crate) fn new(raw: *const abi::PassResource) -> PassResource<'a> {
        PassResource { raw, _call: PhantomData }
    }

    fn alloc(
        &mut self,
        name: &str,
        is_aux: bool,
        shape: &[i64],
        dtype: DType,
    ) -> OpResult<&'a mut TensorMut> {
        // SAFETY: NULL or the host's resource of the current call.
        let res = unsafe { self.raw.as_ref() }.ok_or("the host gave this pass no resource")?;
        let f = res.alloc_param.ok_or("the host cannot allocate parameters")?;
        let cname = CString::new(name).map_err(|_| format!("parameter name `{name}` contains a NUL byte"))?;
        let ndim = i32::try_from(shape.len()).map_err(|_| "too many dimensions")?;
        // SAFETY: the host's callback with valid arguments for this call.
        let t =
            unsafe { f(res.host_data, cname.as_ptr(), is_aux as i32, shape.as_ptr(), ndim, dtype.code()) };
        if t.is_null() {
            return Err(format!(
                "the host could not allocate parameter `{name}` of shape {shape:?} and dtype {dtype:?}"
            ));
        }
        // SAFETY: a tensor the host owns until the pass returns; TensorMut is a
        // transparent wrapper and each call gives a distinct tensor.
        Ok(unsafe { &mut *(t as *mut TensorMut) })
    }

    /// A new argument (learned parameter) named `name`: write its initial
    /// values; the graph should gain a variable node of that name.
    pub fn alloc_arg(&mut self, name: &str, shape: &[i64], dtype: DType) -> OpResult<&'a mut TensorMut> {
        self.alloc(name, false, shape, dtype)
    }

    /// A new auxiliary state named `name` (as [`alloc_arg`](Self::alloc_arg)).
    pub fn alloc_aux(&mut self, name: &str, shape: &[i64], dtype: DType) -> OpResult<&'a mut TensorMut> {
        self.alloc(name, true, shape, dtype)
    }
}
