//! The CUDA runtime of one process: each device's primary context, its one
//! stream, its caching allocator and its compiled kernels. CUDA is loaded
//! at run time; without a driver every call returns an error (never a
//! panic: cudarc panics when a library is missing, so presence is checked
//! first).

use super::args::KernelArgs;
use super::pool::{BlockPool, PoolStats, RawAllocator};
use crate::{Error, Result};
use cudarc::driver::{result as cu, sys};
use cudarc::nvrtc::{result as rtc, sys as rtc_sys};
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Mutex, OnceLock};

/// One device's state.
struct DeviceState {
    ordinal: usize,
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    /// `--gpu-architecture` for NVRTC (`sm_90`), from the compute capability.
    arch: String,
    /// Compute capability (major, minor).
    capability: (i32, i32),
    /// Blocks of a grid-stride kernel: 32 per multiprocessor.
    max_blocks: u32,
    pool: Mutex<BlockPool<DriverAllocator>>,
    /// Compiled kernels by name (each name stands for one source: the
    /// generators put the operator and dtypes in it).
    functions: Mutex<HashMap<String, usize>>,
}

// SAFETY: the handles are process-wide driver objects; CUDA's driver API is
// thread-safe once a thread has the context current (`bind`).
unsafe impl Send for DeviceState {}
unsafe impl Sync for DeviceState {}

/// Draws blocks from the driver for one device.
struct DriverAllocator {
    ctx: sys::CUcontext,
}

// SAFETY: see `DeviceState`.
unsafe impl Send for DriverAllocator {}

impl RawAllocator for DriverAllocator {
    fn allocate(&mut self, bytes: usize) -> Result<u64> {
        bind_ctx(self.ctx)?;
        // SAFETY: the context is current.
        unsafe { cu::malloc_sync(bytes) }
            .map_err(|e| Error::Device(format!("out of GPU memory allocating {bytes} bytes: {e}")))
    }
    fn free(&mut self, address: u64, _bytes: usize) {
        if bind_ctx(self.ctx).is_ok() {
            // SAFETY: the block came from `allocate` and nothing uses it (it sat in the cache).
            let _ = unsafe { cu::free_sync(address) };
        }
    }
}

/// The devices: their count once the driver is initialised, or why there are none.
static DRIVER: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
/// Each device's state, created on first use.
static DEVICES: OnceLock<Vec<OnceLock<std::result::Result<DeviceState, String>>>> = OnceLock::new();

thread_local! {
    /// The context current on this thread.
    static CURRENT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn driver_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Device(format!("CUDA {what} failed: {e}"))
}

fn driver() -> std::result::Result<usize, String> {
    DRIVER
        .get_or_init(|| {
            // SAFETY: only tries to open the library.
            if !unsafe { sys::is_culib_present() } {
                return Err("no CUDA driver was found (libcuda.so.1 could not be loaded)".into());
            }
            cu::init().map_err(|e| format!("the CUDA driver did not initialise: {e}"))?;
            let n = cu::device::get_count().map_err(|e| format!("cannot count CUDA devices: {e}"))?;
            Ok(n.max(0) as usize)
        })
        .clone()
}

/// How many GPUs the driver sees (0 without a driver).
pub fn device_count() -> usize {
    driver().unwrap_or(0)
}

fn bind_ctx(ctx: sys::CUcontext) -> Result<()> {
    if CURRENT.with(|c| c.get()) != ctx as usize {
        // SAFETY: `ctx` is a retained primary context.
        unsafe { cu::ctx::set_current(ctx) }.map_err(|e| driver_error("making the context current", e))?;
        CURRENT.with(|c| c.set(ctx as usize));
    }
    Ok(())
}

