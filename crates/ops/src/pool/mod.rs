//! Pooling: `Pooling` (max, avg, sum, lp; 1-D to 3-D; global; valid, full
//! and same conventions) with its backward kernel; `contrib.AdaptiveAvgPooling2D`.

mod adaptive;
mod max2x2;
mod params;
mod pooling;

#[cfg(test)]
mod channel_last_tests;
#[cfg(test)]
mod tests;

/// Registers this module's operators.
pub(crate) fn register() {
    pooling::register();
    adaptive::register();
}
