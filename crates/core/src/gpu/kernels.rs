//! CUDA C++ of core's own kernels (copies, conversions, fills), generated
//! per dtype. Device-free: CI compiles them with NVRTC without a GPU.

use super::index::{c_type, cast_fn, compute_type, PRELUDE};
use crate::{DType, Result};

/// The name of [`assign_kernel`]`(dst, src)`.
pub fn assign_name(dst: DType, src: DType) -> String {
    format!("ox_assign_{dst}_{src}")
}

/// The name of [`fill_kernel`]`(dst)`.
pub fn fill_name(dst: DType) -> String {
    format!("ox_fill_{dst}")
}

/// Name and source of the strided, broadcasting, converting copy kernel
/// `D <- S`: `(shape, out strides, in strides, o, x)`.
pub fn assign_kernel(dst: DType, src: DType) -> Result<(String, String)> {
    let name = assign_name(dst, src);
    let source = format!(
        "{PRELUDE}\ntypedef {d} D; typedef {s} S;\n{cast}\
         extern \"C\" __global__ void {name}(OxShape sh, OxStrides so, OxStrides si, D* o, const S* x) {{\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < sh.n; i += (long long)gridDim.x * blockDim.x) {{\n\
             S v = x[ox_offset(sh, si, i)];\n\
             o[ox_offset(sh, so, i)] = ox_to(({c})v);\n\
           }}\n\
         }}\n",
        d = c_type(dst)?,
        s = c_type(src)?,
        c = compute_type(dst)?,
        cast = cast_fn(dst)?,
    );
    Ok((name, source))
}

/// Name and source of the strided fill kernel for `D`: `(shape, strides, o, value)`.
pub fn fill_kernel(dst: DType) -> Result<(String, String)> {
    let name = fill_name(dst);
    let source = format!(
        "{PRELUDE}\ntypedef {d} D;\n{cast}\
         extern \"C\" __global__ void {name}(OxShape sh, OxStrides so, D* o, double v) {{\n\
           D c = ox_to(({c})v);\n\
           for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < sh.n; i += (long long)gridDim.x * blockDim.x)\n\
             o[ox_offset(sh, so, i)] = c;\n\
         }}\n",
        d = c_type(dst)?,
        c = compute_type(dst)?,
        cast = cast_fn(dst)?,
    );
    Ok((name, source))
}

/// The dtypes core's GPU kernels take.
pub const DTYPES: &[DType] =
    &[DType::F32, DType::F64, DType::I32, DType::I64, DType::I8, DType::U8, DType::Bool];

/// Every kernel core generates, as (name, source), for the compile check.
pub fn catalog() -> Result<Vec<(String, String)>> {
    let mut all = Vec::new();
    for &d in DTYPES {
        all.push(fill_kernel(d)?);
        for &s in DTYPES {
            all.push(assign_kernel(d, s)?);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_named_by_their_dtypes() {
        let (name, src) = assign_kernel(DType::Bool, DType::F32).unwrap();
        assert_eq!(name, "ox_assign_bool_float32");
        assert!(src.contains("(r != 0)") && src.contains("typedef unsigned char D; typedef float S;"));
        assert_eq!(catalog().unwrap().len(), 7 * 8);
        assert!(fill_kernel(DType::F16).is_err());
    }
}
