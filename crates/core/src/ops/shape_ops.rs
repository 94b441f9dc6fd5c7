//! Built-in operators: shape_ops.

/// Registers this module's operators.
pub(crate) fn register() {}
