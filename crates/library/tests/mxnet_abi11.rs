//! Libraries built for MXNet 1.9.1 (its library ABI, version 11) load into
//! oxnet unchanged.
//!
//! `examples/extensions/mxnet/mx_ops.cc` is written against MXNet's own
//! `lib_api.h` and linked with MXNet's `lib_api.cc`, both from the mxnet 1.9.1
//! wheel (`scripts/fetch_mxnet_sdk.py` puts them into `target/mxnet-sdk`;
//! `common::mxnet_sdk` says where else they are looked for). It is built with
//! g++ once per test process into `target/ext-examples/mxnet`, loaded with
//! `oxnet_library::load`, and its operators checked against the built-ins,
//! central differences and hand-computed values: forward and backward,
//! requests, state, random states, workspaces, errors, mutated inputs, and its
//! partitioner and graph pass through the host's calls. Without those files
//! these tests print why and pass.
//!
//! Libraries that must be refused (another version, a refusing `initialize`,
//! a missing function) are plain C (`tests/fixtures/mxnet_faults.c`) and need
//! no MXNet files: those tests always run.

mod common;

use oxnet_core::autograd;
use oxnet_core::check::{assert_close, compare, OpChecker};
use oxnet_core::shape::shape;
use oxnet_core::{invoke1, invoke_into, registry, DType, Device, NDArray, OpContext, Req};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The operators of mx_ops.cc, in its registration order.
const OPS: [&str; 7] =
    ["mx_gemm", "mx_state_gemm", "mx_noise", "mx_throw", "mx_fail", "mx_accumulate", "mx_probe"];

// ---------------------------------------------------------------------------
// Building and loading the example
// ---------------------------------------------------------------------------

/// Compiles mx_ops.cc with MXNet's SDK (as its Makefile does) into
/// `target/ext-examples/native/libmx_ops.so`.
fn build(sdk: &common::MxnetSdk) -> PathBuf {
    let include = format!("-I{}", sdk.include.display());
    let source = common::repo_root().join("examples/extensions/mxnet/mx_ops.cc");
    common::build_native("g++", &["-std=c++11", &include], &[source, sdk.lib_api_cc.clone()], "mx_ops")
}

/// The example, built and loaded once per process; `None` (after printing
/// why) when MXNet's SDK is not here.
fn mx_ops(test: &str) -> Option<oxnet_library::Library> {
    static LIB: OnceLock<Option<Result<oxnet_library::Library, String>>> = OnceLock::new();
    let lib = LIB.get_or_init(|| {
        let sdk = common::mxnet_sdk()?;
        Some(oxnet_library::load(build(&sdk), false).map_err(|e| format!("load: {e}")))
    });
    match lib {
        None => {
            common::skip_without_mxnet(test);
            None
        }
        Some(Ok(lib)) => Some(lib.clone()),
        Some(Err(e)) => panic!("the MXNet-style example is not usable: {e}"),
    }
}

/// Tests share one process, one global random generator and the example's
/// instance counters: most tests run side by side (`shared`); those that
/// reseed or count instances run alone (`alone`).
static ORDER: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    ORDER.read().unwrap_or_else(|e| e.into_inner())
}

fn alone() -> RwLockWriteGuard<'static, ()> {
    ORDER.write().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// A deterministic `rows x cols` matrix of small distinct values.
fn matrix(rows: usize, cols: usize, salt: usize, dtype: DType) -> NDArray {
    let v: Vec<f64> = (0..rows * cols).map(|i| (((i * 5 + salt * 3) % 11) as f64 - 5.0) * 0.3).collect();
    NDArray::from_vec(v, &[rows, cols]).unwrap().astype(dtype).unwrap()
}

fn dot(a: &NDArray, b: &NDArray) -> NDArray {
    invoke1("dot", &[a, b], &[]).unwrap()
}

fn scaled(x: &NDArray, s: f64) -> NDArray {
    invoke1("_mul_scalar", &[x], &[("scalar", s.into())]).unwrap()
}

fn err_of(op: &str, inputs: &[&NDArray], attrs: &[(&str, &str)]) -> String {
    let attrs: Vec<(&str, oxnet_core::AttrValue)> = attrs.iter().map(|(k, v)| (*k, (*v).into())).collect();
    match invoke1(op, inputs, &attrs) {
        Ok(_) => panic!("{op} with {attrs:?} did not fail"),
        Err(e) => e.to_string(),
    }
}

