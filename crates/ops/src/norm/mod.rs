//! Normalization: `BatchNorm` (and its `BatchNorm_v1` and
//! `contrib.SyncBatchNorm` forms), with the moving statistics as auxiliary
//! states, and `LRN`.

mod batch_norm;
mod lrn;
mod params;

#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    batch_norm::register();
    lrn::register();
}
