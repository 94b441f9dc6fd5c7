//! Device-free pieces of GPU kernels: launch shapes, the by-value index
//! parameters of strided and broadcasting kernels, C type names, and the
//! CUDA prelude every generated kernel starts with.

use crate::{DType, Error, Result};

/// The most axes a strided GPU kernel indexes.
pub const MAX_DIMS: usize = 8;

/// Threads per block of element-wise kernels.
pub const BLOCK: u32 = 256;

/// Grid and block sizes of a grid-stride kernel over `n` elements: enough
/// blocks for every element, at most `max_blocks` (the loop covers the
/// rest), and at least one so that an empty launch is still valid.
pub fn launch_shape(n: usize, max_blocks: u32) -> (u32, u32) {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, max_blocks.max(1) as usize);
    (blocks as u32, BLOCK)
}

/// An output shape passed by value to a kernel: `struct OxShape` in
/// [`PRELUDE`]. Axes beyond `ndim` hold 1.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeParam {
    /// Number of elements.
    pub n: i64,
    /// Number of axes.
    pub ndim: i64,
    /// Extents, outermost first.
    pub dims: [i64; MAX_DIMS],
}

/// One operand's strides (in elements) passed by value: `struct OxStrides`.
/// A broadcast axis has stride 0.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StridesParam {
    /// Strides, outermost first.
    pub s: [i64; MAX_DIMS],
}

impl ShapeParam {
    /// The parameter for `shape`; errors beyond [`MAX_DIMS`] axes.
    pub fn new(shape: &[usize]) -> Result<ShapeParam> {
        if shape.len() > MAX_DIMS {
            return Err(Error::Shape(format!(
                "GPU kernels index at most {MAX_DIMS} axes, the array has {}",
                shape.len()
            )));
        }
        let mut dims = [1i64; MAX_DIMS];
        for (d, &s) in dims.iter_mut().zip(shape) {
            *d = s as i64;
        }
        Ok(ShapeParam { n: shape.iter().product::<usize>() as i64, ndim: shape.len() as i64, dims })
    }
}

impl StridesParam {
    /// The strides of an operand of shape `shape` and `strides` read as if
    /// broadcast to `out` (numpy's rules, aligned at the last axis).
    pub fn broadcast(shape: &[usize], strides: &[isize], out: &[usize]) -> Result<StridesParam> {
        if out.len() > MAX_DIMS || shape.len() > out.len() {
            return Err(Error::Shape(format!("cannot broadcast shape {shape:?} to {out:?} on the GPU")));
        }
        let mut s = [0i64; MAX_DIMS];
        let lead = out.len() - shape.len();
        for (i, (&e, &st)) in shape.iter().zip(strides).enumerate() {
            let o = out[lead + i];
            s[lead + i] = if e == o {
                st as i64
            } else if e == 1 {
                0
            } else {
                return Err(Error::Shape(format!("cannot broadcast shape {shape:?} to {out:?}")));
            };
        }
        Ok(StridesParam { s })
    }

    /// Offset of flat output element `i` (row-major over `shape`): what the
    /// prelude's `ox_offset` computes on the device.
    pub fn offset(&self, shape: &ShapeParam, mut i: i64) -> i64 {
        let mut off = 0;
        for d in (0..shape.ndim as usize).rev() {
            let e = shape.dims[d];
            off += (i % e) * self.s[d];
            i /= e;
        }
        off
    }
}

/// The C type of a dtype in generated kernels. float16 and bfloat16 have no
/// GPU kernels yet: asking errs.
pub fn c_type(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I32 => "int",
        DType::I64 => "long long",
        DType::I8 => "signed char",
        DType::U8 | DType::Bool => "unsigned char",
        DType::F16 | DType::BF16 => {
            return Err(Error::DType(format!("{dtype} arrays have no GPU kernels in this build yet")))
        }
    })
}

/// The C type arithmetic runs in for a dtype: the type itself for floats,
/// `double` for integers (as the CPU kernels compute in f64 and convert back).
pub fn compute_type(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F32 => "float",
        _ => {
            c_type(dtype)?;
            "double"
        }
    })
}

