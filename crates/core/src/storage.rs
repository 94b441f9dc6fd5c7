//! Raw memory behind arrays: 64-byte aligned host buffers, or memory owned by
//! someone else (an `ndarray` array, a numpy buffer) kept alive by an owner.

use crate::{Device, Error, Result};
use std::alloc::{self, Layout};
use std::any::Any;
use std::ptr::NonNull;

/// Alignment of every buffer oxnet allocates.
pub const ALIGNMENT: usize = 64;

enum Owner {
    /// Allocated by us with this layout.
    Aligned(Layout),
    /// Borrowed from a foreign owner, which is dropped with the storage.
    Foreign(#[allow(dead_code)] Box<dyn Any + Send + Sync>),
    /// No memory at all: the storage of a traced (shape-only) array.
    Meta,
    /// A block of GPU memory from `gpu(ordinal)`'s caching allocator, of
    /// this size class.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Gpu { ordinal: usize, class: usize },
}

/// A block of device memory shared by every view onto it.
///
/// Arrays are mutable through shared handles (as in MXNet: `x[:] = 1` changes
/// every view of `x`), so storage hands out raw pointers; the engine's
/// dispatcher is what keeps kernels' reads and writes apart.
pub struct Storage {
    ptr: NonNull<u8>,
    bytes: usize,
    device: Device,
    owner: Owner,
}

// SAFETY: the buffer is plain memory; synchronisation of concurrent writes is
// the caller's contract, as for any shared mutable tensor.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// Allocates `bytes` zeroed bytes on `device`, 64-byte aligned.
    pub fn zeroed(bytes: usize, device: Device) -> Result<Storage> {
        Storage::allocate(bytes, device, true)
    }

    /// Allocates `bytes` bytes without zeroing them first. Every element type
    /// is valid for any bit pattern except bool, whose arrays use `zeroed`.
    pub fn uninit(bytes: usize, device: Device) -> Result<Storage> {
        Storage::allocate(bytes, device, false)
    }

    fn allocate(bytes: usize, device: Device, zeroed: bool) -> Result<Storage> {
        device.ensure_available()?;
        #[cfg(feature = "cuda")]
        if let Device::Gpu(ordinal) = device {
            let (address, class) = crate::gpu::allocate(ordinal, bytes, zeroed)?;
            let ptr = NonNull::new(address as *mut u8)
                .ok_or_else(|| Error::Device(format!("gpu({ordinal}) returned a null block")))?;
            crate::profiler::allocated(device, bytes);
            return Ok(Storage { ptr, bytes, device, owner: Owner::Gpu { ordinal, class } });
        }
        let layout = Layout::from_size_align(bytes.max(1), ALIGNMENT)
            .map_err(|e| Error::Invalid(format!("cannot allocate {bytes} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe {
            if zeroed {
                alloc::alloc_zeroed(layout)
            } else {
                alloc::alloc(layout)
            }
        };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| Error::Invalid(format!("out of memory allocating {bytes} bytes")))?;
        advise_huge_pages(raw, bytes);
        crate::profiler::allocated(device, bytes);
        Ok(Storage { ptr, bytes, device, owner: Owner::Aligned(layout) })
    }

    /// Wraps memory owned by `owner`, which must keep `ptr..ptr+bytes` valid
    /// and unmoved until it is dropped.
    ///
    /// # Safety
    /// `ptr` must point to `bytes` readable and writable bytes that stay valid
    /// for as long as `owner` lives.
    pub unsafe fn foreign(
        ptr: *mut u8,
        bytes: usize,
        device: Device,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Storage {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        Storage { ptr, bytes, device, owner: Owner::Foreign(owner) }
    }

    /// Storage without memory, for arrays that only carry a shape and a
    /// dtype while a graph is traced ([`crate::trace`]). Reading or writing
    /// through it is an error.
    pub fn meta(bytes: usize, device: Device) -> Storage {
        Storage { ptr: NonNull::dangling(), bytes, device, owner: Owner::Meta }
    }

    /// True for the storage of a traced array, which holds no values.
    #[inline]
    pub fn is_meta(&self) -> bool {
        matches!(self.owner, Owner::Meta)
    }

    /// Errors for the storage of a traced array.
    #[inline]
    pub fn check_has_values(&self) -> Result<()> {
        if self.is_meta() {
            return Err(Error::Invalid(
                "this is a traced array: it has a shape and a dtype but no values while its graph is traced"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Start of the buffer: a device address for GPU storage, which host
    /// code must not dereference.
    #[inline]
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Size in bytes.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The device holding the buffer.
    #[inline]
    pub fn device(&self) -> Device {
        self.device
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        match self.owner {
            Owner::Aligned(layout) => {
                // SAFETY: allocated in `zeroed`/`uninit` with this layout.
                unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
                crate::profiler::freed(self.device, self.bytes);
            }
            #[cfg(feature = "cuda")]
            Owner::Gpu { ordinal, class } => {
                crate::gpu::release(ordinal, self.ptr.as_ptr() as u64, class);
                crate::profiler::freed(self.device, self.bytes);
            }
            _ => {}
        }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} bytes on {})", self.bytes, self.device)
    }
}

/// Host blocks of this many bytes or more are offered transparent huge
/// pages (numpy's threshold too).
pub const HUGE_PAGE_BYTES: usize = 4 << 20;

/// Asks Linux to back a large host block with transparent huge pages (where
/// the system's setting is `madvise`, the common default, nothing does
/// otherwise). Fewer pages make the kernel's page walks cheaper: MPI's
/// single-copy transfer between processes walks every page of a message
/// (`bench/allreduce.sh`: 4 MiB summed over 2 ranks, see docs/distributed.md),
/// and so do page faults and TLB misses of large kernels. Advice only: a
/// refusal changes nothing.
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_PAGE_BYTES {
        const PAGE: usize = 4096;
        let start = (ptr as usize).next_multiple_of(PAGE);
        let end = (ptr as usize + bytes) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies inside the block just allocated;
            // MADV_HUGEPAGE changes no contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}