fn create(ordinal: usize) -> std::result::Result<DeviceState, String> {
    let dev = cu::device::get(ordinal as i32).map_err(|e| format!("gpu({ordinal}): {e}"))?;
    // SAFETY: `dev` is a valid device; the primary context stays retained
    // for the life of the process.
    let ctx = unsafe { cu::primary_ctx::retain(dev) }.map_err(|e| format!("gpu({ordinal}): {e}"))?;
    bind_ctx(ctx).map_err(|e| e.to_string())?;
    // A blocking stream: work other libraries queue on the legacy default
    // stream (CuPy's and PyTorch's default) is ordered with oxnet's, both ways.
    let stream =
        cu::stream::create(cu::stream::StreamKind::Default).map_err(|e| format!("gpu({ordinal}): {e}"))?;
    let attr = |a| unsafe { cu::device::get_attribute(dev, a) }.map_err(|e| format!("gpu({ordinal}): {e}"));
    let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let sms = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    Ok(DeviceState {
        ordinal,
        ctx,
        stream,
        arch: format!("sm_{major}{minor}"),
        capability: (major, minor),
        max_blocks: (sms.max(1) as u32) * 32,
        pool: Mutex::new(BlockPool::new(DriverAllocator { ctx })),
        functions: Mutex::new(HashMap::new()),
    })
}

/// The state of `gpu(ordinal)`, with its context current on this thread.
fn device(ordinal: usize) -> Result<&'static DeviceState> {
    let count = driver().map_err(Error::Device)?;
    if ordinal >= count {
        return Err(Error::Device(format!(
            "gpu({ordinal}) requested, but this machine has {count} GPU{}",
            if count == 1 { "" } else { "s" }
        )));
    }
    let slots = DEVICES.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
    let state =
        slots[ordinal].get_or_init(|| create(ordinal)).as_ref().map_err(|e| Error::Device(e.clone()))?;
    bind_ctx(state.ctx)?;
    Ok(state)
}

/// Errors unless `gpu(ordinal)` exists and its context can be created.
pub fn ensure(ordinal: usize) -> Result<()> {
    device(ordinal).map(|_| ())
}

/// The compute capability (major, minor) of `gpu(ordinal)`.
pub fn compute_capability(ordinal: usize) -> Result<(i32, i32)> {
    Ok(device(ordinal)?.capability)
}

/// (free, total) bytes of `gpu(ordinal)`'s memory, as the driver reports
/// them (blocks in oxnet's cache count as used).
pub fn memory_info(ordinal: usize) -> Result<(usize, usize)> {
    device(ordinal)?;
    cu::mem_get_info().map_err(|e| driver_error("querying memory", e))
}

/// Allocates a block of at least `bytes` bytes on `gpu(ordinal)` from its
/// cache; zeroes it (in stream order) when asked. Returns the address and
/// the size class that [`release`] takes back.
pub fn allocate(ordinal: usize, bytes: usize, zeroed: bool) -> Result<(u64, usize)> {
    let d = device(ordinal)?;
    let (address, class) = d.pool.lock().unwrap_or_else(|e| e.into_inner()).acquire(bytes)?;
    if zeroed && bytes > 0 {
        // SAFETY: the block holds at least `bytes` bytes.
        unsafe { cu::memset_d8_async(address, 0, bytes, d.stream) }.map_err(|e| driver_error("memset", e))?;
    }
    Ok((address, class))
}

/// Returns a block to its device's cache (work already queued with it runs
/// first: the stream orders it).
pub fn release(ordinal: usize, address: u64, class: usize) {
    if let Ok(d) = device(ordinal) {
        d.pool.lock().unwrap_or_else(|e| e.into_inner()).release(address, class);
    }
}

/// The caching allocator's byte counts for `gpu(ordinal)`.
pub fn pool_stats(ordinal: usize) -> Result<PoolStats> {
    Ok(device(ordinal)?.pool.lock().unwrap_or_else(|e| e.into_inner()).stats())
}

/// Gives `gpu(ordinal)`'s cached blocks back to the driver (after the
/// stream's queued work finishes).
pub fn empty_cache(ordinal: usize) -> Result<()> {
    synchronize(ordinal)?;
    device(ordinal)?.pool.lock().unwrap_or_else(|e| e.into_inner()).empty_cache();
    Ok(())
}

