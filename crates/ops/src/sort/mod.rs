//! Built-in operators that order elements: `topk`, `sort` and `argsort`
//! (with the hidden `_backward_topk` their value gradients use), as MXNet
//! 1.9.1 defines them. Equal elements keep their order along the axis (a
//! stable sort, as MXNet's GPU kernels and numpy's `kind='stable'`) and
//! NaN sorts after `+inf` ([`radix`]); MXNet's CPU kernels leave both to
//! the unstable `std::sort` of the C++ library they were built with.

mod kernel;
mod ops;
mod params;
mod radix;
#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    ops::register();
}
