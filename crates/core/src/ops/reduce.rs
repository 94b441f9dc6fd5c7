//! Built-in operators: reduce.

/// Registers this module's operators.
pub(crate) fn register() {}
