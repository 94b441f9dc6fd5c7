//! Small operators of MXNet 1.9.1's checks and `contrib` namespace:
//!
//! - [`count_sketch`]: `_contrib_count_sketch` (`out[..., h[j]] +=
//!   s[j] * data[..., j]`), differentiable towards `data`.
//! - [`fft`]: `_contrib_fft` and `_contrib_ifft`, unnormalized DFTs of the
//!   rows along the last axis, complex numbers as interleaved (re, im)
//!   pairs; each one's gradient is the other.
//! - [`finite`]: `all_finite`, `multi_all_finite` (one float32 flag: 1 when
//!   every element is finite) and `_contrib_allclose` (numpy's `allclose`
//!   as a uint8 scalar). None of them is differentiable, as in MXNet.
//! - [`scaling`]: `_contrib_div_sqrt_dim` (`data / sqrt(data.shape[-1])`)
//!   and `_contrib_quadratic` (`a x^2 + b x + c`), with gradients written
//!   as operators.

mod count_sketch;
mod fft;
mod finite;
mod interleaved;
mod quantize;
mod scaling;
#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    count_sketch::register();
    fft::register();
    finite::register();
    interleaved::register();
    quantize::register();
    scaling::register();
}
