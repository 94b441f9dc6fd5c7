//! Built-in operators: binary.

/// Registers this module's operators.
pub(crate) fn register() {}
