//! A Rust custom operator with its own CUDA kernel, as a user writes one:
//! `scaled_relu(x, alpha)` registered with a CPU kernel and a GPU kernel.
//! The GPU kernel gets the arrays' device pointers (`raw_ptr`) and launches
//! CUDA source compiled at run time (`oxnet_core::gpu::rtc::CudaModule`) on
//! the device's stream, so it is ordered with every built-in operator.
//!
//! It checks the GPU result and gradient-free forward against the CPU kernel,
//! then times one call on 1K float32 against the built-in `relu` (the
//! per-call overhead of a custom GPU operator), in the same run.
//!
//! ```text
//! cargo run --release -p oxnet-ops --features cuda --example gpu_custom_op
//! ```
//! Without a GPU it says so and exits.

// linked for its built-in operators (`relu`) and their GPU kernels
extern crate oxnet_ops;

use oxnet_core::gpu::{self, rtc::CudaModule, KernelArgs};
use oxnet_core::{invoke1, registry, AttrKind, AttrSpec, AttrValue, Device, NDArray, OpDef, Result};
use std::sync::Arc;
use std::time::Instant;

const SOURCE: &str = r#"
extern "C" __global__ void scaled_relu(const float* x, float* y, float alpha, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? alpha * x[i] : 0.f;
}
"#;

fn register(module: Arc<CudaModule>) {
    let alpha = || AttrSpec::optional("alpha", AttrKind::Float, 1.0, "the slope for positive inputs");
    registry::register(
        OpDef::new("rust_scaled_relu")
            .doc("alpha * max(x, 0), a custom operator with a CUDA kernel")
            .attr(alpha())
            .forward(|ctx, ins, outs| {
                let alpha = ctx.attrs.float("alpha")? as f32;
                let y: Vec<f32> =
                    ins[0].to_vec::<f32>()?.iter().map(|&v| if v > 0.0 { alpha * v } else { 0.0 }).collect();
                outs[0].assign_from(&NDArray::from_vec(y, ins[0].shape())?)
            })
            .forward_on(Device::Gpu(0), move |ctx, ins, outs| {
                let n = ins[0].size();
                let mut args = KernelArgs::new();
                args.push(ins[0].raw_ptr() as u64)
                    .push(outs[0].raw_ptr() as u64)
                    .push(ctx.attrs.float("alpha")? as f32)
                    .push(n as i64);
                let blocks = n.div_ceil(256).max(1) as u32;
                module.launch("scaled_relu", ctx.device, [blocks, 1, 1], [256, 1, 1], 0, &mut args)
            }),
    );
}

/// Seconds per call of `f`, the best of three rounds of `rounds` calls.
fn timed(rounds: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    gpu::synchronize_all()?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..rounds {
            f()?;
        }
        gpu::synchronize_all()?;
        best = best.min(t.elapsed().as_secs_f64() / rounds as f64);
    }
    Ok(best)
}

fn main() -> Result<()> {
    if gpu::num_gpus() == 0 {
        println!("no GPU (or a build without the `cuda` feature): nothing to run");
        return Ok(());
    }
    register(Arc::new(CudaModule::new(SOURCE, vec![], vec![])?));
    let values: Vec<f32> = (0..1024).map(|i| (i as f32 - 500.0) / 100.0).collect();
    let cpu = NDArray::from_vec(values, &[1024])?;
    let x = cpu.to_device(Device::Gpu(0))?;
    let alpha = [("alpha", AttrValue::Raw("2.5".into()))];
    let on_gpu = invoke1("rust_scaled_relu", &[&x], &alpha)?;
    let on_cpu = invoke1("rust_scaled_relu", &[&cpu], &alpha)?;
    assert_eq!(on_gpu.device(), Device::Gpu(0));
    assert_eq!(on_gpu.to_vec::<f32>()?, on_cpu.to_vec::<f32>()?, "the GPU kernel differs from the CPU one");
    let t_custom = timed(5000, || invoke1("rust_scaled_relu", &[&x], &alpha).map(|_| ()))?;
    let t_builtin = timed(5000, || invoke1("relu", &[&x], &[]).map(|_| ()))?;
    println!("{:34} {:10.1}us", "Rust custom op 1K (launch)", t_custom * 1e6);
    println!("{:34} {:10.1}us", "built-in relu 1K, same run", t_builtin * 1e6);
    println!("Rust custom op / built-in: {:.2}", t_custom / t_builtin);
    Ok(())
}
