//! A loaded library operator against a Rust custom operator with the same
//! kernel (relu, storing under the output's request), on 1 element and on
//! 512×512 float32; both called through the registry with pre-parsed
//! attributes (`invoke_op`), as the engine's own benchmark calls the `Custom`
//! op. The library is `examples/extensions/rust/my_relu`, built in release.
//!
//! `cargo bench -p oxnet-library --bench loaded_op`

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use oxnet_core::custom::{self, CustomOp, CustomOpProp};
use oxnet_core::{invoke_op, registry, DType, Device, NDArray, Req, Result, Shape};
use std::hint::black_box;
use std::sync::Arc;

/// The kernel of `my_relu`, as a Rust custom operator.
struct RustRelu;
impl CustomOp for RustRelu {
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
        for (y, &x) in y.iter_mut().zip(x) {
            let v = if x > 0.0 { x } else { 0.0 };
            match req[0] {
                Req::Null => {}
                Req::Add => *y += v,
                _ => *y = v,
            }
        }
        Ok(())
    }
}
struct RustReluProp;
impl CustomOpProp for RustReluProp {
    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(RustRelu))
    }
}

fn loaded_vs_custom(c: &mut Criterion) {
    oxnet_library::load(common::build_rust_example("my_relu"), false).unwrap();
    custom::register("bench_relu", |_| Ok(Arc::new(RustReluProp)));
    let loaded = registry::get("my_relu").unwrap();
    let loaded_attrs = loaded.parse_attrs(&[]).unwrap();
    let custom_op = registry::get("Custom").unwrap();
    let custom_attrs = custom_op.parse_attrs(&[("op_type", "bench_relu".into())]).unwrap();
    for (label, shape) in [("1_element", vec![1usize]), ("512x512", vec![512, 512])] {
        let x = NDArray::random_uniform(-1.0, 1.0, &shape, DType::F32).unwrap();
        let a = invoke_op(&loaded, &[&x], &loaded_attrs).unwrap().remove(0);
        let b = invoke_op(&custom_op, &[&x], &custom_attrs).unwrap().remove(0);
        assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        let mut g = c.benchmark_group(format!("relu_{label}"));
        g.bench_function("rust_custom_op", |bch| {
            bch.iter(|| invoke_op(&custom_op, &[black_box(&x)], &custom_attrs).unwrap())
        });
        g.bench_function("loaded_library_op", |bch| {
            bch.iter(|| invoke_op(&loaded, &[black_box(&x)], &loaded_attrs).unwrap())
        });
        g.bench_function("rust_custom_op_by_name", |bch| {
            bch.iter(|| {
                oxnet_core::invoke("Custom", &[black_box(&x)], &[("op_type", "bench_relu".into())]).unwrap()
            })
        });
        g.bench_function("loaded_library_op_by_name", |bch| {
            bch.iter(|| oxnet_core::invoke("my_relu", &[black_box(&x)], &[]).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, loaded_vs_custom);
criterion_main!(benches);
