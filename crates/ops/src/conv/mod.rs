//! Convolution: `Convolution` (1-D to 3-D, grouped and depth-wise, dilated,
//! padded, strided), by im2col and the engine's matrix product.
//!
//! The window geometry ([`geometry`]) is shared with the pooling family.

mod convolution;
pub(crate) mod geometry;
mod im2col;
mod params;

pub(crate) use params::merge as merge_shape;

#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    convolution::register();
}