/// The error names the callback: `stage` such as "infer_shape" is matched
/// ignoring case, spaces and underscores ("inferShape", "infer shape").
fn names_callback(err: &str, stage: &str) -> bool {
    let squash = |s: &str| s.to_lowercase().replace(['_', ' '], "");
    squash(err).contains(&squash(stage))
}

/// Gradients of sum(w * op(a, b)) with respect to a and b, through autograd,
/// after `passes` backward passes with request `req`.
fn gemm_grads(op: &str, a: &NDArray, b: &NDArray, req: Req, passes: usize) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = (a.copy().unwrap(), b.copy().unwrap());
    a.attach_grad(req).unwrap();
    b.attach_grad(req).unwrap();
    let w = matrix(a.shape()[0], b.shape()[1], 7, a.dtype());
    for _ in 0..passes {
        let loss = {
            let _r = autograd::record();
            let c = invoke1(op, &[&a, &b], &[]).unwrap();
            let wc = invoke1("elemwise_mul", &[&c, &w], &[]).unwrap();
            invoke1("sum", &[&wc], &[]).unwrap()
        };
        loss.backward().unwrap();
    }
    (a.grad().unwrap().to_vec().unwrap(), b.grad().unwrap().to_vec().unwrap())
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

#[test]
fn the_library_loads_with_its_operators_partitioner_and_pass() {
    let _g = shared();
    let Some(lib) = mx_ops("the_library_loads_with_its_operators_partitioner_and_pass") else { return };
    assert_eq!(lib.op_names(), OPS);
    for op in OPS {
        assert!(registry::contains(op), "{op} is not registered");
    }
    assert_eq!(lib.partitioners().len(), 1);
    let part = &lib.partitioners()[0];
    assert_eq!(part.name, "mx_part");
    let strategies: Vec<(&str, &str)> =
        part.strategies.iter().map(|(s, o)| (s.as_str(), o.as_str())).collect();
    assert_eq!(strategies, [("by_op", "_mx_subgraph_op"), ("grow", "_mx_subgraph_op")]);
    assert_eq!(lib.passes(), ["mx_tag_pass"]);
    assert!(lib.subgraph_op_names().is_empty());
}

// ---------------------------------------------------------------------------
// mx_gemm
// ---------------------------------------------------------------------------

#[test]
fn mx_gemm_matches_the_builtin_dot() {
    let _g = shared();
    if mx_ops("mx_gemm_matches_the_builtin_dot").is_none() {
        return;
    }
    for dt in [DType::F32, DType::F64] {
        let (a, b) = (matrix(3, 4, 1, dt), matrix(4, 5, 2, dt));
        let got = invoke1("mx_gemm", &[&a, &b], &[]).unwrap();
        assert_eq!((got.shape(), got.dtype()), (&[3usize, 5][..], dt));
        assert_close(&got, &dot(&a, &b), 1e-6, 1e-6).unwrap();
    }
    // by hand
    let a = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = NDArray::from_vec(vec![1.0f32, 0.0, -1.0, 2.0, 0.5, 1.0], &[3, 2]).unwrap();
    let c = invoke1("mx_gemm", &[&a, &b], &[]).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![0.5, 7.0, 2.0, 16.0]);
    let c =
        invoke1("mx_gemm", &[&a.astype(DType::F64).unwrap(), &b.astype(DType::F64).unwrap()], &[]).unwrap();
    assert_eq!(c.to_vec::<f64>().unwrap(), vec![0.5, 7.0, 2.0, 16.0]);
}

#[test]
fn the_gemms_pass_the_op_checker() {
    let _g = shared();
    if mx_ops("the_gemms_pass_the_op_checker").is_none() {
        return;
    }
    // output requests, inference, gradients against central differences and
    // grad_req=add over two passes
    for op in ["mx_gemm", "mx_state_gemm"] {
        let report =
            OpChecker::new(op, &[matrix(3, 2, 3, DType::F64), matrix(2, 4, 4, DType::F64)]).run().unwrap();
        assert_eq!(report.grad_entries, 3 * 2 + 2 * 4, "{op}");
        assert!(report.max_grad_error < 1e-6, "{op}: {}", report.max_grad_error);
    }
    // float32: gemm is linear, so a wide step is exact enough
    OpChecker::new("mx_gemm", &[matrix(2, 3, 1, DType::F32), matrix(3, 2, 2, DType::F32)])
        .eps(1e-2)
        .tol(1e-3, 1e-3)
        .run()
        .unwrap();
}

