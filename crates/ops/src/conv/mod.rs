//! Convolution: `Convolution` (1-D to 3-D, grouped and depth-wise, dilated,
//! padded, strided) and its transpose `Deconvolution` (with `adj` and
//! `target_shape`), by im2col/col2im and the engine's matrix product; the
//! operators `im2col` and `col2im` on the same kernels; FlowNet's
//! `Correlation`; and `_contrib_DeformableConvolution`, whose 2-D taps
//! read the data bilinearly at learned offsets.
//!
//! The window geometry ([`geometry`]) and the channel-last support
//! ([`layout`]) are shared with the pooling family.

mod convolution;
mod correlation;
mod deconv_params;
mod deconvolution;
mod deformable;
mod depthwise;
pub(crate) mod geometry;
mod im2col;
mod im2col_op;
pub(crate) mod layout;
mod modulated_deformable;
mod params;
mod sums;

pub(crate) use params::merge as merge_shape;

#[cfg(test)]
mod channel_last_tests;
#[cfg(test)]
mod deconv_tests;
#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    convolution::register();
    correlation::register();
    deconvolution::register();
    deformable::register();
    im2col_op::register();
    modulated_deformable::register();
}
