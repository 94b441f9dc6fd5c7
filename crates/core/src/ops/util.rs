//! Helpers shared by the built-in operators' kernels and gradient rules.

use crate::{AttrValue, Attrs, Error, NDArray, Req, Result};

/// Calls operator `name` with one output (shorthand for gradient rules).
pub fn call(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)]) -> Result<NDArray> {
    crate::invoke1(name, inputs, attrs)
}

/// Calls operator `name` with attributes already parsed for an operator of
/// the same attribute specs (a gradient rule calling its `_backward_`
/// operator, or the operator itself, with the forward call's attributes);
/// returns the first output.
pub fn call_parsed(name: &str, inputs: &[&NDArray], attrs: &Attrs) -> Result<NDArray> {
    let op = crate::registry::get(name)?;
    let mut outs = crate::invoke_op(&op, inputs, attrs)?;
    if outs.is_empty() {
        return Err(Error::Invalid(format!("operator `{name}` has no outputs")));
    }
    Ok(outs.swap_remove(0))
}

/// Calls operator `name` writing its one output into `out` (request
/// `write`): a gradient rule computing into an offered buffer
/// ([`GradInto::compute_into`](crate::GradInto::compute_into)).
pub fn call_into(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)], out: &NDArray) -> Result<()> {
    let op = crate::registry::get(name)?;
    let parsed = op.parse_attrs(attrs)?;
    crate::invoke_into(&op, inputs, &parsed, std::slice::from_ref(out), &[Req::Write])
}

/// Stores `src` into `dst` under `req` (both contiguous, same length).
pub fn store_slice<T: crate::Element>(req: Req, dst: &mut [T], src: &[T]) {
    match req {
        Req::Null => {}
        Req::Write | Req::Inplace => dst.copy_from_slice(src),
        Req::Add => dst.iter_mut().zip(src).for_each(|(d, s)| *d = d.add(*s)),
    }
}

/// Stores the array `src` into the kernel output `dst` under `req`
/// (converting dtype and broadcasting as [`NDArray::assign_from`] does).
pub fn store(req: Req, dst: &NDArray, src: &NDArray) -> Result<()> {
    match req {
        Req::Null => Ok(()),
        Req::Write | Req::Inplace => dst.assign_from(src),
        Req::Add => {
            if dst.shape() != src.shape() {
                return Err(Error::Shape(format!(
                    "cannot add a result of shape {:?} into an output of shape {:?}",
                    src.shape(),
                    dst.shape()
                )));
            }
            crate::with_dtype!(dst.dtype(), T => {
                let s = src.astype(dst.dtype())?;
                store_slice(Req::Add, dst.as_mut_slice::<T>()?, s.as_slice::<T>()?);
            });
            Ok(())
        }
    }
}
