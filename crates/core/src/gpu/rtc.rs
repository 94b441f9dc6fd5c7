//! CUDA C++ written by users, compiled at run time with NVRTC and launched
//! on oxnet's arrays (MXNet's `mx.rtc.CudaModule`).
//!
//! [`CudaModule::new`] compiles the source once to PTX for a virtual
//! architecture, so mistakes in it are reported at once, with NVRTC's log,
//! on machines without a GPU too (NVRTC needs none). The first launch on a
//! device compiles it again to machine code for that device and loads it;
//! kernels are found by name and launched on the device's stream, ordered
//! with every other operation on it.

use super::KernelArgs;
use crate::{Device, Error, Result};
use std::collections::HashMap;
use std::sync::Mutex;

/// The architecture a module is checked against when it is created.
pub const CHECK_ARCH: &str = "compute_80";

/// A compiled CUDA source and its kernels.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct CudaModule {
    source: String,
    options: Vec<String>,
    exports: Vec<String>,
    /// Per device ordinal: the loaded module and the lowered export names.
    loaded: Mutex<HashMap<usize, (usize, Vec<String>)>>,
    /// Kernels found so far, by (device ordinal, name).
    kernels: Mutex<HashMap<(usize, String), usize>>,
}

impl std::fmt::Debug for CudaModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaModule").field("options", &self.options).field("exports", &self.exports).finish()
    }
}

impl CudaModule {
    /// Compiles `source` with NVRTC `options` (`-DN=4`, `--use_fast_math`;
    /// `--gpu-architecture` and `--std=c++17` are set by oxnet), exporting the
    /// C++ name expressions `exports` (`axpy<float>`) for templated or
    /// overloaded kernels. A compile error is an error holding NVRTC's log.
    pub fn new(source: &str, options: Vec<String>, exports: Vec<String>) -> Result<CudaModule> {
        if let Some(o) =
            options.iter().find(|o| o.starts_with("--gpu-architecture") || o.starts_with("-arch"))
        {
            return Err(Error::Invalid(format!(
                "option `{o}`: oxnet compiles for each device's own architecture; leave it out"
            )));
        }
        check(source, &options, &exports)?;
        Ok(CudaModule {
            source: source.to_string(),
            options,
            exports,
            loaded: Mutex::new(HashMap::new()),
            kernels: Mutex::new(HashMap::new()),
        })
    }

    #[cfg(feature = "cuda")]
    /// The symbol of kernel `name`: the lowered name of an export, else `name` itself
    /// (an `extern "C"` kernel).
    fn symbol(&self, lowered: &[String], name: &str) -> String {
        self.exports.iter().position(|e| e == name).map_or_else(|| name.to_string(), |i| lowered[i].clone())
    }

    /// Launches kernel `name` on `device` with `args` (packed in the
    /// kernel's parameter order), a `grid` of blocks of `block` threads, and
    /// `shared_mem` bytes of dynamic shared memory per block.
    pub fn launch(
        &self,
        name: &str,
        device: Device,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
        args: &mut KernelArgs,
    ) -> Result<()> {
        let Device::Gpu(ordinal) = device else {
            return Err(Error::Device(format!(
                "kernel `{name}`: CUDA kernels run on a GPU, not on {device}"
            )));
        };
        if grid.contains(&0) || block.contains(&0) {
            return Err(Error::Invalid(format!(
                "kernel `{name}`: grid {grid:?} and block {block:?} need every dimension at least 1"
            )));
        }
        // without the `cuda` feature `new` always errs: no module gets here
        #[cfg(feature = "cuda")]
        {
            let function = self.function(ordinal, name)?;
            super::driver::launch_function(ordinal, function, grid, block, shared_mem, args)
                .map_err(|e| Error::Device(format!("kernel `{name}`: {e}")))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (ordinal, shared_mem, args);
            Err(super::unsupported("launching CUDA kernels"))
        }
    }

    #[cfg(feature = "cuda")]
    fn function(&self, ordinal: usize, name: &str) -> Result<usize> {
        let key = (ordinal, name.to_string());
        if let Some(f) = self.kernels.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(*f);
        }
        let (module, symbol) = {
            let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            let (module, lowered) = match loaded.entry(ordinal) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(super::driver::load_module(
                    ordinal,
                    &self.source,
                    "CudaModule",
                    &self.options,
                    &self.exports,
                )?),
            };
            (*module, self.symbol(lowered, name))
        };
        let f = super::driver::module_function(ordinal, module, &symbol).map_err(|e| {
            Error::Invalid(format!(
                "the module has no kernel `{name}` ({e}); declare it extern \"C\" or list it in `exports`"
            ))
        })?;
        self.kernels.lock().unwrap_or_else(|e| e.into_inner()).insert(key, f);
        Ok(f)
    }
}

/// Compiles the source to PTX for [`CHECK_ARCH`], for its errors.
fn check(source: &str, options: &[String], exports: &[String]) -> Result<()> {
    #[cfg(feature = "cuda")]
    {
        super::driver::compile_with(source, "CudaModule", CHECK_ARCH, options, exports).map(|_| ())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (source, options, exports);
        Err(super::unsupported("compiling CUDA source (mx.rtc)"))
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::*;

    /// Whether NVRTC can be loaded; without it the tests say so and pass,
    /// unless `OXNET_REQUIRE_NVRTC=1` (scripts/test.sh sets it).
    fn nvrtc() -> bool {
        if super::super::nvrtc_available() {
            return true;
        }
        assert!(
            std::env::var("OXNET_REQUIRE_NVRTC").as_deref() != Ok("1"),
            "OXNET_REQUIRE_NVRTC=1 but NVRTC cannot be loaded"
        );
        eprintln!("skipped: NVRTC cannot be loaded here");
        false
    }

    const AXPY: &str = r#"
template <typename T>
__global__ void axpy(const T* x, T* y, T alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += alpha * x[i];
}
extern "C" __global__ void fill(float* y, float v) { y[threadIdx.x] = v; }
"#;

    #[test]
    fn a_module_compiles_and_exports_lowered_names() {
        if !nvrtc() {
            return;
        }
        let m = CudaModule::new(AXPY, vec!["-DUNUSED=1".into()], vec!["axpy<float>".into()]).unwrap();
        let (_, lowered) =
            super::super::driver::compile_with(AXPY, "t", CHECK_ARCH, &m.options, &m.exports).unwrap();
        assert_eq!(lowered.len(), 1);
        assert!(lowered[0].starts_with("_Z") && lowered[0].contains("axpy"), "{lowered:?}");
        assert_eq!(m.symbol(&lowered, "axpy<float>"), lowered[0]);
        assert_eq!(m.symbol(&lowered, "fill"), "fill");
    }

    #[test]
    fn a_compile_error_carries_the_log() {
        if !nvrtc() {
            return;
        }
        let e = CudaModule::new("__global__ void k() { undeclared_thing(); }", vec![], vec![]).unwrap_err();
        assert!(e.to_string().contains("undeclared_thing"), "{e}");
        let e = CudaModule::new(AXPY, vec!["-arch=sm_90".into()], vec![]).unwrap_err();
        assert!(e.to_string().contains("leave it out"), "{e}");
    }
}
