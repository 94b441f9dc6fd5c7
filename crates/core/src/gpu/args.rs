//! Kernel parameters gathered by value for a launch.

use std::ffi::c_void;

/// The parameters of one kernel launch, in the kernel's order. Each value is
/// copied into its own 8-byte-aligned slot; the driver reads the slots
/// through [`pointers`](Self::pointers) during the launch call.
///
/// ```
/// use oxnet_core::gpu::KernelArgs;
/// let mut args = KernelArgs::new();
/// args.push(0x7f00_0000_0000u64).push(3.5f32).push(12i64);
/// assert_eq!(args.len(), 3);
/// ```
#[derive(Default)]
pub struct KernelArgs {
    slots: Vec<Box<[u64]>>,
}

impl KernelArgs {
    /// No parameters yet.
    pub fn new() -> Self {
        KernelArgs::default()
    }

    /// Appends a plain value (a device address as `u64`, a scalar, or a
    /// `#[repr(C)]` struct such as [`ShapeParam`](super::ShapeParam)).
    pub fn push<T: Copy + 'static>(&mut self, value: T) -> &mut Self {
        let size = std::mem::size_of::<T>();
        let mut slot = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
        // SAFETY: the slot holds at least `size` bytes and is 8-byte aligned,
        // enough for any parameter type.
        unsafe {
            std::ptr::copy_nonoverlapping(&value as *const T as *const u8, slot.as_mut_ptr() as *mut u8, size)
        };
        self.slots.push(slot);
        self
    }

    /// Appends a parameter given as its bytes (for parameters typed at run
    /// time, such as a user kernel's signature).
    pub fn push_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        let mut slot = vec![0u64; bytes.len().div_ceil(8).max(1)].into_boxed_slice();
        // SAFETY: the slot holds at least `bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), slot.as_mut_ptr() as *mut u8, bytes.len()) };
        self.slots.push(slot);
        self
    }

    /// How many parameters there are.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True without parameters.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Pointers to each slot, as `cuLaunchKernel`'s `kernelParams` wants.
    pub fn pointers(&mut self) -> Vec<*mut c_void> {
        self.slots.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_aligned_slots_byte_for_byte() {
        let shape = super::super::ShapeParam::new(&[2, 3]).unwrap();
        let mut a = KernelArgs::new();
        a.push(1.5f32).push(shape).push(7u8);
        let p = a.pointers();
        assert_eq!(p.len(), 3);
        for ptr in &p {
            assert_eq!(*ptr as usize % 8, 0);
        }
        // SAFETY: the slots hold these types.
        unsafe {
            assert_eq!(*(p[0] as *const f32), 1.5);
            assert_eq!(*(p[1] as *const super::super::ShapeParam), shape);
            assert_eq!(*(p[2] as *const u8), 7);
        }
    }
}
