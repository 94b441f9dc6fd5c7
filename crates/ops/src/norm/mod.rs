//! Normalization: `BatchNorm` (and its `BatchNorm_v1` and
//! `contrib.SyncBatchNorm` forms), with the moving statistics as auxiliary
//! states; `LayerNorm`; and `LRN`.

mod batch_norm;
mod lanes;
mod layer_norm;
mod lrn;
mod params;
mod shared;

#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    batch_norm::register();
    layer_norm::register();
    lrn::register();
}
