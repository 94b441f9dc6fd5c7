//! The ordering operators on one line of 1M float32 (uniform in [0, 1),
//! so equal values occur, as in real data): `sort`, `argsort`, and `topk`
//! of the 10 largest values, each through the operator registry as a user
//! calls them.
//!
//! `cargo bench -p oxnet-ops --bench ordering`; the side-by-side figures
//! against numpy, MXNet and PyTorch are bench/operators.py's.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use oxnet_core::{invoke, AttrValue, NDArray};
use oxnet_ops as _; // the built-in operators this bench calls
use std::hint::black_box;

/// `n` pseudo-random float32 values in [0, 1) from a fixed-seed generator.
fn uniform(n: usize) -> Vec<f32> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn ordering(c: &mut Criterion) {
    let n = 1 << 20;
    let x = NDArray::from_vec(uniform(n), &[n]).unwrap();
    let mut g = c.benchmark_group("ordering_1m_f32");
    g.throughput(Throughput::Elements(n as u64));
    let calls: [(&str, &str, Vec<(&str, AttrValue)>); 4] = [
        ("sort", "sort", vec![]),
        ("argsort", "argsort", vec![]),
        ("argsort_int32", "argsort", vec![("dtype", "int32".into())]),
        ("topk_10", "topk", vec![("k", 10i64.into()), ("ret_typ", "value".into())]),
    ];
    for (label, op, attrs) in calls {
        g.bench_function(label, |b| b.iter(|| black_box(invoke(op, &[&x], &attrs).unwrap())));
    }
    g.finish();
}

criterion_group!(benches, ordering);
criterion_main!(benches);
