//! oxnet's performance targets, measured side by side in one run:
//!
//! - dispatch of a built-in op and of a Rust custom op on 1 element;
//! - sigmoid forward on 1M float32 against a plain copy of the same bytes;
//! - float32 1024×1024 matmul through `dot` against the `gemm` crate directly;
//! - sigmoid forward+backward on 1 element under autograd recording;
//! - an SGD momentum update over the 269,322 float32 parameters of the
//!   MLP 784-256-256-10, in place (memory-bound), on one thread and on all.
//!
//! `cargo bench -p oxnet-ops --bench engine` prints the figures;
//! `python3 scripts/bench_report.py` then prints the figures as ratios next to
//! their targets.

use criterion::{criterion_group, criterion_main, Criterion};
use oxnet_core::custom::{self, CustomOp, CustomOpProp};
use oxnet_core::{autograd, invoke_into, invoke_op, registry, DType, Device, NDArray, Req, Result, Shape};
use std::hint::black_box;
use std::sync::Arc;

/// The same sigmoid as the built-in, as a Rust custom operator.
struct CustomSigmoid;
impl CustomOp for CustomSigmoid {
    fn forward(
        &self,
        _t: bool,
        req: &[Req],
        ins: &[NDArray],
        outs: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        let x = ins[0].as_slice::<f32>()?;
        let y = outs[0].as_mut_slice::<f32>()?;
        debug_assert!(req[0] != Req::Add);
        oxnet_ops::kernels::simd_math::sigmoid_f32(x, y);
        Ok(())
    }
}
struct CustomSigmoidProp;
impl CustomOpProp for CustomSigmoidProp {
    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(CustomSigmoid))
    }
}

fn dispatch(c: &mut Criterion) {
    custom::register("bench_sigmoid", |_| Ok(Arc::new(CustomSigmoidProp)));
    let x = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    let sigmoid = registry::get("sigmoid").unwrap();
    let no_attrs = sigmoid.parse_attrs(&[]).unwrap();
    let custom_op = registry::get("Custom").unwrap();
    let custom_attrs = custom_op.parse_attrs(&[("op_type", "bench_sigmoid".into())]).unwrap();
    let mut g = c.benchmark_group("dispatch_1_element");
    g.bench_function("builtin_sigmoid", |b| {
        b.iter(|| invoke_op(&sigmoid, &[black_box(&x)], &no_attrs).unwrap())
    });
    g.bench_function("custom_sigmoid", |b| {
        b.iter(|| invoke_op(&custom_op, &[black_box(&x)], &custom_attrs).unwrap())
    });
    g.bench_function("builtin_sigmoid_by_name", |b| {
        b.iter(|| oxnet_core::invoke("sigmoid", &[black_box(&x)], &[]).unwrap())
    });
    g.finish();
}

fn sigmoid_1m(c: &mut Criterion) {
    let n = 1 << 20;
    let x = NDArray::random_uniform(-4.0, 4.0, &[n], DType::F32).unwrap();
    let out = NDArray::zeros(&[n], DType::F32, Device::Cpu).unwrap();
    let sigmoid = registry::get("sigmoid").unwrap();
    let attrs = sigmoid.parse_attrs(&[]).unwrap();
    let src = x.as_slice::<f32>().unwrap().to_vec();
    let mut dst = vec![0.0f32; n];
    let mut g = c.benchmark_group("sigmoid_1M_f32");
    g.bench_function("copy_same_bytes", |b| b.iter(|| dst.copy_from_slice(black_box(&src))));
    g.bench_function("sigmoid_into_buffer", |b| {
        b.iter(|| {
            invoke_into(&sigmoid, &[black_box(&x)], &attrs, std::slice::from_ref(&out), &[Req::Write])
                .unwrap()
        })
    });
    g.bench_function("sigmoid_new_output", |b| {
        b.iter(|| invoke_op(&sigmoid, &[black_box(&x)], &attrs).unwrap())
    });
    g.finish();
}

fn matmul_1024(c: &mut Criterion) {
    let n = 1024;
    let a = NDArray::random_uniform(-1.0, 1.0, &[n, n], DType::F32).unwrap();
    let b = NDArray::random_uniform(-1.0, 1.0, &[n, n], DType::F32).unwrap();
    let out = NDArray::zeros(&[n, n], DType::F32, Device::Cpu).unwrap();
    let dot = registry::get("dot").unwrap();
    let attrs = dot.parse_attrs(&[]).unwrap();
    let (ap, bp) = (a.as_slice::<f32>().unwrap().to_vec(), b.as_slice::<f32>().unwrap().to_vec());
    let mut cp = vec![0.0f32; n * n];
    let mut g = c.benchmark_group("matmul_1024_f32");
    g.sample_size(20);
    g.bench_function("gemm_crate_direct", |bch| {
        bch.iter(|| unsafe {
            gemm::gemm(
                n,
                n,
                n,
                cp.as_mut_ptr(),
                1,
                n as isize,
                false,
                ap.as_ptr(),
                1,
                n as isize,
                bp.as_ptr(),
                1,
                n as isize,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                gemm::Parallelism::Rayon(0),
            )
        })
    });
    g.bench_function("oxnet_dot", |bch| {
        bch.iter(|| invoke_into(&dot, &[&a, &b], &attrs, std::slice::from_ref(&out), &[Req::Write]).unwrap())
    });
    g.finish();
}

fn sigmoid_record(c: &mut Criterion) {
    let x = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let sigmoid = registry::get("sigmoid").unwrap();
    let attrs = sigmoid.parse_attrs(&[]).unwrap();
    c.bench_function("sigmoid_fwd_bwd_recorded_1_element", |b| {
        b.iter(|| {
            let y = {
                let _r = autograd::record();
                invoke_op(&sigmoid, &[&x], &attrs).unwrap().remove(0)
            };
            y.backward().unwrap();
        })
    });
}

fn sgd_mom_update(c: &mut Criterion) {
    let n = 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10;
    let weight = NDArray::random_uniform(-1.0, 1.0, &[n], DType::F32).unwrap();
    let grad = NDArray::random_uniform(-1.0, 1.0, &[n], DType::F32).unwrap();
    let mom = NDArray::zeros(&[n], DType::F32, Device::Cpu).unwrap();
    let op = registry::get("sgd_mom_update").unwrap();
    let attrs = op.parse_attrs(&[("lr", 1e-6.into()), ("momentum", 0.9.into())]).unwrap();
    let mut g = c.benchmark_group("sgd_mom_update_mlp_f32");
    let update = || {
        invoke_into(&op, &[&weight, &grad, &mom], &attrs, std::slice::from_ref(&weight), &[Req::Write])
            .unwrap()
    };
    g.bench_function("all_threads", |b| b.iter(update));
    g.bench_function("one_thread", |b| b.iter(|| oxnet_core::parallel::on_this_thread(update)));
    g.finish();
}

criterion_group!(benches, dispatch, sigmoid_1m, matmul_1024, sigmoid_record, sgd_mom_update);
criterion_main!(benches);
