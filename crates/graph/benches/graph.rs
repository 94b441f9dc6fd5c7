//! The graph layer's performance targets, side by side in one run:
//!
//! - executor overhead: a chain of 100 one-element sigmoids, per node;
//! - MLP 784-256-256-10, batch 64, float32, forward+backward: a bound
//!   executor, a cached graph under autograd (what `hybridize()` runs), and
//!   the same model through imperative autograd.
//!
//! `cargo bench -p oxnet-graph --bench graph` prints the figures;
//! `bench/graph.py` compares the MLP with PyTorch and MXNet 1.9.1.

use criterion::{criterion_group, criterion_main, Criterion};
use oxnet_core::{autograd, invoke1, DType, Device, NDArray, Req};
use oxnet_graph::{simple_bind, CachedGraph, GradReqs, Symbol};
use std::collections::HashMap;
use std::hint::black_box;

fn chain(n: usize) -> Symbol {
    let mut s = Symbol::var("x");
    for i in 0..n {
        s = Symbol::op("sigmoid", &[&s], &[], Some(&format!("s{i}"))).unwrap();
    }
    s
}

fn mlp() -> Symbol {
    let mut h = Symbol::var("data");
    for (i, n) in [256usize, 256, 10].iter().enumerate() {
        h = Symbol::op("FullyConnected", &[&h], &[("num_hidden", (*n).into())], Some(&format!("fc{i}")))
            .unwrap();
        if i < 2 {
            h = Symbol::op("Activation", &[&h], &[("act_type", "relu".into())], Some(&format!("relu{i}")))
                .unwrap();
        }
    }
    Symbol::op("log_softmax", &[&h], &[], Some("out")).unwrap()
}

fn executor_overhead(c: &mut Criterion) {
    let shapes = HashMap::from([("x".to_string(), vec![1])]);
    let mut exe =
        simple_bind(&chain(100), Device::Cpu, &GradReqs::All(Req::Null), &HashMap::new(), &shapes).unwrap();
    c.bench_function("executor/chain100_sigmoid_forward", |b| {
        b.iter(|| black_box(exe.forward(false).unwrap().len()))
    });
    let x = NDArray::zeros(&[1], DType::F32, Device::Cpu).unwrap();
    c.bench_function("eager/chain100_sigmoid", |b| {
        b.iter(|| {
            let mut y = x.clone();
            for _ in 0..100 {
                y = invoke1("sigmoid", &[&y], &[]).unwrap();
            }
            black_box(y)
        })
    });
}

fn mlp_params() -> Vec<NDArray> {
    let shapes =
        [vec![64, 784], vec![256, 784], vec![256], vec![256, 256], vec![256], vec![10, 256], vec![10]];
    shapes.iter().map(|s| NDArray::random_uniform(-0.05, 0.05, s, DType::F32).unwrap()).collect()
}

fn mlp_bench(c: &mut Criterion) {
    let sym = mlp();
    let params = mlp_params();
    let names = sym.list_arguments().unwrap();
    let shapes: HashMap<String, Vec<usize>> =
        names.iter().cloned().zip(params.iter().map(|p| p.shape().to_vec())).collect();
    // the data batch wants no gradient (as in the imperative version)
    let reqs: HashMap<String, Req> = names.iter().skip(1).map(|n| (n.clone(), Req::Write)).collect();
    let mut exe = simple_bind(&sym, Device::Cpu, &GradReqs::ByName(reqs), &HashMap::new(), &shapes).unwrap();
    for (dst, src) in exe.arg_arrays().iter().zip(&params) {
        dst.assign_from(src).unwrap();
    }
    let mut group = c.benchmark_group("mlp_784_256_256_10_b64_fwd_bwd");
    group.sample_size(30);
    group.bench_function("executor", |b| {
        b.iter(|| {
            exe.forward(true).unwrap();
            exe.backward(&[]).unwrap();
        })
    });

    let cached = CachedGraph::new(&sym).unwrap();
    let vars: Vec<NDArray> = params.iter().map(|p| p.copy().unwrap()).collect();
    for v in &vars[1..] {
        v.attach_grad(Req::Write).unwrap();
    }
    group.bench_function("cached_graph_autograd", |b| {
        b.iter(|| {
            let y = {
                let _rec = autograd::record();
                let refs: Vec<&NDArray> = vars.iter().collect();
                cached.call(&refs).unwrap().remove(0)
            };
            y.backward().unwrap();
        })
    });

    let imp: Vec<NDArray> = params.iter().map(|p| p.copy().unwrap()).collect();
    for v in &imp[1..] {
        v.attach_grad(Req::Write).unwrap();
    }
    group.bench_function("imperative_autograd", |b| {
        b.iter(|| {
            let y = {
                let _rec = autograd::record();
                let mut h = imp[0].clone();
                for i in 0..3 {
                    let n: usize = [256, 256, 10][i];
                    h = invoke1(
                        "FullyConnected",
                        &[&h, &imp[1 + 2 * i], &imp[2 + 2 * i]],
                        &[("num_hidden", n.into())],
                    )
                    .unwrap();
                    if i < 2 {
                        h = invoke1("Activation", &[&h], &[("act_type", "relu".into())]).unwrap();
                    }
                }
                invoke1("log_softmax", &[&h], &[]).unwrap()
            };
            y.backward().unwrap();
        })
    });

    // the floor: the model's matrix products alone (forward, weight and data
    // gradients), into preallocated outputs
    let fc = oxnet_core::registry::get("FullyConnected").unwrap();
    let dot = oxnet_core::registry::get("dot").unwrap();
    let fc_attrs: Vec<oxnet_core::Attrs> =
        [256usize, 256, 10].iter().map(|n| fc.parse_attrs(&[("num_hidden", (*n).into())]).unwrap()).collect();
    let dot_ta = dot.parse_attrs(&[("transpose_a", true.into())]).unwrap();
    let dot_plain = dot.parse_attrs(&[]).unwrap();
    let acts: Vec<NDArray> = [784usize, 256, 256, 10]
        .iter()
        .map(|n| NDArray::random_uniform(-1.0, 1.0, &[64, *n], DType::F32).unwrap())
        .collect();
    let wgrads: Vec<NDArray> = (0..3).map(|i| NDArray::zeros_like(&params[1 + 2 * i]).unwrap()).collect();
    let dgrads: Vec<NDArray> = (1..3).map(|i| NDArray::zeros_like(&acts[i]).unwrap()).collect();
    group.bench_function("matmuls_only", |b| {
        b.iter(|| {
            let w = Req::Write;
            for i in 0..3 {
                let ins = [&acts[i], &params[1 + 2 * i], &params[2 + 2 * i]];
                oxnet_core::invoke_into(&fc, &ins, &fc_attrs[i], &[acts[i + 1].clone()], &[w]).unwrap();
                oxnet_core::invoke_into(&dot, &[&acts[i + 1], &acts[i]], &dot_ta, &[wgrads[i].clone()], &[w])
                    .unwrap();
            }
            for i in 1..3 {
                oxnet_core::invoke_into(
                    &dot,
                    &[&acts[i + 1], &params[1 + 2 * i]],
                    &dot_plain,
                    &[dgrads[i - 1].clone()],
                    &[w],
                )
                .unwrap();
            }
        })
    });
    group.finish();
}

criterion_group!(benches, executor_overhead, mlp_bench);
criterion_main!(benches);
