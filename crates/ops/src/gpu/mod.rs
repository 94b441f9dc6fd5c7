//! GPU kernels of the built-in operators (feature `cuda`): the element-wise
//! families, generated as CUDA C++ ([`source`]) and compiled with NVRTC on
//! first use. [`register`] adds a `Device::Gpu` kernel to each operator
//! already registered for the CPU, so shape and dtype inference, gradients
//! and graphs are the operator's own.

pub mod source;

use oxnet_core::gpu::{self, KernelArgs, ShapeParam, StridesParam};
use oxnet_core::{registry, DType, Device, Error, NDArray, OpContext, Req, Result};
use source::{BinaryEntry, UnaryEntry, BINARY, DTYPES, UNARY};

/// The ordinal of the GPU a kernel runs on.
fn ordinal(ctx: &OpContext) -> Result<usize> {
    match ctx.device {
        Device::Gpu(i) => Ok(i),
        Device::Cpu => Err(Error::Device(format!("`{}`'s GPU kernel was called for the CPU", ctx.op_name))),
    }
}

/// Errors for a dtype the operator's GPU kernel does not take.
fn check_dtype(ctx: &OpContext, dtype: DType, ints: bool) -> Result<()> {
    let float = matches!(dtype, DType::F32 | DType::F64);
    if DTYPES.contains(&dtype) && (float || ints) {
        return Ok(());
    }
    Err(Error::DType(format!("`{}` has no GPU kernel for {dtype} arrays", ctx.op_name)))
}

/// The request as the kernels' `add` flag; `None` for `Req::Null`.
fn add_flag(req: Req) -> Option<i32> {
    match req {
        Req::Null => None,
        Req::Add => Some(1),
        Req::Write | Req::Inplace => Some(0),
    }
}

fn address(x: &NDArray) -> u64 {
    x.raw_ptr() as u64
}

fn unary(e: &'static UnaryEntry, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (x, y) = (&ins[0], &outs[0]);
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, x.dtype(), e.ints)?;
    let dev = ordinal(ctx)?;
    let (name, src) = source::unary_kernel(e, x.dtype())?;
    let mut args = KernelArgs::new();
    args.push(x.size() as i64).push(address(x)).push(address(y)).push(add);
    gpu::launch(dev, &src, &name, gpu::grid_for(dev, x.size().div_ceil(source::UNROLL))?, &mut args)
}

fn binary(e: &'static BinaryEntry, ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (a, b, o) = (&ins[0], &ins[1], &outs[0]);
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, o.dtype(), true)?;
    let dev = ordinal(ctx)?;
    let shape = ShapeParam::new(o.shape())?;
    let sa = StridesParam::broadcast(a.shape(), a.strides(), o.shape())?;
    let sb = StridesParam::broadcast(b.shape(), b.strides(), o.shape())?;
    let flat = (a.shape() == o.shape() && b.shape() == o.shape()) as i32;
    let (name, src) = source::binary_kernel(e, o.dtype())?;
    let mut args = KernelArgs::new();
    args.push(shape)
        .push(sa)
        .push(sb)
        .push(address(a))
        .push(address(b))
        .push(address(o))
        .push(add)
        .push(flat);
    gpu::launch(dev, &src, &name, gpu::grid_for(dev, o.size().div_ceil(source::UNROLL))?, &mut args)
}

fn scalar(
    e: &'static BinaryEntry,
    reversed: bool,
    ctx: &OpContext,
    ins: &[NDArray],
    outs: &[NDArray],
) -> Result<()> {
    let (x, y) = (&ins[0], &outs[0]);
    let Some(add) = add_flag(ctx.req[0]) else { return Ok(()) };
    check_dtype(ctx, x.dtype(), true)?;
    let dev = ordinal(ctx)?;
    let s = ctx.attrs.float("scalar")?;
    let (name, src) = source::scalar_kernel(e, reversed, x.dtype())?;
    let mut args = KernelArgs::new();
    args.push(x.size() as i64).push(address(x)).push(address(y)).push(s).push(add);
    gpu::launch(dev, &src, &name, gpu::grid_for(dev, x.size().div_ceil(source::UNROLL))?, &mut args)
}

