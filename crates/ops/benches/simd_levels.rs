//! The vectorised loops at each SIMD level the CPU supports (plain,
//! AVX2+FMA, AVX-512), on one thread:
//!
//! - exp, tanh, sigmoid and erf on 1M float32 (`simd_math`);
//! - `sum` of 16M float32 (the reduction engine, accumulating in float64);
//! - `adam_update` of 1M float32 parameters, in place.
//!
//! `cargo bench -p oxnet-ops --bench simd_levels` prints one criterion
//! figure per function and level (elements per second as throughput); the
//! level is switched with `simd_math::set_simd_level`, which gives the same
//! bits at every level, so only the time changes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use oxnet_core::parallel::on_this_thread;
use oxnet_core::{invoke_into, registry, DType, Device, NDArray, Req};
use oxnet_ops::kernels::simd_math::{self, SimdLevel};
use std::hint::black_box;

/// The levels this CPU supports, lowest first.
fn levels() -> Vec<SimdLevel> {
    SimdLevel::ALL.into_iter().filter(|l| l.is_supported()).collect()
}

fn maths(c: &mut Criterion) {
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 20.0 - 10.0).collect();
    let mut out = vec![0.0f32; n];
    let fns: [(&str, fn(&[f32], &mut [f32])); 4] = [
        ("exp", simd_math::exp_f32),
        ("tanh", simd_math::tanh_f32),
        ("sigmoid", simd_math::sigmoid_f32),
        ("erf", simd_math::erf_f32),
    ];
    for (name, f) in fns {
        let mut g = c.benchmark_group(format!("{name}_1m_f32"));
        g.throughput(Throughput::Elements(n as u64));
        for level in levels() {
            simd_math::set_simd_level(level);
            g.bench_function(BenchmarkId::from_parameter(level), |b| {
                b.iter(|| on_this_thread(|| f(black_box(&x), &mut out)))
            });
        }
        g.finish();
    }
}

fn sum(c: &mut Criterion) {
    let n = 16 << 20;
    let x = NDArray::random_uniform(-1.0, 1.0, &[n], DType::F32).unwrap();
    let out = NDArray::zeros(&[1], DType::F32, Device::Cpu).unwrap();
    let op = registry::get("sum").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    let mut g = c.benchmark_group("sum_16m_f32");
    g.throughput(Throughput::Elements(n as u64));
    for level in levels() {
        simd_math::set_simd_level(level);
        g.bench_function(BenchmarkId::from_parameter(level), |b| {
            b.iter(|| {
                on_this_thread(|| {
                    invoke_into(&op, &[black_box(&x)], &attrs, std::slice::from_ref(&out), &[Req::Write])
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

fn adam(c: &mut Criterion) {
    let n = 1 << 20;
    let weight = NDArray::random_uniform(-1.0, 1.0, &[n], DType::F32).unwrap();
    let grad = NDArray::random_uniform(-1.0, 1.0, &[n], DType::F32).unwrap();
    let mean = NDArray::zeros(&[n], DType::F32, Device::Cpu).unwrap();
    let var = NDArray::zeros(&[n], DType::F32, Device::Cpu).unwrap();
    let op = registry::get("adam_update").unwrap();
    let attrs =
        op.parse_attrs(&[("lr", 1e-6.into()), ("wd", 1e-4.into()), ("clip_gradient", 5.0.into())]).unwrap();
    let mut g = c.benchmark_group("adam_update_1m_f32");
    g.throughput(Throughput::Elements(n as u64));
    for level in levels() {
        simd_math::set_simd_level(level);
        g.bench_function(BenchmarkId::from_parameter(level), |b| {
            b.iter(|| {
                on_this_thread(|| {
                    invoke_into(
                        &op,
                        &[&weight, &grad, &mean, &var],
                        &attrs,
                        std::slice::from_ref(&weight),
                        &[Req::Write],
                    )
                    .unwrap()
                })
            })
        });
    }
    g.finish();
}

/// All groups, the level put back as it was afterwards.
fn all(c: &mut Criterion) {
    let before = simd_math::simd_level();
    maths(c);
    sum(c);
    adam(c);
    simd_math::set_simd_level(before);
}

criterion_group!(benches, all);
criterion_main!(benches);
