//! A library source written for MXNet 1.9's library API
//! (`examples/extensions/cpp/reference_style/gemm_lib.cc`, which includes
//! "lib_api.h") builds against oxnet's header with no change but the include
//! path, loads, and computes what the built-in `dot` computes. When
//! MXNet 1.9.1's header is found (`common::mxnet_sdk`: `target/mxnet-sdk`
//! from `scripts/fetch_mxnet_sdk.py`, `.venv-mxnet`, `MXNET_SDK` or
//! `MXNET_INCLUDE`), the same source is also checked against MXNet's own
//! header.

mod common;

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, NDArray, Req};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn source() -> PathBuf {
    common::repo_root().join("examples/extensions/cpp/reference_style/gemm_lib.cc")
}

fn library() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = common::out_dir().join("native").join(format!("libref_gemm_lib.{}.so", std::process::id()));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let status = Command::new("g++")
            .args(["-std=c++17", "-shared", "-fPIC", "-O2", "-Wall", "-I"])
            .arg(common::repo_root().join("include/oxnet"))
            .arg(source())
            .arg("-o")
            .arg(&out)
            .status()
            .expect("run g++");
        assert!(status.success(), "the reference-style source did not build against oxnet's header");
        let lib = oxnet_library::load(&out, false).expect("load the reference-style library");
        assert_eq!(lib.op_names(), ["ref_gemm", "ref_copy", "ref_state_gemm"]);
        out
    })
    .clone()
}

fn matrix(rows: usize, cols: usize, seed: f32) -> NDArray {
    let v: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37 + seed).sin() * 2.0).collect();
    NDArray::from_vec(v, &[rows, cols]).unwrap()
}

#[test]
fn reference_source_matches_dot_forward_and_backward() {
    library();
    let (a, b) = (matrix(3, 4, 0.1), matrix(4, 2, 0.7));
    for op in ["ref_gemm", "ref_state_gemm"] {
        let c = invoke1(op, &[&a, &b], &[]).unwrap();
        let want = invoke1("dot", &[&a, &b], &[]).unwrap();
        oxnet_core::check::assert_close(&c, &want, 1e-5, 1e-5).unwrap();
        // gradients against the built-in, through autograd
        let (x, y) = (a.copy().unwrap(), b.copy().unwrap());
        x.attach_grad(Req::Write).unwrap();
        y.attach_grad(Req::Write).unwrap();
        let z = {
            let _r = autograd::record();
            invoke1(op, &[&x, &y], &[]).unwrap()
        };
        z.backward().unwrap();
        let ones = NDArray::ones(&[3, 2], oxnet_core::DType::F32, oxnet_core::Device::Cpu).unwrap();
        let dx = invoke1("dot", &[&ones, &b], &[("transpose_b", true.into())]).unwrap();
        let dy = invoke1("dot", &[&a, &ones], &[("transpose_a", true.into())]).unwrap();
        oxnet_core::check::assert_close(&x.grad().unwrap(), &dx, 1e-5, 1e-5).unwrap();
        oxnet_core::check::assert_close(&y.grad().unwrap(), &dy, 1e-5, 1e-5).unwrap();
    }
}

#[test]
fn reference_source_passes_the_op_checker_and_reports_its_errors() {
    library();
    // float32 only, as the source checks; gemm is linear so wide steps are exact
    OpChecker::new("ref_gemm", &[matrix(2, 3, 0.2), matrix(3, 2, 0.4)])
        .eps(1e-2)
        .tol(1e-3, 1e-3)
        .run()
        .unwrap();
    let err = invoke1("ref_gemm", &[&matrix(2, 3, 0.0), &matrix(4, 2, 0.0)], &[]).unwrap_err().to_string();
    assert!(err.contains("ref_gemm") && err.contains("inner dimensions differ (3 and 4)"), "{err}");
    let f64_input = NDArray::from_vec(vec![1.0f64; 4], &[2, 2]).unwrap();
    let err = invoke1("ref_gemm", &[&f64_input, &f64_input], &[]).unwrap_err().to_string();
    assert!(err.contains("must be float32"), "{err}");
}

#[test]
fn the_same_source_is_an_mxnet_library_source() {
    let Some(include) = common::mxnet_header_dir() else {
        common::skip_without_mxnet("the_same_source_is_an_mxnet_library_source");
        return;
    };
    let out = Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-I"])
        .arg(&include)
        .arg(source())
        .output()
        .expect("run g++");
    assert!(
        out.status.success(),
        "does not compile against MXNet's header:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn reference_kernels_that_overwrite_still_accumulate_under_grad_req_add() {
    library();
    let (a, b) = (matrix(2, 3, 0.3), matrix(3, 2, 0.9));
    for op in ["ref_gemm", "ref_state_gemm"] {
        let (x, y) = (a.copy().unwrap(), b.copy().unwrap());
        x.attach_grad(Req::Add).unwrap();
        y.attach_grad(Req::Add).unwrap();
        for _ in 0..3 {
            let z = {
                let _r = autograd::record();
                invoke1(op, &[&x, &y], &[]).unwrap()
            };
            z.backward().unwrap();
        }
        let ones = NDArray::ones(&[2, 2], oxnet_core::DType::F32, oxnet_core::Device::Cpu).unwrap();
        let dx = invoke1("dot", &[&ones, &b], &[("transpose_b", true.into())]).unwrap();
        let three_dx = invoke1("_mul_scalar", &[&dx], &[("scalar", 3.0.into())]).unwrap();
        oxnet_core::check::assert_close(&x.grad().unwrap(), &three_dx, 1e-5, 1e-5).unwrap();
    }
}

#[test]
fn accumulation_for_overwriting_kernels_covers_every_dtype() {
    use oxnet_core::DType;
    library();
    // ref_copy's backward overwrites; grad_req add must still accumulate, in
    // the gradient's own dtype (the header adds half types through float)
    for dtype in
        [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8, DType::I8]
    {
        let x = NDArray::from_vec(vec![1.0f64, 2.5, 3.0], &[3]).unwrap().astype(dtype).unwrap();
        if !matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16) {
            // integer gradients: forward and an explicit add request
            let out = NDArray::full(&[3], 7.0, dtype, oxnet_core::Device::Cpu).unwrap();
            let op = oxnet_core::registry::get("ref_copy").unwrap();
            let attrs = op.parse_attrs(&[]).unwrap();
            oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
            let want = invoke1(
                "elemwise_add",
                &[&x, &NDArray::full(&[3], 7.0, dtype, oxnet_core::Device::Cpu).unwrap()],
                &[],
            )
            .unwrap();
            assert_eq!(out.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap(), "{dtype:?}");
            continue;
        }
        x.attach_grad(Req::Add).unwrap();
        let head = NDArray::from_vec(vec![0.1f64, 0.2, 0.3], &[3]).unwrap().astype(dtype).unwrap();
        for _ in 0..3 {
            let y = {
                let _r = autograd::record();
                invoke1("ref_copy", &[&x], &[]).unwrap()
            };
            autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
        }
        // the same sums done by the engine in this dtype
        let mut want = NDArray::zeros(&[3], dtype, oxnet_core::Device::Cpu).unwrap();
        for _ in 0..3 {
            want = invoke1("elemwise_add", &[&want, &head], &[]).unwrap();
        }
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap(), "{dtype:?}");
    }
}
