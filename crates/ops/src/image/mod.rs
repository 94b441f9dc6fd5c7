//! Image operators of MXNet's `mx.nd.image` / `mx.sym.image` (registered as
//! `_image_NAME`): `normalize`.

mod normalize;

/// Registers the image operators.
pub(crate) fn register() {
    normalize::register();
}
