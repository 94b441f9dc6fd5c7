//! Built-in operators: linalg.

/// Registers this module's operators.
pub(crate) fn register() {}
