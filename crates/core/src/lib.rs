//! oxnet's core layer.
pub mod kernels;
