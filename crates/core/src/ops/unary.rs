//! Built-in operators: unary.

/// Registers this module's operators.
pub(crate) fn register() {}
