//! The profiler's cost per operator call, side by side in one run:
//!
//! - a built-in op on 1 element with the profiler stopped, and running
//!   (operator events and memory counters: one span and two counter values
//!   per call); the difference is what recording adds (target: at most 1 µs);
//! - the hooks alone while stopped (what every call pays when nobody
//!   profiles: target, nothing measurable next to the call itself).
//!
//! `cargo bench -p oxnet-ops --bench profiler`.

use criterion::{criterion_group, criterion_main, Criterion};
use oxnet_core::profiler::{self, Config, State};
use oxnet_core::{invoke_op, registry, Device, NDArray};
use oxnet_ops as _; // the built-in operators this bench calls
use std::hint::black_box;
use std::time::{Duration, Instant};

fn calls(c: &mut Criterion) {
    let x = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    let sigmoid = registry::get("sigmoid").unwrap();
    let attrs = sigmoid.parse_attrs(&[]).unwrap();
    let dir = std::env::temp_dir().join("oxnet-bench-profiler.json");
    profiler::set_config(Config { filename: dir.to_string_lossy().into(), ..Config::default() }).unwrap();

    let mut g = c.benchmark_group("profiler_per_call");
    profiler::set_state(State::Stop);
    g.bench_function("sigmoid_1_element_profiler_stopped", |b| {
        b.iter(|| invoke_op(&sigmoid, &[black_box(&x)], &attrs).unwrap())
    });
    g.bench_function("sigmoid_1_element_profiler_running", |b| {
        b.iter_custom(|n| {
            profiler::set_state(State::Run);
            let t = Instant::now();
            for _ in 0..n {
                black_box(invoke_op(&sigmoid, &[black_box(&x)], &attrs).unwrap());
            }
            let spent = t.elapsed();
            profiler::set_state(State::Stop);
            profiler::clear(); // keep memory bounded between samples
            spent
        })
    });
    g.bench_function("hooks_alone_profiler_stopped", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                // what one call runs of the profiler when it is off: the op
                // span and the two memory notes (allocation, release)
                black_box(profiler::op_scope(black_box("sigmoid")));
                profiler::allocated(Device::Cpu, black_box(4));
                profiler::freed(Device::Cpu, black_box(4));
            }
            t.elapsed()
        })
    });
    g.finish();
    let _ = std::fs::remove_file(dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = calls
}
criterion_main!(benches);
