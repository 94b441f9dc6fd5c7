//! Element data types and the [`Element`] trait that ties Rust types to them.

use crate::{Error, Result};
use half::{bf16, f16};
use std::fmt;

/// The data type of an array's elements. The discriminants are MXNet's type codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DType {
    /// 32-bit IEEE float (the default).
    F32 = 0,
    /// 64-bit IEEE float.
    F64 = 1,
    /// 16-bit IEEE float.
    F16 = 2,
    /// Unsigned 8-bit integer.
    U8 = 3,
    /// Signed 32-bit integer.
    I32 = 4,
    /// Signed 8-bit integer.
    I8 = 5,
    /// Signed 64-bit integer.
    I64 = 6,
    /// Boolean, stored as one byte holding 0 or 1.
    Bool = 7,
    /// bfloat16: 8 exponent bits, 7 mantissa bits.
    BF16 = 12,
}

/// Every data type, in code order.
pub const ALL_DTYPES: [DType; 9] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::U8,
    DType::I32,
    DType::I8,
    DType::I64,
    DType::Bool,
    DType::BF16,
];

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::I8 | DType::Bool => 1,
        }
    }

    /// The numpy-style name: `float32`, `int64`, `bool`, ...
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::Bool => "bool",
        }
    }

    /// Parses a numpy-style name (also `float`, `double`, `half`, `int`, `long`).
    pub fn from_name(name: &str) -> Result<DType> {
        let dt = match name.trim().trim_matches(|c| c == '\'' || c == '"') {
            "float32" | "float" | "f32" => DType::F32,
            "float64" | "double" | "f64" => DType::F64,
            "float16" | "half" | "f16" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "uint8" | "u8" => DType::U8,
            "int8" | "i8" => DType::I8,
            "int32" | "int" | "i32" => DType::I32,
            "int64" | "long" | "i64" => DType::I64,
            "bool" | "bool_" => DType::Bool,
            other => return Err(Error::DType(format!("unknown dtype `{other}`"))),
        };
        Ok(dt)
    }

    /// Looks a type up by its MXNet code.
    pub fn from_code(code: i32) -> Result<DType> {
        ALL_DTYPES
            .iter()
            .copied()
            .find(|d| *d as i32 == code)
            .ok_or_else(|| Error::DType(format!("unknown dtype code {code}")))
    }

    /// True for the four floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// True for the integer types (bool excluded).
    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I8 | DType::I32 | DType::I64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be an array element.
///
/// Conversions go through `f64`, which represents every value of every
/// element type except the largest `i64` magnitudes exactly.
pub trait Element: Copy + Send + Sync + PartialOrd + fmt::Debug + 'static {
    /// The data type this Rust type stands for.
    const DTYPE: DType;
    /// Converts to `f64`.
    fn to_f64(self) -> f64;
    /// Converts from `f64` (saturating for integers, `!= 0` for bool).
    fn from_f64(v: f64) -> Self;
    /// Zero of this type.
    fn zero() -> Self;
    /// One of this type.
    fn one() -> Self;
    /// `self + other` (logical or for bool; wrapping for integers).
    fn add(self, other: Self) -> Self;
}

macro_rules! impl_element_num {
    (@add $a:expr, $b:expr, f32) => { $a + $b };
    (@add $a:expr, $b:expr, f64) => { $a + $b };
    (@add $a:expr, $b:expr, $t:ty) => { $a.wrapping_add($b) };
    (@from $v:expr, f32) => { $v as f32 };
    (@from $v:expr, f64) => { $v };
    (@from $v:expr, i64) => { $v as i64 };
    // as C's and numpy's casts: truncate toward zero, then wrap to the width
    (@from $v:expr, $t:ty) => { ($v as i64) as $t };
    ($t:tt, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                impl_element_num!(@from v, $t)
            }
            #[inline(always)]
            fn zero() -> Self {
                0 as $t
            }
            #[inline(always)]
            fn one() -> Self {
                1 as $t
            }
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                impl_element_num!(@add self, other, $t)
            }
        }
    };
}
impl_element_num!(f32, DType::F32);
impl_element_num!(f64, DType::F64);
impl_element_num!(u8, DType::U8);
impl_element_num!(i8, DType::I8);
impl_element_num!(i32, DType::I32);
impl_element_num!(i64, DType::I64);

