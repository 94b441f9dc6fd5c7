//! One operator source, two ways in: `examples/extensions/cpp/reference_style/gemm_lib.cc`
//! (written against MXNet 1.9's API) compiled against oxnet's `lib_api.h`
//! (oxnet's ABI, through the C++ SDK) and against MXNet 1.9.1's own
//! `lib_api.h` + `lib_api.cc` (an ABI-11 library, through the host's
//! adapter). Same kernels, same compiler flags: the difference is the path
//! of a call. `ref_copy` on 1 element (call overhead) and 512x512 float32,
//! `ref_gemm` on 1x1 matrices.
//!
//! Needs MXNet's SDK (`python3 scripts/fetch_mxnet_sdk.py`); without it the
//! benchmark says so and measures nothing.
//!
//! `cargo bench -p oxnet-library --bench mxnet_library`

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use oxnet_core::{invoke_op, registry, DType, NDArray};
use std::hint::black_box;
use std::path::PathBuf;

/// Compiles the reference source; `mxnet` picks MXNet's SDK, otherwise
/// oxnet's header with the operators renamed (`ox_...`) so both can load.
fn build(mxnet: Option<&common::MxnetSdk>) -> PathBuf {
    let root = common::repo_root();
    let source = root.join("examples/extensions/cpp/reference_style/gemm_lib.cc");
    match mxnet {
        // The source says `#include "lib_api.h"`, as MXNet's examples do.
        Some(sdk) => {
            let flags = [
                "-std=c++11".to_string(),
                format!("-I{}", sdk.include.join("mxnet").display()),
                format!("-I{}", sdk.include.display()),
            ];
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            common::build_native("g++", &flags, &[source, sdk.lib_api_cc.clone()], "ref_gemm_mxnet")
        }
        None => {
            let include = format!("-I{}", root.join("include/oxnet").display());
            let renames =
                ["-Dref_gemm=ox_ref_gemm", "-Dref_copy=ox_ref_copy", "-Dref_state_gemm=ox_ref_state_gemm"];
            let flags: Vec<&str> = ["-std=c++17", include.as_str()].into_iter().chain(renames).collect();
            common::build_native("g++", &flags, &[source], "ref_gemm_oxnet")
        }
    }
}

fn oxnet_abi_vs_mxnet_abi(c: &mut Criterion) {
    let Some(sdk) = common::mxnet_sdk() else {
        common::skip_without_mxnet("mxnet_library benchmark");
        return;
    };
    oxnet_library::load(build(None), false).unwrap();
    oxnet_library::load(build(Some(&sdk)), false).unwrap();
    let cases: [(&str, &str, Vec<Vec<usize>>); 3] = [
        ("copy_1_element", "ref_copy", vec![vec![1]]),
        ("copy_512x512", "ref_copy", vec![vec![512, 512]]),
        ("gemm_1x1", "ref_gemm", vec![vec![1, 1], vec![1, 1]]),
    ];
    for (label, op, shapes) in cases {
        let ours = registry::get(&format!("ox_{op}")).unwrap();
        let theirs = registry::get(op).unwrap();
        let (ours_attrs, theirs_attrs) = (ours.parse_attrs(&[]).unwrap(), theirs.parse_attrs(&[]).unwrap());
        let xs: Vec<NDArray> =
            shapes.iter().map(|s| NDArray::random_uniform(-1.0, 1.0, s, DType::F32).unwrap()).collect();
        let refs: Vec<&NDArray> = xs.iter().collect();
        let a = invoke_op(&ours, &refs, &ours_attrs).unwrap().remove(0);
        let b = invoke_op(&theirs, &refs, &theirs_attrs).unwrap().remove(0);
        assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        let mut g = c.benchmark_group(label);
        g.bench_function("oxnet_abi", |bch| {
            bch.iter(|| invoke_op(&ours, black_box(&refs), &ours_attrs).unwrap())
        });
        g.bench_function("mxnet_abi_11", |bch| {
            bch.iter(|| invoke_op(&theirs, black_box(&refs), &theirs_attrs).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, oxnet_abi_vs_mxnet_abi);
criterion_main!(benches);
