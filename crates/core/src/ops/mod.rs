//! The built-in operators. Each is an [`OpDef`](crate::OpDef) registered
//! through [`registry::register`](crate::registry::register), the same call
//! a user's custom operator makes.

pub mod binary;
pub mod linalg;
pub mod nn;
pub mod optimizer;
pub mod reduce;
pub mod shape_ops;
pub mod unary;
pub mod util;

/// Registers every built-in operator (runs once, on first registry use).
pub(crate) fn register_builtins() {
    unary::register();
    binary::register();
    reduce::register();
    linalg::register();
    nn::register();
    optimizer::register();
    shape_ops::register();
    crate::registry::register(crate::custom::custom_op_def());
}
