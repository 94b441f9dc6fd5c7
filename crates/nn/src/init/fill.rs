//! Writing values into an existing array: the one way every initializer
//! touches memory, whatever the array's dtype and layout.

use oxnet_core::random::{normal_vec, uniform_vec, with_rng};
use oxnet_core::{Error, NDArray, Result};

/// Writes `values` (row-major, one per element) into `arr`, converting to
/// its dtype. Works for any layout (views included).
pub(crate) fn fill_values(arr: &NDArray, values: Vec<f64>) -> Result<()> {
    if values.len() != arr.size() {
        return Err(Error::Shape(format!(
            "{} values cannot fill an array of shape {:?}",
            values.len(),
            arr.shape()
        )));
    }
    if arr.size() == 0 {
        return Ok(());
    }
    let src = NDArray::from_vec(values, arr.shape())?;
    arr.assign_from(&src)
}

/// Copies `src` into `arr`, broadcasting as MXNet's `arr[:] = src` does:
/// leading axes of length 1 beyond `arr`'s rank are dropped, then axes align
/// from the right and each must match or be 1.
pub(crate) fn assign_broadcast(arr: &NDArray, src: &NDArray) -> Result<()> {
    let mut shape: Vec<usize> = src.shape().to_vec();
    while shape.len() > arr.ndim() && shape[0] == 1 {
        shape.remove(0);
    }
    let src = if shape.len() == src.ndim() { src.clone() } else { src.reshape_to(&shape)? };
    arr.assign_from(&src)
}

/// `n` uniform draws in `[low, high)` from the global generator.
pub(crate) fn uniform_draws(n: usize, low: f64, high: f64) -> Vec<f64> {
    with_rng(|rng| uniform_vec(rng, n, low, high))
}

/// `n` normal draws from the global generator.
pub(crate) fn normal_draws(n: usize, mean: f64, std: f64) -> Vec<f64> {
    with_rng(|rng| normal_vec(rng, n, mean, std))
}

/// An error about argument `arg` of initializer `init`.
pub(crate) fn arg_error(init: &str, arg: &str, msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("initializer `{init}`, argument `{arg}`: {msg}"))
}