#[test]
fn autograd_gradients_match_dot_and_accumulate_with_grad_req_add() {
    let _g = shared();
    if mx_ops("autograd_gradients_match_dot_and_accumulate_with_grad_req_add").is_none() {
        return;
    }
    for dt in [DType::F64, DType::F32] {
        let tol = if dt == DType::F64 { 1e-12 } else { 1e-5 };
        let (a, b) = (matrix(3, 4, 5, dt), matrix(4, 2, 6, dt));
        let (da, db) = gemm_grads("dot", &a, &b, Req::Write, 1);
        assert!(da.iter().any(|&g| g != 0.0) && db.iter().any(|&g| g != 0.0));
        for op in ["mx_gemm", "mx_state_gemm"] {
            let (ga, gb) = gemm_grads(op, &a, &b, Req::Write, 1);
            compare(op, "dA", &ga, &da, tol, tol).unwrap();
            compare(op, "dB", &gb, &db, tol, tol).unwrap();
            // MXNet's kernels overwrite; oxnet adds them in for grad_req=add
            let (ga, gb) = gemm_grads(op, &a, &b, Req::Add, 2);
            let twice = |v: &[f64]| v.iter().map(|x| 2.0 * x).collect::<Vec<_>>();
            compare(op, "dA, added twice", &ga, &twice(&da), tol, tol).unwrap();
            compare(op, "dB, added twice", &gb, &twice(&db), tol, tol).unwrap();
        }
    }
}

#[test]
fn output_requests_are_honoured_though_mxnet_kernels_overwrite() {
    let _g = shared();
    if mx_ops("output_requests_are_honoured_though_mxnet_kernels_overwrite").is_none() {
        return;
    }
    let a = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let eye = NDArray::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    for op in ["mx_gemm", "mx_state_gemm"] {
        let def = registry::get(op).unwrap();
        let attrs = def.parse_attrs(&[]).unwrap();
        let out = NDArray::full(&[2, 2], 10.0, DType::F32, Device::Cpu).unwrap();
        invoke_into(&def, &[&a, &eye], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 12.0, 13.0, 14.0], "{op} add");
        invoke_into(&def, &[&a, &eye], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![12.0, 14.0, 16.0, 18.0], "{op} add again");
        invoke_into(&def, &[&a, &eye], &attrs, std::slice::from_ref(&out), &[Req::Null]).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![12.0, 14.0, 16.0, 18.0], "{op} null");
        invoke_into(&def, &[&a, &eye], &attrs, std::slice::from_ref(&out), &[Req::Write]).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0], "{op} write");
    }
}

#[test]
fn mx_gemm_reports_its_own_shape_and_dtype_errors() {
    let _g = shared();
    if mx_ops("mx_gemm_reports_its_own_shape_and_dtype_errors").is_none() {
        return;
    }
    let a = matrix(3, 4, 1, DType::F32);
    let err = err_of("mx_gemm", &[&a, &matrix(5, 2, 2, DType::F32)], &[]);
    assert!(err.contains("mx_gemm: cannot multiply 3x4 by 5x2 (inner dimensions differ)"), "{err}");
    assert!(names_callback(&err, "infer_shape"), "{err}");
    let v = NDArray::from_vec(vec![1.0f32; 4], &[4]).unwrap();
    let err = err_of("mx_gemm", &[&a, &v], &[]);
    assert!(err.contains("mx_gemm: both inputs must be 2-D matrices, got 2-D and 1-D"), "{err}");
    let err = err_of("mx_gemm", &[&a, &matrix(4, 2, 2, DType::I32)], &[]);
    assert!(err.contains("mx_gemm: input 1 must be float32 or float64, got int32"), "{err}");
    assert!(names_callback(&err, "infer_type"), "{err}");
    let err = err_of("mx_gemm", &[&a, &matrix(4, 2, 2, DType::F64)], &[]);
    assert!(err.contains("mx_gemm: both inputs must have one dtype, got float32 and float64"), "{err}");
    // only this call's message: the earlier shape errors are not repeated
    assert!(!err.contains("cannot multiply") && !err.contains("2-D matrices"), "{err}");
    // the operator stays usable
    let b = matrix(4, 2, 2, DType::F32);
    assert_close(&invoke1("mx_gemm", &[&a, &b], &[]).unwrap(), &dot(&a, &b), 1e-6, 1e-6).unwrap();
}

