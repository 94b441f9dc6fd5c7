//! Built-in operators: nn.

/// Registers this module's operators.
pub(crate) fn register() {}