/// Waits for everything queued on `gpu(ordinal)`; an asynchronous kernel
/// error surfaces here.
pub fn synchronize(ordinal: usize) -> Result<()> {
    let d = device(ordinal)?;
    // SAFETY: the stream belongs to the current context.
    unsafe { cu::stream::synchronize(d.stream) }
        .map_err(|e| driver_error(&format!("gpu({}) work (a kernel or copy queued earlier)", d.ordinal), e))
}

/// Waits for the work queued on every GPU this process has used (devices
/// never used are left alone: no context is created for them).
pub fn synchronize_used() -> Result<()> {
    let Some(slots) = DEVICES.get() else { return Ok(()) };
    for (ordinal, slot) in slots.iter().enumerate() {
        if matches!(slot.get(), Some(Ok(_))) {
            synchronize(ordinal)?;
        }
    }
    Ok(())
}

/// The CUDA stream of `gpu(ordinal)`, for custom operators and libraries
/// that queue their own work (it must go on this stream).
pub fn stream(ordinal: usize) -> Result<*mut c_void> {
    Ok(device(ordinal)?.stream as *mut c_void)
}

/// Makes another stream `consumer` (a CUDA stream handle of another
/// library) wait for the work queued so far on `gpu(ordinal)`'s stream,
/// without blocking the host: an event recorded here, waited on there.
pub fn order_stream_after(ordinal: usize, consumer: *mut c_void) -> Result<()> {
    let d = device(ordinal)?;
    let event = cu::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
        .map_err(|e| driver_error("creating an event", e))?;
    // SAFETY: a fresh event recorded on our stream; the consumer handle is
    // the caller's promise; the event is released once its waits complete.
    let result = unsafe {
        cu::event::record(event, d.stream).and_then(|_| {
            cu::stream::wait_event(
                consumer as sys::CUstream,
                event,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        })
    };
    unsafe {
        let _ = cu::event::destroy(event);
    }
    result.map_err(|e| driver_error("ordering another stream after oxnet's", e))
}

/// Copies host bytes to device memory (the host buffer may be dropped on return).
pub fn copy_to_device(ordinal: usize, dst: u64, src: &[u8]) -> Result<()> {
    let d = device(ordinal)?;
    if src.is_empty() {
        return Ok(());
    }
    // SAFETY: `dst` holds `src.len()` bytes; pageable memory is staged before return.
    unsafe { cu::memcpy_htod_async(dst, src, d.stream) }.map_err(|e| driver_error("host-to-device copy", e))
}

/// Copies device memory to host bytes, waiting for the copy.
pub fn copy_to_host(ordinal: usize, dst: &mut [u8], src: u64) -> Result<()> {
    let d = device(ordinal)?;
    if dst.is_empty() {
        return Ok(());
    }
    // SAFETY: `src` holds `dst.len()` bytes.
    unsafe { cu::memcpy_dtoh_async(dst, src, d.stream) }
        .map_err(|e| driver_error("device-to-host copy", e))?;
    synchronize(ordinal)
}

/// Copies `bytes` bytes between two blocks of one device, in stream order.
pub fn copy_on_device(ordinal: usize, dst: u64, src: u64, bytes: usize) -> Result<()> {
    let d = device(ordinal)?;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: both blocks hold `bytes` bytes.
    unsafe { cu::memcpy_dtod_async(dst, src, bytes, d.stream) }
        .map_err(|e| driver_error("device-to-device copy", e))
}

/// Blocks for a grid-stride kernel over `n` elements on `gpu(ordinal)`.
pub fn grid_for(ordinal: usize, n: usize) -> Result<(u32, u32)> {
    Ok(super::index::launch_shape(n, device(ordinal)?.max_blocks))
}

/// Launches kernel `name` on `gpu(ordinal)`'s stream. On the first launch
/// of a name its CUDA C++ `source` is generated and compiled with NVRTC;
/// later launches find the compiled kernel by name alone.
pub fn launch(
    ordinal: usize,
    name: &str,
    source: impl FnOnce() -> Result<String>,
    grid: (u32, u32),
    args: &mut KernelArgs,
) -> Result<()> {
    let d = device(ordinal)?;
    let f = function(d, name, source)?;
    let mut params = args.pointers();
    // SAFETY: the parameters match the kernel's signature (the generator's
    // contract) and live until the call returns (the driver copies them).
    unsafe {
        cu::launch_kernel(f as sys::CUfunction, (grid.0, 1, 1), (grid.1, 1, 1), 0, d.stream, &mut params)
    }
    .map_err(|e| driver_error(&format!("launching kernel `{name}`"), e))
}

fn function(d: &DeviceState, name: &str, source: impl FnOnce() -> Result<String>) -> Result<usize> {
    let mut cache = d.functions.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = cache.get(name) {
        return Ok(*f);
    }
    let image = compile(&source()?, name, &d.arch)?;
    // SAFETY: a CUBIN image for this device; the module stays loaded for the process.
    let module = unsafe { cu::module::load_data(image.as_ptr() as *const c_void) }
        .map_err(|e| driver_error(&format!("loading kernel `{name}`"), e))?;
    let cname = CString::new(name).map_err(|_| Error::Invalid(format!("bad kernel name {name:?}")))?;
    // SAFETY: the module is loaded.
    let f = unsafe { cu::module::get_function(module, cname) }
        .map_err(|e| driver_error(&format!("finding kernel `{name}`"), e))?;
    cache.insert(name.to_string(), f as usize);
    Ok(f as usize)
}

/// Whether NVRTC (libnvrtc) can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { rtc_sys::is_culib_present() }
}