/// Adds `kernel` as the GPU kernel of the registered operator `name`.
fn add_kernel(
    name: &str,
    kernel: impl Fn(&OpContext, &[NDArray], &[NDArray]) -> Result<()> + Send + Sync + 'static,
) {
    match registry::get(name) {
        Ok(op) => {
            registry::register((*op).clone().forward_on(Device::Gpu(0), kernel));
        }
        Err(_) => eprintln!("oxnet warning: no operator `{name}` to give a GPU kernel"),
    }
}

/// Gives the element-wise operators their GPU kernels (after the CPU
/// registrations, which it extends).
pub(crate) fn register() {
    for e in UNARY {
        add_kernel(e.op, move |ctx, ins, outs| unary(e, ctx, ins, outs));
    }
    for e in BINARY {
        add_kernel(e.broadcast, move |ctx, ins, outs| binary(e, ctx, ins, outs));
        add_kernel(e.same_shape, move |ctx, ins, outs| binary(e, ctx, ins, outs));
        add_kernel(e.scalar, move |ctx, ins, outs| scalar(e, false, ctx, ins, outs));
        if let Some(r) = e.reversed {
            add_kernel(r, move |ctx, ins, outs| scalar(e, true, ctx, ins, outs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::source::{catalog, BINARY, UNARY};
    use oxnet_core::{registry, Device};

    /// Every operator in the tables exists and has its GPU kernel.
    #[test]
    fn every_table_entry_has_a_gpu_kernel() {
        let mut names: Vec<&str> = UNARY.iter().map(|e| e.op).collect();
        for e in BINARY {
            names.extend([e.broadcast, e.same_shape, e.scalar]);
            names.extend(e.reversed);
        }
        for n in names {
            let op = registry::get(n).unwrap_or_else(|_| panic!("no operator {n}"));
            assert!(op.kernel_for(Device::Gpu(0)).is_ok(), "{n} has no GPU kernel");
            assert!(op.kernel_for(Device::Cpu).is_ok(), "{n} lost its CPU kernel");
        }
    }

    /// Every generated kernel compiles with NVRTC for sm_80 and sm_90
    /// (Ampere, Hopper). NVRTC needs no GPU; where it cannot be loaded the
    /// check says so, and fails when `OXNET_REQUIRE_NVRTC=1` (the test
    /// script sets it after installing NVRTC's wheel).
    #[test]
    fn every_generated_kernel_compiles_with_nvrtc() {
        if !oxnet_core::gpu::nvrtc_available() {
            assert!(
                std::env::var("OXNET_REQUIRE_NVRTC").as_deref() != Ok("1"),
                "OXNET_REQUIRE_NVRTC=1 but NVRTC cannot be loaded (put nvidia-cuda-nvrtc's lib folder on LD_LIBRARY_PATH)"
            );
            eprintln!("skipped: NVRTC (libnvrtc.so.13/.12) cannot be loaded here");
            return;
        }
        let mut kernels = catalog().unwrap();
        kernels.extend(oxnet_core::gpu::catalog().unwrap());
        let mut names = std::collections::HashSet::new();
        for (name, _) in &kernels {
            assert!(names.insert(name.clone()), "two kernels are named {name}");
        }
        // NVRTC is thread-safe: split the work over the cores
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = kernels.len().div_ceil(threads);
        std::thread::scope(|s| {
            for part in kernels.chunks(chunk) {
                s.spawn(move || {
                    for (name, src) in part {
                        for arch in ["sm_80", "sm_90"] {
                            let image =
                                oxnet_core::gpu::compile(src, name, arch).unwrap_or_else(|e| panic!("{e}"));
                            assert!(!image.is_empty());
                        }
                    }
                });
            }
        });
        assert!(kernels.len() > 300, "{} kernels", kernels.len());
    }
}
