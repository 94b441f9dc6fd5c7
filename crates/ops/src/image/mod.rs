//! Image operators of MXNet's `mx.nd.image` / `mx.sym.image` (registered as
//! `_image_NAME`): `normalize`, `to_tensor`, `flip_left_right`,
//! `flip_top_bottom`, their random forms, `crop`, and the colour
//! augmentations (`random_brightness`, `random_contrast`,
//! `random_saturation`, `random_hue`, `random_color_jitter`,
//! `adjust_lighting`, `random_lighting`) (`resize` is registered by
//! `oxnet-io`, which holds the resizing code).

mod color;
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
    color::register();
}
