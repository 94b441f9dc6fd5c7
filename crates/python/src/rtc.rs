//! `oxnet.rtc`: CUDA source compiled at run time and launched on oxnet's
//! arrays (see `oxnet_core::gpu::rtc`). The Python side parses kernel
//! signatures and packs the parameters; this side compiles and launches.

use crate::errors::to_py;
use oxnet_core::gpu::{rtc::CudaModule, KernelArgs};
use oxnet_core::Device;
use pyo3::prelude::*;

/// A compiled CUDA module (`mx.rtc.CudaModule` holds one).
#[pyclass(name = "CudaModuleHandle", module = "oxnet._oxnet", frozen)]
pub struct RtcModule {
    inner: CudaModule,
}

#[pymethods]
impl RtcModule {
    /// Compiles `source` with NVRTC `options`, exporting the C++ name
    /// expressions `exports`; a compile error raises `MXNetError` with NVRTC's log.
    #[new]
    fn new(py: Python<'_>, source: String, options: Vec<String>, exports: Vec<String>) -> PyResult<Self> {
        let inner = py.detach(|| CudaModule::new(&source, options, exports)).map_err(to_py)?;
        Ok(RtcModule { inner })
    }

    /// Launches kernel `name` on `gpu(ordinal)` with its parameters given as
    /// their bytes, in order.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        name: &str,
        ordinal: usize,
        params: Vec<Vec<u8>>,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
    ) -> PyResult<()> {
        let mut args = KernelArgs::new();
        for p in &params {
            args.push_bytes(p);
        }
        py.detach(|| self.inner.launch(name, Device::Gpu(ordinal), grid, block, shared_mem, &mut args))
            .map_err(to_py)
    }
}