/// Compiles CUDA C++ `source` with NVRTC for `arch`: machine code (CUBIN)
/// for a real architecture (`sm_90`), NUL-terminated PTX for a virtual one
/// (`compute_90`). Needs no GPU. A compile error comes back with NVRTC's
/// log. Machine code rather than PTX for the devices: a driver older than
/// the NVRTC refuses its newer PTX, while CUBIN of the same major version loads.
pub fn compile(source: &str, name: &str, arch: &str) -> Result<Vec<u8>> {
    compile_with(source, name, arch, &[], &[]).map(|(image, _)| image)
}

/// [`compile`] with extra NVRTC `options` (`-DN=4`, `--use_fast_math`) and
/// C++ name expressions to `export` (`axpy<float>`): the image and the
/// lowered (mangled) symbol of each export, in order.
pub fn compile_with(
    source: &str,
    name: &str,
    arch: &str,
    options: &[String],
    exports: &[String],
) -> Result<(Vec<u8>, Vec<String>)> {
    if !nvrtc_available() {
        return Err(Error::Device(
            "NVRTC was not found (libnvrtc.so.13 or .12): install the CUDA toolkit or `pip install nvidia-cuda-nvrtc`, \
             or put its lib folder on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let nul = |what: &str| Error::Invalid(format!("{what} of `{name}` holds a NUL byte"));
    let src = CString::new(source).map_err(|_| nul("the source"))?;
    let export_names = exports
        .iter()
        .map(|e| CString::new(e.as_str()).map_err(|_| nul("an export")))
        .collect::<Result<Vec<_>>>()?;
    let prog = rtc::create_program(&src, None).map_err(|e| Error::Device(format!("NVRTC: {e}")))?;
    let run = || -> Result<(Vec<u8>, Vec<String>)> {
        for e in &export_names {
            // SAFETY: `prog` is a live program; the name outlives the call.
            unsafe { rtc_sys::nvrtcAddNameExpression(prog, e.as_ptr()) }
                .result()
                .map_err(|err| Error::Device(format!("NVRTC: exporting {e:?}: {err}")))?;
        }
        let mut all = vec![format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
        all.extend(options.iter().cloned());
        // SAFETY: `prog` is a live program.
        if let Err(e) = unsafe { rtc::compile_program(prog, &all) } {
            let log =
                unsafe { rtc::get_program_log(prog) }.map(|l| c_chars_to_string(&l)).unwrap_or_default();
            return Err(Error::Device(format!("NVRTC could not compile `{name}` for {arch} ({e}):\n{log}")));
        }
        let image = if arch.starts_with("sm_") {
            // SAFETY: compiled for a real architecture.
            unsafe { cubin(prog) }?
        } else {
            // SAFETY: compiled.
            unsafe { rtc::get_ptx(prog) }
                .map(|p| p.iter().map(|&c| c as u8).collect())
                .map_err(|e| Error::Device(format!("NVRTC: {e}")))?
        };
        let mut lowered = Vec::with_capacity(export_names.len());
        for e in &export_names {
            let mut out: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: compiled with this name expression; NVRTC owns the returned string.
            unsafe { rtc_sys::nvrtcGetLoweredName(prog, e.as_ptr(), &mut out) }
                .result()
                .map_err(|err| Error::Device(format!("NVRTC: the lowered name of {e:?}: {err}")))?;
            // SAFETY: a NUL-terminated string owned by the program, read before it is destroyed.
            lowered.push(unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned());
        }
        Ok((image, lowered))
    };
    let result = run();
    // SAFETY: created above, not used after.
    let _ = unsafe { rtc::destroy_program(prog) };
    result
}

/// Compiles `source` for `gpu(ordinal)`'s architecture and loads it there:
/// a module handle (loaded for the life of the process) and the lowered
/// names of `exports`.
pub fn load_module(
    ordinal: usize,
    source: &str,
    name: &str,
    options: &[String],
    exports: &[String],
) -> Result<(usize, Vec<String>)> {
    let d = device(ordinal)?;
    let (image, lowered) = compile_with(source, name, &d.arch, options, exports)?;
    // SAFETY: a CUBIN image for this device.
    let module = unsafe { cu::module::load_data(image.as_ptr() as *const c_void) }
        .map_err(|e| driver_error(&format!("loading module `{name}`"), e))?;
    Ok((module as usize, lowered))
}

/// Kernel `symbol` of a module that [`load_module`] loaded on `gpu(ordinal)`.
pub fn module_function(ordinal: usize, module: usize, symbol: &str) -> Result<usize> {
    device(ordinal)?;
    let cname = CString::new(symbol).map_err(|_| Error::Invalid(format!("bad kernel name {symbol:?}")))?;
    // SAFETY: `module` is a loaded module of this device's context.
    let f = unsafe { cu::module::get_function(module as sys::CUmodule, cname) }
        .map_err(|e| driver_error(&format!("finding kernel `{symbol}`"), e))?;
    Ok(f as usize)
}

/// Launches kernel `function` (from [`module_function`]) on `gpu(ordinal)`'s
/// stream with a 3-D grid and block and `shared_mem` bytes of dynamic shared memory.
pub fn launch_function(
    ordinal: usize,
    function: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    args: &mut KernelArgs,
) -> Result<()> {
    let d = device(ordinal)?;
    let mut params = args.pointers();
    // SAFETY: the caller packed the parameters for the kernel's signature;
    // the driver copies them during the call.
    unsafe {
        cu::launch_kernel(
            function as sys::CUfunction,
            (grid[0], grid[1], grid[2]),
            (block[0], block[1], block[2]),
            shared_mem,
            d.stream,
            &mut params,
        )
    }
    .map_err(|e| driver_error("launching a kernel", e))
}

/// The CUBIN of a compiled program.
///
/// # Safety
/// `prog` was compiled for a real architecture.
unsafe fn cubin(prog: rtc_sys::nvrtcProgram) -> Result<Vec<u8>> {
    let mut size = 0usize;
    rtc_sys::nvrtcGetCUBINSize(prog, &mut size).result().map_err(|e| Error::Device(format!("NVRTC: {e}")))?;
    let mut image = vec![0u8; size];
    rtc_sys::nvrtcGetCUBIN(prog, image.as_mut_ptr() as *mut std::ffi::c_char)
        .result()
        .map_err(|e| Error::Device(format!("NVRTC: {e}")))?;
    Ok(image)
}

fn c_chars_to_string(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}
