//! Built-in operators that order elements: `topk`, `sort` and `argsort`
//! (with the hidden `_backward_topk` their value gradients use), as MXNet
//! 1.9.1 defines them, down to the order of equal elements: the lines are
//! sorted by a faithful copy of the C++ library sorts MXNet's CPU kernels
//! call ([`introsort`]).

mod introsort;
mod kernel;
mod ops;
mod params;
#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    ops::register();
}
