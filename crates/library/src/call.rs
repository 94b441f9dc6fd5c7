//! The per-call resource handed to kernels: workspace freed after the call
//! (host memory, or the device's caching allocator for a GPU call), seeds
//! drawn from oxnet's global generator, the device's CUDA stream.

use oxnet_abi as abi;
use oxnet_core::{DType, Device, NDArray};
use rand::Rng;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::RefCell;
use std::ffi::c_void;

/// Alignment of workspace regions.
const WORKSPACE_ALIGN: usize = 64;

/// Workspace allocated during one kernel call; freed when dropped.
///
/// GPU workspace goes back to the device's caching allocator when the call
/// returns, while the kernel may still be running: that is safe because
/// every later use of the block is queued on the same stream, after it.
pub(crate) struct CallScope {
    device: Device,
    regions: RefCell<Vec<(*mut u8, Layout)>>,
    gpu_blocks: RefCell<Vec<NDArray>>,
}

/// The DLPack form of a device.
pub(crate) fn dl_device(device: Device) -> abi::DLDevice {
    match device {
        Device::Gpu(i) => abi::DLDevice { device_type: abi::K_DL_CUDA, device_id: i as i32 },
        _ => abi::DLDevice::CPU,
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        for (p, layout) in self.regions.get_mut().drain(..) {
            // SAFETY: allocated in `alloc_cpu` with this layout.
            unsafe { dealloc(p, layout) };
        }
    }
}

unsafe extern "C" fn alloc_cpu(host: *mut c_void, size: u64) -> *mut c_void {
    if host.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `host` is the CallScope of the running call.
    let scope = &*(host as *const CallScope);
    let Ok(size) = usize::try_from(size.max(1)) else { return std::ptr::null_mut() };
    let Ok(layout) = Layout::from_size_align(size, WORKSPACE_ALIGN) else { return std::ptr::null_mut() };
    let p = alloc_zeroed(layout);
    if p.is_null() {
        return std::ptr::null_mut();
    }
    match scope.regions.try_borrow_mut() {
        Ok(mut r) => {
            r.push((p, layout));
            p as *mut c_void
        }
        Err(_) => {
            dealloc(p, layout);
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn alloc_gpu(host: *mut c_void, size: u64) -> *mut c_void {
    if host.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `host` is the CallScope of the running call.
    let scope = &*(host as *const CallScope);
    let (Device::Gpu(_), Ok(size)) = (scope.device, usize::try_from(size.max(1))) else {
        return std::ptr::null_mut();
    };
    let Ok(block) = NDArray::empty(&[size], DType::U8, scope.device) else { return std::ptr::null_mut() };
    let p = block.raw_ptr() as *mut c_void;
    match scope.gpu_blocks.try_borrow_mut() {
        Ok(mut blocks) => {
            blocks.push(block);
            p
        }
        Err(_) => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn random_seed(_host: *mut c_void) -> u64 {
    oxnet_core::random::with_rng(|r| r.random::<u64>())
}

impl CallScope {
    /// The scope of one call of a kernel for `device`.
    pub(crate) fn new(device: Device) -> CallScope {
        CallScope { device, regions: RefCell::default(), gpu_blocks: RefCell::default() }
    }

    /// The ABI resource of this call; valid while `self` lives. A GPU call
    /// gets the device's stream, on which its kernels must be queued.
    pub(crate) fn resource(&self, is_train: bool) -> oxnet_core::Result<abi::Resource> {
        let cuda_stream = match self.device {
            Device::Gpu(i) => oxnet_core::gpu::stream_handle(i)?,
            _ => std::ptr::null_mut(),
        };
        Ok(abi::Resource {
            struct_size: std::mem::size_of::<abi::Resource>() as u32,
            is_train: is_train as i32,
            device: dl_device(self.device),
            host_data: self as *const CallScope as *mut c_void,
            alloc_cpu: Some(alloc_cpu),
            alloc_gpu: Some(alloc_gpu),
            random_seed: Some(random_seed),
            cuda_stream,
        })
    }
}
