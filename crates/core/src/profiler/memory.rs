//! Memory in use per device: kept always (one atomic add per allocation),
//! recorded as the counter `Memory: <device>` in the `Device Storage`
//! domain while memory profiling runs.

use super::aggregate::MEMORY_DOMAIN;
use super::record::{push, Record};
use super::{active, MEMORY};
use crate::Device;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

/// Devices tracked: the host and GPUs 0..15 (further GPUs share the last slot).
const SLOTS: usize = 17;

static IN_USE: [AtomicI64; SLOTS] = [const { AtomicI64::new(0) }; SLOTS];

fn slot(device: Device) -> usize {
    match device {
        Device::Cpu | Device::Host(_) => 0,
        Device::Gpu(i) => 1 + i.min(SLOTS - 2),
    }
}

fn change(device: Device, delta: i64) {
    let now = IN_USE[slot(device)].fetch_add(delta, Ordering::Relaxed) + delta;
    if active(MEMORY) {
        static DOMAIN: OnceLock<Arc<str>> = OnceLock::new();
        let domain = DOMAIN.get_or_init(|| Arc::from(MEMORY_DOMAIN)).clone();
        let name = match device {
            Device::Cpu | Device::Host(_) => "Memory: cpu/0".to_string(),
            Device::Gpu(i) => format!("Memory: gpu/{i}"),
        };
        push(Record::counter(name, domain, now));
    }
}

/// Notes `bytes` allocated on `device` (the engine's allocator calls it).
pub fn allocated(device: Device, bytes: usize) {
    change(device, bytes as i64);
}

/// Notes `bytes` released on `device`.
pub fn freed(device: Device, bytes: usize) {
    change(device, -(bytes as i64));
}

/// Bytes of arrays the engine has allocated on `device` and not yet released.
pub fn bytes_in_use(device: Device) -> i64 {
    IN_USE[slot(device)].load(Ordering::Relaxed)
}
