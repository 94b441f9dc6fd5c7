//! Devices an array can live on.
//!
//! All host devices share one memory and one set of kernels; MXNet 1.x
//! still tells them apart (`cpu(0)`, `cpu(1)`, `cpu_pinned(0)`, ...), and
//! code written for it relies on that: a Gluon parameter keeps one copy per
//! context, `split_and_load` spreads a batch over `[cpu(0), cpu(1)]`, a
//! kvstore sums the copies of a key. oxnet keeps the label on the array
//! ([`Device::Host`]); operators run on the CPU for every host device.

use crate::Result;
use std::fmt;

/// Where an array's memory lives and where its kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory, `cpu(0)`; kernels run on the CPU ([`crate::parallel`]
    /// gives intra-op parallelism).
    #[default]
    Cpu,
    /// Host memory under another of MXNet's host contexts (`cpu(i)` for
    /// `i > 0`, `cpu_pinned(i)`, `cpu_shared(i)`). The same memory and
    /// kernels as [`Device::Cpu`]; only the label differs. Built by
    /// [`Device::host`], which gives `Cpu` for `cpu(0)`, so each device has
    /// one spelling.
    Host(HostDevice),
    /// A CUDA device by ordinal (see [`crate::gpu`]). A build without the
    /// `cuda` feature, or a machine without the device, gives an error
    /// saying so on the first allocation.
    Gpu(usize),
}

/// The kinds of host memory MXNet names. oxnet allocates them all alike
/// (pinned transfers are the GPU backend's business).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostKind {
    /// `cpu(i)`.
    Cpu,
    /// `cpu_pinned(i)`: page-locked memory in MXNet.
    Pinned,
    /// `cpu_shared(i)`: shared memory in MXNet (DataLoader workers).
    Shared,
}

/// A host device other than `cpu(0)`: see [`Device::Host`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostDevice {
    kind: HostKind,
    id: usize,
}

impl HostDevice {
    /// Which host context.
    pub fn kind(self) -> HostKind {
        self.kind
    }

    /// Its device id.
    pub fn id(self) -> usize {
        self.id
    }
}

impl Device {
    /// The host device of `kind` with `id`: [`Device::Cpu`] for `cpu(0)`.
    ///
    /// ```
    /// use oxnet_core::{Device, HostKind};
    /// assert_eq!(Device::host(HostKind::Cpu, 0), Device::Cpu);
    /// assert_eq!(Device::host(HostKind::Cpu, 1).to_string(), "cpu(1)");
    /// assert_eq!(Device::host(HostKind::Pinned, 0).to_string(), "cpu_pinned(0)");
    /// ```
    pub fn host(kind: HostKind, id: usize) -> Device {
        match (kind, id) {
            (HostKind::Cpu, 0) => Device::Cpu,
            _ => Device::Host(HostDevice { kind, id }),
        }
    }

    /// Whether this is host memory (any of MXNet's CPU contexts).
    pub fn is_host(self) -> bool {
        !matches!(self, Device::Gpu(_))
    }

    /// Where operators on arrays from this device put their results, as
    /// MXNet decides: pinned and shared host memory give `cpu(id)`.
    ///
    /// ```
    /// use oxnet_core::{Device, HostKind};
    /// assert_eq!(Device::host(HostKind::Pinned, 2).compute_device(), Device::host(HostKind::Cpu, 2));
    /// ```
    pub fn compute_device(self) -> Device {
        match self {
            Device::Host(h) => Device::host(HostKind::Cpu, h.id),
            d => d,
        }
    }

    /// Which kernels run here: [`Device::Cpu`] for every host device, the
    /// GPU itself otherwise.
    pub fn kernel_device(self) -> Device {
        if self.is_host() {
            Device::Cpu
        } else {
            self
        }
    }

    /// MXNet's device type code: 1 CPU, 2 GPU, 3 pinned CPU, 5 shared CPU.
    pub fn type_code(self) -> i32 {
        match self {
            Device::Cpu => 1,
            Device::Host(h) => match h.kind {
                HostKind::Cpu => 1,
                HostKind::Pinned => 3,
                HostKind::Shared => 5,
            },
            Device::Gpu(_) => 2,
        }
    }

    /// MXNet's device type name (`cpu`, `gpu`, `cpu_pinned`, `cpu_shared`).
    pub fn type_name(self) -> &'static str {
        match self.type_code() {
            1 => "cpu",
            2 => "gpu",
            3 => "cpu_pinned",
            _ => "cpu_shared",
        }
    }

    /// The device id (`i` of `cpu(i)` or `gpu(i)`).
    pub fn ordinal(self) -> usize {
        match self {
            Device::Cpu => 0,
            Device::Host(h) => h.id,
            Device::Gpu(i) => i,
        }
    }

    /// Checks that memory can be allocated on this device in this build.
    pub fn ensure_available(self) -> Result<()> {
        match self {
            Device::Gpu(i) => crate::gpu::ensure_device(i),
            _ => Ok(()),
        }
    }

    /// Errors unless this is host memory, which host code may read and write
    /// (GPU memory goes through copies: [`crate::NDArray::to_device`]).
    pub fn ensure_host(self) -> Result<()> {
        match self {
            Device::Gpu(i) => Err(crate::Error::Device(format!(
                "the array is on gpu({i}), and host code cannot read GPU memory: copy it to the CPU first \
                 (NDArray::to_device(Device::Cpu); in Python .asnumpy() or .as_in_context(mx.cpu()))"
            ))),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.type_name(), self.ordinal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_device_has_one_spelling_and_runs_cpu_kernels() {
        assert_eq!(Device::host(HostKind::Cpu, 0), Device::Cpu);
        assert_ne!(Device::host(HostKind::Cpu, 1), Device::Cpu);
        assert_ne!(Device::host(HostKind::Pinned, 0), Device::Cpu);
        for d in [Device::Cpu, Device::host(HostKind::Cpu, 3), Device::host(HostKind::Shared, 1)] {
            assert!(d.is_host());
            assert_eq!(d.kernel_device(), Device::Cpu);
            assert!(d.ensure_host().is_ok());
        }
        assert_eq!(Device::host(HostKind::Shared, 1).compute_device().to_string(), "cpu(1)");
        assert_eq!(Device::host(HostKind::Cpu, 3).compute_device().to_string(), "cpu(3)");
        assert_eq!(Device::Gpu(1).kernel_device(), Device::Gpu(1));
        assert!(!Device::Gpu(0).is_host());
        assert_eq!(Device::Gpu(2).to_string(), "gpu(2)");
        assert_eq!(Device::host(HostKind::Shared, 0).type_code(), 5);
    }
}
