//! Devices an array can live on.

use crate::Result;
use std::fmt;

/// Where an array's memory lives and where its kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory; kernels run on the CPU ([`crate::parallel`] gives intra-op parallelism).
    #[default]
    Cpu,
    /// A CUDA device by ordinal (see [`crate::gpu`]). A build without the
    /// `cuda` feature, or a machine without the device, gives an error
    /// saying so on the first allocation.
    Gpu(usize),
}

impl Device {
    /// MXNet's device type code: 1 for CPU, 2 for GPU.
    pub fn type_code(self) -> i32 {
        match self {
            Device::Cpu => 1,
            Device::Gpu(_) => 2,
        }
    }

    /// The device ordinal (0 for the CPU).
    pub fn ordinal(self) -> usize {
        match self {
            Device::Cpu => 0,
            Device::Gpu(i) => i,
        }
    }

    /// Checks that memory can be allocated on this device in this build.
    pub fn ensure_available(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Gpu(i) => crate::gpu::ensure_device(i),
        }
    }

    /// Errors unless this is host memory, which host code may read and write
    /// (GPU memory goes through copies: [`crate::NDArray::to_device`]).
    pub fn ensure_host(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Gpu(i) => Err(crate::Error::Device(format!(
                "the array is on gpu({i}), and host code cannot read GPU memory: copy it to the CPU first \
                 (NDArray::to_device(Device::Cpu); in Python .asnumpy() or .as_in_context(mx.cpu()))"
            ))),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu(0)"),
            Device::Gpu(i) => write!(f, "gpu({i})"),
        }
    }
}
