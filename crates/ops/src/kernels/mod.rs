//! CPU kernels: plain functions over slices, free of the operator registry.
pub mod matmul;
pub mod simd_math;