// ---------------------------------------------------------------------------
// mx_state_gemm
// ---------------------------------------------------------------------------

#[test]
fn mx_state_gemm_scales_counts_its_calls_and_dies_with_its_state() {
    let _g = alone();
    let Some(lib) = mx_ops("mx_state_gemm_scales_counts_its_calls_and_dies_with_its_state") else { return };
    // the test hooks the example exports
    let raw = unsafe { libloading::Library::new(lib.path()) }.unwrap();
    let live = unsafe { *raw.get::<unsafe extern "C" fn() -> i32>(b"mx_state_gemm_live_instances").unwrap() };
    let last = unsafe { *raw.get::<unsafe extern "C" fn() -> i32>(b"mx_state_gemm_last_count").unwrap() };

    let op = registry::get("mx_state_gemm").unwrap();
    let attrs = op.parse_attrs(&[("test_kw", "5".into()), ("scale", "2.5".into())]).unwrap();
    let (a, b) = (matrix(2, 3, 1, DType::F32), matrix(3, 2, 2, DType::F32));
    let want = scaled(&dot(&a, &b), 2.5);
    let create = op.create_state.as_ref().expect("mx_state_gemm is stateful");
    let kernel = &op.forward.iter().find(|(d, _)| *d == Device::Cpu).expect("a CPU kernel").1;
    let before = unsafe { live() };
    let state =
        create(&attrs, &[shape(&[2, 3]), shape(&[3, 2])], &[DType::F32, DType::F32], Device::Cpu).unwrap();
    assert_eq!(unsafe { live() }, before + 1, "one instance per state");
    for call in 1..=3 {
        let out = NDArray::zeros(&[2, 2], DType::F32, Device::Cpu).unwrap();
        let ctx = OpContext {
            op_name: "mx_state_gemm",
            attrs: &attrs,
            req: &[Req::Write],
            is_train: false,
            device: Device::Cpu,
            state: Some(&state),
        };
        kernel(&ctx, &[a.clone(), b.clone()], std::slice::from_ref(&out)).unwrap();
        // the counter starts at test_kw and counts this instance's calls
        assert_eq!(unsafe { last() }, 5 + call);
        assert_close(&out, &want, 1e-6, 1e-6).unwrap();
    }
    assert_eq!(unsafe { live() }, before + 1);
    drop(state);
    assert_eq!(unsafe { live() }, before, "the C++ destructor ran with the state");

    // an imperative call makes a fresh instance reading the attributes again
    let c = invoke1("mx_state_gemm", &[&a, &b], &[("test_kw", "40".into())]).unwrap();
    assert_close(&c, &dot(&a, &b), 1e-6, 1e-6).unwrap();
    assert_eq!(unsafe { last() }, 41);
    assert_eq!(unsafe { live() }, before, "no instance outlives an imperative call");

    // recorded: the instance lives until the graph is gone, backward included
    let (x, y) = (a.copy().unwrap(), b.copy().unwrap());
    x.attach_grad(Req::Write).unwrap();
    y.attach_grad(Req::Write).unwrap();
    {
        let z = {
            let _r = autograd::record();
            invoke1("mx_state_gemm", &[&x, &y], &[("scale", "-2".into())]).unwrap()
        };
        assert_close(&z, &scaled(&dot(&a, &b), -2.0), 1e-6, 1e-6).unwrap();
        z.backward().unwrap();
    }
    let ones = NDArray::ones(&[2, 2], DType::F32, Device::Cpu).unwrap();
    let dx = scaled(&invoke1("dot", &[&ones, &b], &[("transpose_b", true.into())]).unwrap(), -2.0);
    assert_close(&x.grad().unwrap(), &dx, 1e-6, 1e-6).unwrap();
    assert_eq!(unsafe { live() }, before, "the recorded instance died with its graph");

    // errors of createOpState carry its message
    let err = err_of("mx_state_gemm", &[&a, &b], &[("scale", "big")]);
    assert!(
        err.contains("mx_state_gemm") && err.contains("mx_state_gemm: scale=`big` is not a number"),
        "{err}"
    );
    let err = err_of("mx_state_gemm", &[&a, &b], &[("test_kw", "many")]);
    assert!(err.contains("test_kw=`many` is not an integer"), "{err}");
    assert!(!err.contains("big"), "an older message leaked: {err}");
    assert_eq!(unsafe { live() }, before);
}

