//! Image operators of MXNet's `mx.nd.image` / `mx.sym.image` (registered as
//! `_image_NAME`): `normalize`, `to_tensor`, `flip_left_right`,
//! `flip_top_bottom`, their random forms, and `crop` (`resize` is
//! registered by `oxnet-io`, which holds the resizing code).

mod crop;
mod flip;
mod layout;
mod normalize;
mod to_tensor;

/// Registers the image operators.
pub(crate) fn register() {
    normalize::register();
    to_tensor::register();
    flip::register();
    crop::register();
}