/// CUDA C++ defining `ox_to(r)`, which converts a result computed in
/// [`compute_type`] to `dtype` as the CPU kernels do (Rust's `as`):
/// integers saturate at their range and take 0 for NaN, where a plain C
/// cast is undefined; bool is `r != 0`.
pub fn cast_fn(dtype: DType) -> Result<String> {
    let t = c_type(dtype)?;
    let c = compute_type(dtype)?;
    let (lo, hi) = match dtype {
        DType::F32 | DType::F64 => {
            return Ok(format!("__device__ __forceinline__ {t} ox_to({c} r) {{ return ({t})r; }}\n"))
        }
        DType::Bool => {
            return Ok(format!("__device__ __forceinline__ {t} ox_to({c} r) {{ return ({t})(r != 0); }}\n"))
        }
        DType::I32 => ("-2147483648.0", "2147483647.0"),
        DType::I64 => ("-9223372036854775808.0", "9223372036854775807.0"),
        DType::I8 => ("-128.0", "127.0"),
        DType::U8 => ("0.0", "255.0"),
        DType::F16 | DType::BF16 => unreachable!("c_type errs first"),
    };
    // 2^63 is not below i64's maximum as a double: compare with >= and
    // return the bound itself.
    let (min, max) = match dtype {
        DType::I64 => ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
        _ => (lo, hi),
    };
    Ok(format!(
        "__device__ __forceinline__ {t} ox_to({c} r) {{ return r != r ? ({t})0 : r >= {hi} ? ({t}){max} : r <= {lo} ? ({t}){min} : ({t})r; }}\n"
    ))
}

/// Definitions every generated kernel starts with (matching
/// [`ShapeParam`] and [`StridesParam`] byte for byte).
pub const PRELUDE: &str = r#"
#define OX_MAX_DIMS 8
struct OxShape { long long n; long long ndim; long long dims[OX_MAX_DIMS]; };
struct OxStrides { long long s[OX_MAX_DIMS]; };
__device__ __forceinline__ long long ox_offset(const OxShape& sh, const OxStrides& st, long long i) {
    long long off = 0;
    for (int d = (int)sh.ndim - 1; d >= 0; --d) {
        long long e = sh.dims[d];
        off += (i % e) * st.s[d];
        i /= e;
    }
    return off;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_shapes_cover_every_element_within_the_cap() {
        assert_eq!(launch_shape(0, 1024), (1, 256));
        assert_eq!(launch_shape(256, 1024), (1, 256));
        assert_eq!(launch_shape(257, 1024), (2, 256));
        assert_eq!(launch_shape(10_000_000, 1024), (1024, 256));
    }

    #[test]
    fn params_have_the_prelude_layout() {
        assert_eq!(std::mem::size_of::<ShapeParam>(), 16 + 8 * MAX_DIMS);
        assert_eq!(std::mem::size_of::<StridesParam>(), 8 * MAX_DIMS);
        assert!(ShapeParam::new(&[1; 9]).is_err());
        let p = ShapeParam::new(&[2, 3]).unwrap();
        assert_eq!((p.n, p.ndim, p.dims[..3].to_vec()), (6, 2, vec![2, 3, 1]));
    }

    /// Broadcast offsets equal numpy's: a (3,1) column and a (4,) row
    /// against a (2,3,4) output, element by element.
    #[test]
    fn broadcast_offsets_match_a_hand_computed_walk() {
        let out = [2usize, 3, 4];
        let sh = ShapeParam::new(&out).unwrap();
        let col = StridesParam::broadcast(&[3, 1], &[1, 1], &out).unwrap();
        let row = StridesParam::broadcast(&[4], &[1], &out).unwrap();
        let full = StridesParam::broadcast(&out, &[12, 4, 1], &out).unwrap();
        let mut i = 0;
        for a in 0..2 {
            for b in 0..3 {
                for c in 0..4 {
                    assert_eq!(full.offset(&sh, i), (a * 12 + b * 4 + c) as i64);
                    assert_eq!(col.offset(&sh, i), b as i64);
                    assert_eq!(row.offset(&sh, i), c as i64);
                    i += 1;
                }
            }
        }
        // a transposed (strided) operand
        let t = StridesParam::broadcast(&[4, 3], &[1, 4], &[4, 3]).unwrap();
        let sh2 = ShapeParam::new(&[4, 3]).unwrap();
        assert_eq!(t.offset(&sh2, 5), 1 + 2 * 4); // (1, 2) -> 1*1 + 2*4
        assert!(StridesParam::broadcast(&[3], &[1], &[4]).is_err());
    }

    #[test]
    fn integer_results_saturate_as_on_the_cpu() {
        let i32c = cast_fn(DType::I32).unwrap();
        assert!(i32c.contains("r != r ? (int)0") && i32c.contains("r >= 2147483647.0 ? (int)2147483647.0"));
        assert!(cast_fn(DType::F32).unwrap().contains("float ox_to(float r) { return (float)r; }"));
        assert!(cast_fn(DType::Bool).unwrap().contains("(r != 0)"));
    }

    #[test]
    fn dtypes_map_to_c_types() {
        assert_eq!(c_type(DType::F32).unwrap(), "float");
        assert_eq!(compute_type(DType::I32).unwrap(), "double");
        assert!(c_type(DType::F16).is_err());
    }
}