// ---------------------------------------------------------------------------
// Resources: random states, workspace, devices, dtypes
// ---------------------------------------------------------------------------

#[test]
fn cpu_random_states_follow_oxnets_seed() {
    let _g = alone();
    if mx_ops("cpu_random_states_follow_oxnets_seed").is_none() {
        return;
    }
    let x = NDArray::full(&[400], 5.0, DType::F32, Device::Cpu).unwrap();
    let draw = || invoke1("mx_noise", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    oxnet_core::random::seed(7);
    let a = draw();
    let b = draw();
    oxnet_core::random::seed(7);
    let c = draw();
    let d = draw();
    oxnet_core::random::seed(8);
    let e = draw();
    // As in MXNet, seeding alone fixes the states: other random draws in
    // between do not move them.
    oxnet_core::random::seed(7);
    oxnet_core::random::with_rng(rand::Rng::random::<u64>);
    let f = draw();
    assert_eq!(a, f, "draws from the global generator leave the states' seeds alone");
    assert_eq!(a, c, "reseeding oxnet repeats the draws");
    assert_eq!(b, d, "... and the draws after them");
    assert_ne!(a, b, "the states advance between calls");
    assert_ne!(a, e, "another seed draws other numbers");
    for v in [&a, &b, &e] {
        assert!(v.iter().all(|v| (5.0..=6.0).contains(v)), "{v:?}");
    }
    // even elements come from states[0], odd ones from states[1023]: both
    // work, and they are different generators
    let evens: Vec<f32> = a.iter().step_by(2).map(|v| v - 5.0).collect();
    let odds: Vec<f32> = a.iter().skip(1).step_by(2).map(|v| v - 5.0).collect();
    assert_ne!(evens, odds);
    for (which, part) in [("states[0]", &evens), ("states[1023]", &odds)] {
        let mean = part.iter().sum::<f32>() / part.len() as f32;
        assert!((mean - 0.5).abs() < 0.15, "{which}: mean {mean}");
        let distinct: std::collections::BTreeSet<u32> = part.iter().map(|v| v.to_bits()).collect();
        assert!(
            distinct.len() > part.len() * 9 / 10,
            "{which}: {} distinct of {}",
            distinct.len(),
            part.len()
        );
    }
}

#[test]
fn kernels_see_cpu_tensors_mxnet_dtype_codes_workspaces_and_no_stream() {
    let _g = shared();
    if mx_ops("kernels_see_cpu_tensors_mxnet_dtype_codes_workspaces_and_no_stream").is_none() {
        return;
    }
    // MXNet's dtype codes: float32 0, float64 1, float16 2, uint8 3, int32 4, int8 5, int64 6
    let codes = [
        (DType::F32, 0),
        (DType::F64, 1),
        (DType::F16, 2),
        (DType::U8, 3),
        (DType::I32, 4),
        (DType::I8, 5),
        (DType::I64, 6),
    ];
    for (dt, code) in codes {
        let x = NDArray::ones(&[2, 3], dt, Device::Cpu).unwrap();
        let out = invoke1("mx_probe", &[&x], &[]).unwrap();
        assert_eq!(out.dtype(), DType::F32);
        // cpu, dev_id 0, dtype code, 2-D, disjoint workspaces, 64-byte aligned, no stream, DLTensor agrees
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            vec![1.0, 0.0, code as f32, 2.0, 1.0, 1.0, 1.0, 1.0],
            "{dt:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn a_cpp_exception_is_an_error_and_the_process_goes_on() {
    let _g = shared();
    if mx_ops("a_cpp_exception_is_an_error_and_the_process_goes_on").is_none() {
        return;
    }
    let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    for _ in 0..2 {
        let err = err_of("mx_throw", &[&x], &[]);
        assert!(err.contains("mx_throw") && err.contains("mx_throw: boom"), "{err}");
    }
    // the next failure does not repeat it
    let err = err_of("mx_fail", &[&x], &[("silent", "1")]);
    assert!(!err.contains("boom"), "{err}");
    // the library and the engine stay usable
    let a = matrix(2, 2, 1, DType::F32);
    assert_close(&invoke1("mx_gemm", &[&a, &a], &[]).unwrap(), &dot(&a, &a), 1e-6, 1e-6).unwrap();
}

#[test]
fn a_failing_callback_reports_its_op_stage_and_own_message() {
    let _g = shared();
    if mx_ops("a_failing_callback_reports_its_op_stage_and_own_message").is_none() {
        return;
    }
    let x = NDArray::from_vec(vec![1.0f32, -2.0, 3.0], &[3]).unwrap();
    let err = err_of("mx_fail", &[&x], &[]);
    assert!(err.contains("mx_fail") && err.contains("mx_fail: bad input"), "{err}");
    assert!(names_callback(&err, "forward"), "{err}");
    // a failure without a message shows no older one
    let err = err_of("mx_fail", &[&x], &[("silent", "1")]);
    assert!(err.contains("mx_fail") && !err.contains("bad input"), "{err}");
    for (stage, message) in [
        ("parse_attrs", "mx_fail: bad attributes"),
        ("infer_shape", "mx_fail: bad shape"),
        ("infer_type", "mx_fail: bad dtype"),
    ] {
        let err = err_of("mx_fail", &[&x], &[("stage", stage)]);
        assert!(err.contains("mx_fail") && err.contains(message), "{stage}: {err}");
        assert!(names_callback(&err, stage), "{stage}: {err}");
        assert!(!err.contains("bad input"), "{stage}: an older message leaked: {err}");
    }
    // backward: the forward (an identity) works, the backward fails
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("mx_fail", &[&x], &[("stage", "backward".into())]).unwrap()
    };
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, -2.0, 3.0]);
    let err = y.backward().unwrap_err().to_string();
    assert!(err.contains("mx_fail") && err.contains("mx_fail: bad gradient"), "{err}");
    assert!(names_callback(&err, "backward"), "{err}");
    // the same op, asked to fail nowhere, works forward and backward
    let y = {
        let _r = autograd::record();
        invoke1("mx_fail", &[&x], &[("stage", "none".into())]).unwrap()
    };
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0, 1.0]);
}

