//! The per-call resource handed to kernels: workspace freed after the call,
//! seeds drawn from oxnet's global generator, the (absent) CUDA stream.

use oxnet_abi as abi;
use rand::Rng;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::RefCell;
use std::ffi::c_void;

/// Alignment of workspace regions.
const WORKSPACE_ALIGN: usize = 64;

/// Workspace allocated during one kernel call; freed when dropped.
#[derive(Default)]
pub(crate) struct CallScope {
    regions: RefCell<Vec<(*mut u8, Layout)>>,
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

unsafe extern "C" fn alloc_gpu(_host: *mut c_void, _size: u64) -> *mut c_void {
    std::ptr::null_mut()
}

unsafe extern "C" fn random_seed(_host: *mut c_void) -> u64 {
    oxnet_core::random::with_rng(|r| r.random::<u64>())
}

impl CallScope {
    /// The ABI resource of this call; valid while `self` lives.
    pub(crate) fn resource(&self, is_train: bool) -> abi::Resource {
        abi::Resource {
            struct_size: std::mem::size_of::<abi::Resource>() as u32,
            is_train: is_train as i32,
            device: abi::DLDevice::CPU,
            host_data: self as *const CallScope as *mut c_void,
            alloc_cpu: Some(alloc_cpu),
            alloc_gpu: Some(alloc_gpu),
            random_seed: Some(random_seed),
            cuda_stream: std::ptr::null_mut(),
        }
    }
}
