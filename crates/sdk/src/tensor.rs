//! Safe views of the DLPack tensors a kernel receives.

use crate::abi;
use crate::traits::OpResult;

/// An element type, with its ABI dtype code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 16-bit float.
    F16,
    /// bfloat16.
    BF16,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Boolean (one byte).
    Bool,
}

impl DType {
    /// The ABI code (`abi::DTYPE_*`).
    pub fn code(self) -> i32 {
        match self {
            DType::F32 => abi::DTYPE_FLOAT32,
            DType::F64 => abi::DTYPE_FLOAT64,
            DType::F16 => abi::DTYPE_FLOAT16,
            DType::BF16 => abi::DTYPE_BFLOAT16,
            DType::U8 => abi::DTYPE_UINT8,
            DType::I8 => abi::DTYPE_INT8,
            DType::I32 => abi::DTYPE_INT32,
            DType::I64 => abi::DTYPE_INT64,
            DType::Bool => abi::DTYPE_BOOL,
        }
    }

    /// The dtype of an ABI code.
    pub fn from_code(code: i32) -> Option<DType> {
        [
            DType::F32,
            DType::F64,
            DType::F16,
            DType::BF16,
            DType::U8,
            DType::I8,
            DType::I32,
            DType::I64,
            DType::Bool,
        ]
        .into_iter()
        .find(|d| d.code() == code)
    }
}

/// A Rust type a tensor's elements can be viewed as.
pub trait Element: Copy + 'static {
    /// Its dtype.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(f32 => F32, f64 => F64, u8 => U8, i8 => I8, i32 => I32, i64 => I64);

/// A read-only input tensor of a kernel call (the DLTensor itself: a slice
/// of them is the host's array, without copies).
#[derive(Debug)]
#[repr(transparent)]
pub struct Tensor {
    raw: abi::DLTensor,
}

/// A writable output tensor of a kernel call.
#[derive(Debug)]
#[repr(transparent)]
pub struct TensorMut {
    raw: abi::DLTensor,
}

fn shape_of(raw: &abi::DLTensor) -> &[i64] {
    if raw.ndim <= 0 || raw.shape.is_null() {
        &[]
    } else {
        // SAFETY: the host passes `ndim` extents.
        unsafe { std::slice::from_raw_parts(raw.shape, raw.ndim as usize) }
    }
}

fn dtype_of(raw: &abi::DLTensor) -> Option<DType> {
    abi::dtype_code_of(raw.dtype).and_then(DType::from_code)
}

fn len_of(raw: &abi::DLTensor) -> usize {
    shape_of(raw).iter().map(|&d| d.max(0) as usize).product()
}

fn is_compact(raw: &abi::DLTensor) -> bool {
    if raw.strides.is_null() {
        return true;
    }
    let shape = shape_of(raw);
    // SAFETY: the host passes `ndim` strides.
    let strides = unsafe { std::slice::from_raw_parts(raw.strides, shape.len()) };
    let mut want = 1i64;
    for (d, s) in shape.iter().zip(strides).rev() {
        if *d > 1 && *s != want {
            return false;
        }
        want *= d.max(&1);
    }
    true
}

fn check<T: Element>(raw: &abi::DLTensor) -> OpResult<()> {
    let have = dtype_of(raw);
    if have != Some(T::DTYPE) {
        return Err(format!("tensor holds {have:?}, accessed as {:?}", T::DTYPE));
    }
    if raw.device.device_type != abi::K_DL_CPU {
        return Err(format!("tensor is on device type {}, not the CPU", raw.device.device_type));
    }
    if !is_compact(raw) {
        return Err("tensor is not compact (row-major contiguous)".into());
    }
    Ok(())
}

fn data<T>(raw: &abi::DLTensor) -> *mut T {
    // SAFETY: byte_offset stays inside the allocation by DLPack's contract.
    unsafe { (raw.data as *mut u8).add(raw.byte_offset as usize) as *mut T }
}

macro_rules! common {
    () => {
        /// Extents.
        pub fn shape(&self) -> &[i64] {
            shape_of(&self.raw)
        }
        /// Number of elements.
        pub fn len(&self) -> usize {
            len_of(&self.raw)
        }
        /// True when it holds no element.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
        /// Element type (`None` for a type the SDK does not name).
        pub fn dtype(&self) -> Option<DType> {
            dtype_of(&self.raw)
        }
        /// The underlying DLPack tensor.
        pub fn dltensor(&self) -> &abi::DLTensor {
            &self.raw
        }
        /// The elements (CPU, compact, dtype `T`).
        pub fn as_slice<T: Element>(&self) -> OpResult<&[T]> {
            check::<T>(&self.raw)?;
            let n = self.len();
            if n == 0 {
                return Ok(&[]);
            }
            // SAFETY: checked dtype, device and density; the host keeps the memory alive for the call.
            Ok(unsafe { std::slice::from_raw_parts(data::<T>(&self.raw), n) })
        }
    };
}

impl Tensor {
    /// Views the host's input tensors of the current call.
    ///
    /// # Safety
    /// `p` points to `n` valid DLTensors (or `n <= 0`).
    pub(crate) unsafe fn slice<'a>(p: *const abi::DLTensor, n: i32) -> &'a [Tensor] {
        if n <= 0 || p.is_null() {
            &[]
        } else {
            // SAFETY: Tensor is a transparent wrapper of DLTensor.
            std::slice::from_raw_parts(p as *const Tensor, n as usize)
        }
    }
    common!();
}

impl TensorMut {
    /// Views the host's output tensors of the current call. The DLTensor
    /// structs are only read; "mut" is about the memory they point to.
    ///
    /// # Safety
    /// `p` points to `n` valid DLTensors (or `n <= 0`) that nothing else
    /// accesses during the call.
    pub(crate) unsafe fn slice<'a>(p: *const abi::DLTensor, n: i32) -> &'a mut [TensorMut] {
        if n <= 0 || p.is_null() {
            &mut []
        } else {
            // SAFETY: transparent wrapper; the host's array is not read while the kernel runs.
            std::slice::from_raw_parts_mut(p as *mut TensorMut, n as usize)
        }
    }
    common!();

    /// The elements, writable (CPU, compact, dtype `T`).
    pub fn as_mut_slice<T: Element>(&mut self) -> OpResult<&mut [T]> {
        check::<T>(&self.raw)?;
        let n = self.len();
        if n == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as `as_slice`; outputs are distinct buffers that only this kernel writes.
        Ok(unsafe { std::slice::from_raw_parts_mut(data::<T>(&self.raw), n) })
    }
}