// ---------------------------------------------------------------------------
// Mutated inputs
// ---------------------------------------------------------------------------

#[test]
fn mx_accumulate_updates_its_second_input_in_place() {
    let _g = shared();
    if mx_ops("mx_accumulate_updates_its_second_input_in_place").is_none() {
        return;
    }
    let x = NDArray::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).unwrap();
    let acc = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let out = invoke1("mx_accumulate", &[&x, &acc], &[]).unwrap();
    assert_eq!(acc.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0], "input 1 is mutated");
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![10.0, 20.0, 30.0]);
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![10.0, 20.0, 30.0], "input 0 is not");
    invoke1("mx_accumulate", &[&x, &acc], &[]).unwrap();
    assert_eq!(acc.to_vec::<f32>().unwrap(), vec![21.0, 42.0, 63.0]);
    let err = err_of("mx_accumulate", &[&x, &NDArray::zeros(&[2], DType::F32, Device::Cpu).unwrap()], &[]);
    assert!(err.contains("mx_accumulate: both inputs must have one shape"), "{err}");
}

// ---------------------------------------------------------------------------
// Partitioner and graph pass
// ---------------------------------------------------------------------------

/// x, w -> mx_gemm g0 -> relu r0 -> mx_gemm g1 (with w) -> tanh t0 -> heads [t0].
const GRAPH: &str = r#"{"nodes": [
  {"op": "null", "name": "x", "inputs": []},
  {"op": "null", "name": "w", "inputs": []},
  {"op": "mx_gemm", "name": "g0", "inputs": [[0, 0, 0], [1, 0, 0]]},
  {"op": "relu", "name": "r0", "inputs": [[2, 0, 0]]},
  {"op": "mx_gemm", "name": "g1", "inputs": [[3, 0, 0], [1, 0, 0]]},
  {"op": "tanh", "name": "t0", "inputs": [[4, 0, 0]], "attrs": {"note": "kept"}}
 ], "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3, 4, 5, 6], "heads": [[5, 0, 0]]}"#;

/// The same with tanh between the two gemms: x, w -> g0 -> t0 -> g1 -> heads [g1].
const SPLIT_GRAPH: &str = r#"{"nodes": [
  {"op": "null", "name": "x", "inputs": []},
  {"op": "null", "name": "w", "inputs": []},
  {"op": "mx_gemm", "name": "g0", "inputs": [[0, 0, 0], [1, 0, 0]]},
  {"op": "tanh", "name": "t0", "inputs": [[2, 0, 0]]},
  {"op": "mx_gemm", "name": "g1", "inputs": [[3, 0, 0], [1, 0, 0]]}
 ], "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3, 4, 5], "heads": [[4, 0, 0]]}"#;

