//! Normalization: `BatchNorm`, with the moving statistics as auxiliary
//! states.

mod batch_norm;
mod params;

#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    batch_norm::register();
}
