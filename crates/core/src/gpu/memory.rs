//! Copies, conversions and fills of arrays where one side lives on a GPU:
//! the GPU branches of [`NDArray::assign_from`] and [`NDArray::fill`].

use super::driver;
use super::index::{ShapeParam, StridesParam};
use super::kernels::{assign_kernel, assign_name, fill_kernel, fill_name};
use super::KernelArgs;
use crate::{Device, Error, NDArray, Result};

/// `dst[...] = src` (broadcast, converted) where either array is on a GPU.
pub(crate) fn assign(dst: &NDArray, src: &NDArray) -> Result<()> {
    match (dst.device(), src.device()) {
        (Device::Gpu(d), Device::Gpu(s)) if d == s => assign_on_device(d, dst, src),
        (Device::Gpu(d), _) => assign_from_host(d, dst, &host_copy(src)?),
        (_, Device::Gpu(_)) => dst.assign_from(&host_copy(src)?),
        _ => dst.assign_from(src),
    }
}

/// A host array with `x`'s values (itself when already on the host).
fn host_copy(x: &NDArray) -> Result<NDArray> {
    let Device::Gpu(ordinal) = x.device() else { return Ok(x.clone()) };
    let dense = x.contiguous()?;
    let host = NDArray::empty(x.shape(), x.dtype(), Device::Cpu)?;
    let bytes = x.size() * x.dtype().size();
    // SAFETY: a fresh contiguous host buffer of `bytes` bytes.
    let dst = unsafe { std::slice::from_raw_parts_mut(host.raw_ptr(), bytes) };
    driver::copy_to_host(ordinal, dst, dense.raw_ptr() as u64)?;
    Ok(host)
}

/// Host `src` into `dst` on `gpu(ordinal)`.
fn assign_from_host(ordinal: usize, dst: &NDArray, src: &NDArray) -> Result<()> {
    // The host side first takes dst's shape and dtype in one dense buffer.
    let dense = if src.is_contiguous() && src.dtype() == dst.dtype() && src.shape() == dst.shape() {
        src.clone()
    } else {
        let t = NDArray::empty(dst.shape(), dst.dtype(), Device::Cpu)?;
        t.assign_from(src)?;
        t
    };
    let bytes = dense.size() * dense.dtype().size();
    // SAFETY: a dense host array of `bytes` bytes, alive for the call.
    let host = unsafe { std::slice::from_raw_parts(dense.raw_ptr() as *const u8, bytes) };
    if dst.is_contiguous() {
        return driver::copy_to_device(ordinal, dst.raw_ptr() as u64, host);
    }
    let staged = NDArray::empty(dst.shape(), dst.dtype(), dst.device())?;
    driver::copy_to_device(ordinal, staged.raw_ptr() as u64, host)?;
    assign_on_device(ordinal, dst, &staged)
}

/// Both arrays on `gpu(ordinal)`.
fn assign_on_device(ordinal: usize, dst: &NDArray, src: &NDArray) -> Result<()> {
    if dst.shares_storage(src) && !(dst.raw_ptr() == src.raw_ptr() && dst.strides() == src.strides()) {
        // overlapping views: through a temporary
        return assign_on_device(ordinal, dst, &src.copy()?);
    }
    if dst.dtype() == src.dtype() && dst.shape() == src.shape() && dst.is_contiguous() && src.is_contiguous()
    {
        let bytes = dst.size() * dst.dtype().size();
        if dst.raw_ptr() == src.raw_ptr() {
            return Ok(());
        }
        return driver::copy_on_device(ordinal, dst.raw_ptr() as u64, src.raw_ptr() as u64, bytes);
    }
    let shape = ShapeParam::new(dst.shape())?;
    let so = StridesParam::broadcast(dst.shape(), dst.strides(), dst.shape())?;
    let si = StridesParam::broadcast(src.shape(), src.strides(), dst.shape()).map_err(|_| {
        Error::Shape(format!(
            "cannot assign an array of shape {:?} to one of shape {:?}",
            src.shape(),
            dst.shape()
        ))
    })?;
    let (dt, st) = (dst.dtype(), src.dtype());
    let mut args = KernelArgs::new();
    args.push(shape).push(so).push(si).push(dst.raw_ptr() as u64).push(src.raw_ptr() as u64);
    let source = || assign_kernel(dt, st).map(|k| k.1);
    driver::launch(ordinal, &assign_name(dt, st), source, driver::grid_for(ordinal, dst.size())?, &mut args)
}

/// Sets every element of GPU array `dst` to `value`.
pub(crate) fn fill(dst: &NDArray, value: f64) -> Result<()> {
    let Device::Gpu(ordinal) = dst.device() else {
        return Err(Error::Device("gpu::fill takes a GPU array".into()));
    };
    let shape = ShapeParam::new(dst.shape())?;
    let so = StridesParam::broadcast(dst.shape(), dst.strides(), dst.shape())?;
    let dt = dst.dtype();
    let mut args = KernelArgs::new();
    args.push(shape).push(so).push(dst.raw_ptr() as u64).push(value);
    let source = || fill_kernel(dt).map(|k| k.1);
    driver::launch(ordinal, &fill_name(dt), source, driver::grid_for(ordinal, dst.size())?, &mut args)
}
