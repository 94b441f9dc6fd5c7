//! CPU kernels: plain functions over slices, free of the operator registry.
pub mod matmul;
