//! Normalization: `BatchNorm` (and its `BatchNorm_v1` and
//! `contrib.SyncBatchNorm` forms), with the moving statistics as auxiliary
//! states; `LayerNorm`, `GroupNorm` and `InstanceNorm` (sharing the lane
//! kernels); `L2Normalization`; and `LRN`.

mod batch_norm;
mod channel_pass;
mod group_norm;
mod instance_norm;
mod l2_normalization;
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
    group_norm::register();
    instance_norm::register();
    l2_normalization::register();
    lrn::register();
}