/// x, w -> g0: a subgraph to review.
const SUBGRAPH: &str = r#"{"nodes": [
  {"op": "null", "name": "x", "inputs": []},
  {"op": "null", "name": "w", "inputs": []},
  {"op": "mx_gemm", "name": "g0", "inputs": [[0, 0, 0], [1, 0, 0]]}
 ], "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3], "heads": [[2, 0, 0]]}"#;

fn sorted(mut v: Vec<(String, String)>) -> Vec<(String, String)> {
    v.sort();
    v
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn the_partitioner_selects_reviews_and_fails_through_the_host() {
    let _g = shared();
    let Some(lib) = mx_ops("the_partitioner_selects_reviews_and_fails_through_the_host") else { return };
    let by_op = lib.strategy("mx_part", "by_op").unwrap();
    assert_eq!(by_op.subgraph_op_name(), "_mx_subgraph_op");
    assert!(!by_op.uses_selector() && by_op.reviews_subgraphs());
    // MXNet's -1 ("any subgraph") becomes one fresh id; -2 (unsupported) the host's -1
    assert_eq!(by_op.supported_ops(GRAPH, 6, &[]).unwrap(), [-1, -1, 0, 0, 0, -1]);
    assert_eq!(by_op.supported_ops(GRAPH, 6, &[("ops", "mx_gemm")]).unwrap(), [-1, -1, 0, -1, 0, -1]);
    assert_eq!(by_op.supported_ops(GRAPH, 6, &[("ops", "tanh")]).unwrap(), [-1, -1, -1, -1, -1, 0]);
    // ids the library chooses (>= 0) are kept
    assert_eq!(by_op.supported_ops(GRAPH, 6, &[("explicit", "1")]).unwrap(), [-1, -1, 2, 3, 4, -1]);
    let err = by_op.supported_ops(GRAPH, 6, &[("fail", "1")]).unwrap_err().to_string();
    assert!(err.contains("mx_part") && err.contains("mx_part: asked to fail"), "{err}");
    // no older message in a later error
    let err =
        lib.pass("mx_tag_pass").unwrap().run_with_zeros(GRAPH, &[("fail", "1")]).unwrap_err().to_string();
    assert!(!err.contains("mx_part: asked to fail"), "{err}");

    // the selector strategy: grown by the host from each mx_gemm through relu
    let grow = lib.strategy("mx_part", "grow").unwrap();
    assert!(grow.uses_selector());
    assert_eq!(grow.supported_ops(GRAPH, 6, &[]).unwrap(), [-1, -1, 0, 0, 0, -1]);
    // tanh does not chain: each gemm is its own subgraph (by_op puts both in one)
    assert_eq!(grow.supported_ops(SPLIT_GRAPH, 5, &[]).unwrap(), [-1, -1, 0, -1, 1]);
    assert_eq!(by_op.supported_ops(SPLIT_GRAPH, 5, &[]).unwrap(), [-1, -1, 0, -1, 0]);

    // reviews accept with attributes, or reject
    for strategy in [&by_op, &grow] {
        let (accept, attrs) = strategy.review_subgraph(SUBGRAPH, 7, &[]).unwrap();
        assert!(accept);
        assert_eq!(sorted(attrs), pairs(&[("mx_num_ops", "1"), ("mx_reviewed", "mx_part/7")]));
        let (accept, attrs) = strategy.review_subgraph(GRAPH, 0, &[]).unwrap();
        assert!(accept);
        assert_eq!(sorted(attrs), pairs(&[("mx_num_ops", "4"), ("mx_reviewed", "mx_part/0")]));
        let (accept, attrs) = strategy.review_subgraph(SUBGRAPH, 7, &[("reject", "1")]).unwrap();
        assert!(!accept);
        assert!(attrs.is_empty(), "{attrs:?}");
    }
}

fn parse(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Per node, by name (MXNet's writer orders nodes by its own topological
/// sort): (op, attribute mx_tag, the names of its inputs).
type Described = std::collections::BTreeMap<String, (String, Option<String>, Vec<String>)>;

fn describe(g: &Json) -> Described {
    let nodes = g["nodes"].as_array().expect("nodes");
    let name = |i: u64| nodes[i as usize]["name"].as_str().unwrap().to_string();
    nodes
        .iter()
        .map(|n| {
            let tag = n.get("attrs").and_then(|a| a.get("mx_tag")).and_then(|t| t.as_str()).map(String::from);
            let inputs =
                n["inputs"].as_array().unwrap().iter().map(|e| name(e[0].as_u64().unwrap())).collect();
            (n["name"].as_str().unwrap().to_string(), (n["op"].as_str().unwrap().to_string(), tag, inputs))
        })
        .collect()
}

#[test]
fn the_graph_pass_rewrites_the_graph_through_the_host() {
    let _g = shared();
    let Some(lib) = mx_ops("the_graph_pass_rewrites_the_graph_through_the_host") else { return };
    let pass = lib.pass("mx_tag_pass").unwrap();
    let out = pass.run_with_zeros(GRAPH, &[("from", "relu"), ("to", "mx_relu")]).unwrap();
    assert!(out.params.is_empty());
    let g = parse(&out.graph_json);
    let s = |x: &str| x.to_string();
    let seen = || Some(s("seen"));
    let want: Described = [
        (s("x"), (s("null"), None, vec![])),
        (s("w"), (s("null"), None, vec![])),
        (s("g0"), (s("mx_gemm"), seen(), vec![s("x"), s("w")])),
        (s("r0"), (s("mx_relu"), seen(), vec![s("g0")])),
        (s("g1"), (s("mx_gemm"), seen(), vec![s("r0"), s("w")])),
        (s("t0"), (s("tanh"), seen(), vec![s("g1")])),
    ]
    .into_iter()
    .collect();
    assert_eq!(describe(&g), want);
    let nodes = g["nodes"].as_array().unwrap();
    let t0 = nodes.iter().position(|n| n["name"] == "t0").unwrap();
    assert_eq!(nodes[t0]["attrs"]["note"].as_str(), Some("kept"), "{}", nodes[t0]);
    assert_eq!(g["heads"][0][0].as_u64(), Some(t0 as u64), "the head is still t0");
    // options reach the pass; without from/to nothing is renamed
    let out = pass.run_with_zeros(GRAPH, &[("tag", "second")]).unwrap();
    let d = describe(&parse(&out.graph_json));
    assert_eq!((d["r0"].0.as_str(), d["r0"].1.as_deref()), ("relu", Some("second")));
    // a failing pass reports its message
    let err = pass.run_with_zeros(GRAPH, &[("fail", "1")]).unwrap_err().to_string();
    assert!(err.contains("mx_tag_pass") && err.contains("mx_tag_pass: asked to fail"), "{err}");
    // and looking it up by name across libraries finds it too
    assert_eq!(oxnet_library::find_pass("mx_tag_pass").unwrap().name(), "mx_tag_pass");
}

// ---------------------------------------------------------------------------
// Libraries that must be refused (plain C, always built)
// ---------------------------------------------------------------------------

/// Compiles `tests/fixtures/mxnet_faults.c` with `-D<define>` into
/// `lib<name>.so`, declaring the operator `<name>_op`.
fn fault_library(define: &str, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mxnet_faults.c");
    let (def, op) = (format!("-D{define}"), format!("-DOP_NAME=\"{name}_op\""));
    common::build_native("cc", &["-std=c99", "-Wall", "-Wextra", "-Werror", &def, &op], &[src], name)
}

fn refused(define: &str, name: &str) -> String {
    let path = fault_library(define, name);
    let err = oxnet_library::load(&path, false).expect_err("the library must be refused").to_string();
    assert!(err.contains(&format!("lib{name}.so")), "the error does not name the file: {err}");
    assert!(!registry::contains(&format!("{name}_op")), "{name}_op was registered: {err}");
    err
}

#[test]
fn a_library_of_another_mxnet_abi_version_is_refused() {
    let err = refused("MX_FAULT_VERSION", "mx_fault_version");
    // the version found, and the one supported
    assert!(err.to_lowercase().contains("version 10") && err.contains("11"), "{err}");
}

#[test]
fn a_library_whose_initialize_refuses_is_refused_with_its_messages() {
    let err = refused("MX_FAULT_REFUSE", "mx_fault_refuse");
    assert!(err.contains("refused"), "{err}");
    // initialize(10901) was called, and the messages it logged are shown
    assert!(err.contains("mx_faults refuses MXNet version 10901"), "{err}");
    assert!(err.contains("first, an unrelated warning"), "{err}");
}

#[test]
fn a_library_missing_a_required_function_is_refused_naming_it() {
    let err = refused("MX_FAULT_MISSING", "mx_fault_missing");
    assert!(err.contains("_opCallFCompute"), "{err}");
}