macro_rules! impl_element_half {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.to_f64()
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            #[inline(always)]
            fn zero() -> Self {
                <$t>::ZERO
            }
            #[inline(always)]
            fn one() -> Self {
                <$t>::ONE
            }
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self + other
            }
        }
    };
}
impl_element_half!(f16, DType::F16);
impl_element_half!(bf16, DType::BF16);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn add(self, other: Self) -> Self {
        self | other
    }
}

/// A floating-point element type whose arithmetic runs in `Self::Compute`
/// (`f32` for f16, bf16 and f32; `f64` for f64).
pub trait FloatElement: Element {
    /// The type kernels compute in.
    type Compute: num_traits::Float + Send + Sync + fmt::Debug + 'static;
    /// Widens to the compute type.
    fn to_compute(self) -> Self::Compute;
    /// Narrows from the compute type.
    fn from_compute(v: Self::Compute) -> Self;
}

impl FloatElement for f32 {
    type Compute = f32;
    #[inline(always)]
    fn to_compute(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_compute(v: f32) -> f32 {
        v
    }
}
impl FloatElement for f64 {
    type Compute = f64;
    #[inline(always)]
    fn to_compute(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_compute(v: f64) -> f64 {
        v
    }
}
impl FloatElement for f16 {
    type Compute = f32;
    #[inline(always)]
    fn to_compute(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_compute(v: f32) -> f16 {
        f16::from_f32(v)
    }
}
impl FloatElement for bf16 {
    type Compute = f32;
    #[inline(always)]
    fn to_compute(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_compute(v: f32) -> bf16 {
        bf16::from_f32(v)
    }
}

/// Runs `$body` with the type alias `$T` bound to the Rust type of `$dtype`,
/// for every data type.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        match $dtype {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    }};
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype` for the four
/// float types; any other type returns an [`Error::DType`](crate::Error) from
/// the enclosing function.
#[macro_export]
macro_rules! with_float_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        match $dtype {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            other => {
                return Err($crate::Error::DType(format!("expected a floating-point dtype, got {other}")))
            }
        }
    }};
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype` for every
/// numeric type (bool excluded, which returns an error).
#[macro_export]
macro_rules! with_numeric_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        match $dtype {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::Bool => {
                return Err($crate::Error::DType("this operation is not defined for bool".into()))
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for dt in ALL_DTYPES {
            assert_eq!(DType::from_name(dt.name()).unwrap(), dt);
            assert_eq!(DType::from_code(dt as i32).unwrap(), dt);
        }
        assert!(DType::from_name("complex64").is_err());
        assert!(DType::from_code(99).is_err());
    }

    #[test]
    fn element_conversions() {
        assert_eq!(f16::from_f64(1.5).to_f64(), 1.5);
        assert_eq!(<bf16 as Element>::from_f64(2.0).to_f64(), 2.0);
        assert!(<bool as Element>::from_f64(3.0));
        // integer conversions truncate and wrap, as C's casts (and so
        // MXNet's `cast`) and numpy's `astype` do
        assert_eq!(<i8 as Element>::from_f64(300.0), 44);
        assert_eq!(<u8 as Element>::from_f64(-48.0), 208);
        assert_eq!(<u8 as Element>::from_f64(2.9), 2);
        assert_eq!(<i32 as Element>::from_f64(-2.9), -2);
        assert_eq!(<i32 as Element>::from_f64(2147483648.0), i32::MIN);
        assert_eq!(DType::BF16.size(), 2);
    }
}
