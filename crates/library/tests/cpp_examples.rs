//! The C++ SDK (`include/oxnet/lib_api.h`): the examples of
//! `examples/extensions/cpp` and a fixture library (below) compiled with
//! `g++ -std=c++17` and loaded at run time. Values are compared against the
//! built-in `dot`, gradients against central differences; requests, state,
//! resources, exceptions and refused loads are each checked.

use oxnet_core::autograd;
use oxnet_core::check::{assert_close, OpChecker};
use oxnet_core::shape::shape;
use oxnet_core::{invoke1, invoke_into, registry, DType, Device, NDArray, OpContext, Req};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Operators exercising the SDK's plumbing: exceptions, failures, resources,
/// randomness, shape refinement, mutated inputs, a stateful op without backward.
/// `-DREFUSE` builds a library whose `initialize` refuses oxnet instead;
/// `-DBAD_REGISTRATION` one whose registrations are wrong.
const FIXTURE: &str = r#"
#include <cstdint>
#include <stdexcept>
#include "oxnet/lib_api.h"
using namespace mxnet::ext;
typedef std::unordered_map<std::string, std::string> Attrs;

[[maybe_unused]] static MXReturnValue one_to_one(const Attrs&, int* in, int* out) { *in = 1; *out = 1; return MX_SUCCESS; }
[[maybe_unused]] static MXReturnValue two_to_one(const Attrs&, int* in, int* out) { *in = 2; *out = 1; return MX_SUCCESS; }
[[maybe_unused]] static MXReturnValue same_shape(const Attrs&, std::vector<std::vector<unsigned>>* in,
                                std::vector<std::vector<unsigned>>* out) {
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}
[[maybe_unused]] static MXReturnValue float32_only(const Attrs&, std::vector<int>* in, std::vector<int>* out) {
  for (int t : *in) if (t != kFloat32) { MX_ERROR_MSG << "float32 only"; return MX_FAIL; }
  for (int& t : *out) t = kFloat32;
  return MX_SUCCESS;
}
/* Stores v into out[i] as the request says. */
[[maybe_unused]] static void store(MXTensor& out, int64_t i, float v) {
  if (out.req == kAddTo) out.data<float>()[i] += v;
  else if (out.req != kNullOp) out.data<float>()[i] = v;
}

#if defined(REFUSE)
static MXReturnValue noop(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  return MX_SUCCESS;
}
REGISTER_OP(cpp_refused_op).setParseAttrs(one_to_one).setInferShape(same_shape).setForward(noop, "cpu");
MXReturnValue initialize(int version) {
  MX_ERROR_MSG << "this library needs oxnet 99.0 or later, got version " << oxnet::ext::oxnet_version()
               << " (API " << version << ")";
  return MX_FAIL;
}
#elif defined(BAD_REGISTRATION)
static MXReturnValue noop(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  return MX_SUCCESS;
}
REGISTER_OP(cpp_bad_ctx_op).setParseAttrs(one_to_one).setInferShape(same_shape).setForward(noop, "tpu");
REGISTER_OP(cpp_no_parse_op).setInferShape(same_shape).setForward(noop, "cpu");
#else
static MXReturnValue throws(const Attrs& attrs, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  auto why = attrs.find("why");
  throw std::runtime_error("cpp_throw failed on purpose: " + (why == attrs.end() ? std::string("no reason") : why->second));
}
static MXReturnValue throws_int(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  throw 42;
}
static MXReturnValue fails_loudly(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  MX_ERROR_MSG << "first problem" << std::endl;
  MX_ERROR_MSG << "second problem";
  return MX_FAIL;
}
static MXReturnValue fails_silently(const Attrs&, std::vector<MXTensor>*, std::vector<MXTensor>*, const OpResource&) {
  return MX_FAIL;
}
REGISTER_OP(cpp_throw).setParseAttrs(one_to_one).setInferShape(same_shape).setForward(throws, "cpu");
REGISTER_OP(cpp_throw_int).setParseAttrs(one_to_one).setInferShape(same_shape).setForward(throws_int, "cpu");
REGISTER_OP(cpp_fail_msg).setParseAttrs(one_to_one).setInferShape(same_shape).setForward(fails_loudly, "cpu");
REGISTER_OP(cpp_fail_silent).setParseAttrs(one_to_one).setInferShape(same_shape).setForward(fails_silently, "cpu");

/* out = [no stream and no GPU memory, two workspaces distinct, 64-byte aligned,
 *        is_train, request of the output, on the cpu, ndim of input 0, dltensor agrees] */
static MXReturnValue probe_shape(const Attrs&, std::vector<std::vector<unsigned>>*,
                                 std::vector<std::vector<unsigned>>* out) {
  (*out)[0] = {8};
  return MX_SUCCESS;
}
static MXReturnValue probe(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) {
  MXTensor& o = (*out)[0];
  const MXReqType req = o.req;
  o.req = kWriteTo;
  unsigned char* a = static_cast<unsigned char*>(res.alloc_cpu(100));
  unsigned char* b = static_cast<unsigned char*>(res.alloc_cpu(100));
  for (int i = 0; i < 100; ++i) { a[i] = 1; b[i] = 2; }
  bool distinct = true;
  for (int i = 0; i < 100; ++i) distinct = distinct && a[i] == 1 && b[i] == 2;
  store(o, 0, res.get_cuda_stream() == nullptr && res.alloc_gpu(8) == nullptr && res.get_gpu_rand_states() == nullptr);
  store(o, 1, distinct && a != b);
  store(o, 2, reinterpret_cast<uintptr_t>(a) % 64 == 0 && reinterpret_cast<uintptr_t>(b) % 64 == 0);
  store(o, 3, res.is_train());
  store(o, 4, static_cast<float>(req));
  store(o, 5, (*in)[0].ctx.dev_type == "cpu");
  store(o, 6, static_cast<float>((*in)[0].shape.size()));
  const DLTensor& t = (*in)[0].dltensor;
  store(o, 7, t.data == (*in)[0].data_ptr && t.ndim == 2 && t.shape[1] == (*in)[0].shape[1] && t.dtype.bits == 32);
  return MX_SUCCESS;
}
REGISTER_OP(cpp_probe).setParseAttrs(one_to_one).setInferShape(probe_shape).setInferType(float32_only).setHandlesAddTo().setForward(probe, "cpu");

/* out = x + u, u uniform in [0, 1) from the resource's CPU generators */
static MXReturnValue noise(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource& res) {
  mx_cpu_rand_t* states = res.get_cpu_rand_states();
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const float* x = (*in)[0].data<float>();
  for (int64_t i = 0; i < (*in)[0].size(); ++i) store((*out)[0], i, x[i] + u(states[i % MX_NUM_CPU_RANDOM_STATES]));
  return MX_SUCCESS;
}
REGISTER_OP(cpp_noise).setParseAttrs(one_to_one).setInferShape(same_shape).setInferType(float32_only).setHandlesAddTo().setForward(noise, "cpu");

/* out = a + b, where shape inference gives an unknown input the other's shape */
static MXReturnValue refine_shape(const Attrs&, std::vector<std::vector<unsigned>>* in,
                                  std::vector<std::vector<unsigned>>* out) {
  if ((*in)[1].empty()) (*in)[1] = (*in)[0];
  if ((*in)[0].empty()) (*in)[0] = (*in)[1];
  if ((*in)[0] != (*in)[1]) { MX_ERROR_MSG << "cpp_refine: the inputs must have the same shape"; return MX_FAIL; }
  (*out)[0] = (*in)[0];
  return MX_SUCCESS;
}
static MXReturnValue add(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource&) {
  for (int64_t i = 0; i < (*in)[0].size(); ++i) store((*out)[0], i, (*in)[0].data<float>()[i] + (*in)[1].data<float>()[i]);
  return MX_SUCCESS;
}
REGISTER_OP(cpp_refine).setParseAttrs(two_to_one).setInferShape(refine_shape).setHandlesAddTo().setForward(add, "cpu");

/* a += b (input 0 is mutated); out = the new a */
static MXReturnValue mutate_first(const Attrs&, std::vector<int>* idx) { idx->push_back(0); return MX_SUCCESS; }
static MXReturnValue accumulate(const Attrs&, std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource&) {
  float* a = (*in)[0].data<float>();
  for (int64_t i = 0; i < (*in)[0].size(); ++i) {
    a[i] += (*in)[1].data<float>()[i];
    store((*out)[0], i, a[i]);
  }
  return MX_SUCCESS;
}
REGISTER_OP(cpp_accumulate).setParseAttrs(two_to_one).setInferShape(same_shape).setMutateInputs(mutate_first).setHandlesAddTo().setForward(accumulate, "cpu");

/* A stateful identity without Backward. */
class Identity : public CustomStatefulOp {
 public:
  MXReturnValue Forward(std::vector<MXTensor>* in, std::vector<MXTensor>* out, const OpResource&) override {
    for (int64_t i = 0; i < (*in)[0].size(); ++i) store((*out)[0], i, (*in)[0].data<float>()[i]);
    return MX_SUCCESS;
  }
};
static MXReturnValue create_identity(const Attrs&, const MXContext&, const std::vector<std::vector<unsigned>>&,
                                     const std::vector<int>, CustomStatefulOp** op) {
  *op = new Identity();
  return MX_SUCCESS;
}
REGISTER_OP(cpp_stateful_no_backward).setParseAttrs(one_to_one).setInferShape(same_shape).setCreateOpState(create_identity, "cpu");
#endif
"#;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp_ext");
    std::fs::create_dir_all(&dir).expect("create the build directory");
    dir
}

/// Compiles `source` with `defines` and optimisation `opt` into `lib<name>.so`
/// under the cargo target dir.
fn compile(name: &str, source: &Path, defines: &[&str], opt: &str) -> PathBuf {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let dir = out_dir();
    let out = dir.join(format!("{DLL_PREFIX}{name}{DLL_SUFFIX}"));
    let tmp = dir.join(format!("{DLL_PREFIX}{name}.{}.tmp{DLL_SUFFIX}", std::process::id()));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let result = Command::new(&cxx)
        .args(["-std=c++17", "-shared", "-fPIC", opt, "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(repo_root().join("include"))
        .args(defines)
        .arg(source)
        .arg("-o")
        .arg(&tmp)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cxx}: {e}"));
    assert!(result.status.success(), "compiling {name} failed:\n{}", String::from_utf8_lossy(&result.stderr));
    std::fs::rename(&tmp, &out).expect("move the library into place");
    out
}

fn example(name: &str) -> PathBuf {
    repo_root().join(format!("examples/extensions/cpp/{name}.cc"))
}

fn fixture_source() -> PathBuf {
    let path = out_dir().join(format!("cpp_fixture.{}.cc", std::process::id()));
    std::fs::write(&path, FIXTURE).expect("write the fixture source");
    path
}

/// Each library is compiled once per test process (those that never run a
/// kernel without optimisation, which compiles faster).
fn library(which: &str) -> &'static Path {
    static MY_GEMM: OnceLock<PathBuf> = OnceLock::new();
    static STATE_GEMM: OnceLock<PathBuf> = OnceLock::new();
    static FIXTURE_LIB: OnceLock<PathBuf> = OnceLock::new();
    static REFUSE: OnceLock<PathBuf> = OnceLock::new();
    static BAD: OnceLock<PathBuf> = OnceLock::new();
    match which {
        "my_gemm" => MY_GEMM.get_or_init(|| compile("my_gemm", &example("my_gemm"), &[], "-O2")),
        "state_gemm" => STATE_GEMM.get_or_init(|| compile("state_gemm", &example("state_gemm"), &[], "-O2")),
        "fixture" => FIXTURE_LIB.get_or_init(|| compile("cpp_fixture", &fixture_source(), &[], "-O2")),
        "refuse" => REFUSE.get_or_init(|| compile("cpp_refuse", &fixture_source(), &["-DREFUSE"], "-O0")),
        "bad" => BAD.get_or_init(|| compile("cpp_bad", &fixture_source(), &["-DBAD_REGISTRATION"], "-O0")),
        _ => unreachable!("no library {which}"),
    }
}

fn load(which: &str) -> oxnet_library::Library {
    oxnet_library::load(library(which), false).unwrap_or_else(|e| panic!("load {which}: {e}"))
}

/// A deterministic `rows x cols` matrix of small distinct values.
fn matrix(rows: usize, cols: usize, salt: usize, dtype: DType) -> NDArray {
    let v: Vec<f64> = (0..rows * cols).map(|i| (((i * 7 + salt * 5) % 13) as f64 - 6.0) * 0.25).collect();
    NDArray::from_vec(v, &[rows, cols]).unwrap().astype(dtype).unwrap()
}

#[test]
fn my_gemm_matches_the_builtin_dot() {
    load("my_gemm");
    for dt in [DType::F32, DType::F64] {
        let a = matrix(3, 4, 1, dt);
        let b = matrix(4, 5, 2, dt);
        let got = invoke1("my_gemm", &[&a, &b], &[]).unwrap();
        let want = invoke1("dot", &[&a, &b], &[]).unwrap();
        assert_eq!(got.dtype(), dt);
        assert_eq!(got.shape(), &[3, 5]);
        assert_close(&got, &want, 1e-6, 1e-6).unwrap();
    }
    // a hand-computed product
    let a = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = NDArray::from_vec(vec![5.0f32, 6.0, 7.0, 8.0], &[2, 2]).unwrap();
    let c = invoke1("my_gemm", &[&a, &b], &[]).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![19.0, 22.0, 43.0, 50.0]);
}

#[test]
fn my_gemm_passes_the_op_checker() {
    load("my_gemm");
    let a = matrix(3, 2, 3, DType::F64);
    let b = matrix(2, 4, 4, DType::F64);
    let report = OpChecker::new("my_gemm", &[a, b]).run().unwrap();
    assert_eq!(report.grad_entries, 3 * 2 + 2 * 4);
    assert!(report.max_grad_error < 1e-6, "{}", report.max_grad_error);
}

#[test]
fn my_gemm_honours_requests() {
    load("my_gemm");
    let op = registry::get("my_gemm").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    let a = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = NDArray::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    let out = NDArray::full(&[2, 2], 10.0, DType::F32, Device::Cpu).unwrap();
    invoke_into(&op, &[&a, &b], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 12.0, 13.0, 14.0]);
    invoke_into(&op, &[&a, &b], &attrs, std::slice::from_ref(&out), &[Req::Null]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 12.0, 13.0, 14.0]);
    invoke_into(&op, &[&a, &b], &attrs, std::slice::from_ref(&out), &[Req::Write]).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}

/// Gradients of sum(w * f(a, b)) through autograd, for f = my_gemm or dot.
fn gemm_grads(op: &str, a: &NDArray, b: &NDArray, req: Req, passes: usize) -> (Vec<f64>, Vec<f64>) {
    let (a, b) = (a.copy().unwrap(), b.copy().unwrap());
    a.attach_grad(req).unwrap();
    b.attach_grad(req).unwrap();
    let w = matrix(a.shape()[0], b.shape()[1], 9, a.dtype());
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

#[test]
fn autograd_differentiates_through_my_gemm_and_state_gemm() {
    let _counters = STATE_GEMM_COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    load("my_gemm");
    load("state_gemm");
    let a = matrix(3, 4, 5, DType::F64);
    let b = matrix(4, 2, 6, DType::F64);
    let (da, db) = gemm_grads("dot", &a, &b, Req::Write, 1);
    assert!(da.iter().any(|&g| g != 0.0));
    for op in ["my_gemm", "state_gemm"] {
        let (ga, gb) = gemm_grads(op, &a, &b, Req::Write, 1);
        oxnet_core::check::compare(op, "dA", &ga, &da, 1e-12, 1e-12).unwrap();
        oxnet_core::check::compare(op, "dB", &gb, &db, 1e-12, 1e-12).unwrap();
        // grad_req = add accumulates over passes
        let (ga, gb) = gemm_grads(op, &a, &b, Req::Add, 2);
        let twice = |v: &[f64]| v.iter().map(|x| 2.0 * x).collect::<Vec<_>>();
        oxnet_core::check::compare(op, "dA added", &ga, &twice(&da), 1e-12, 1e-12).unwrap();
        oxnet_core::check::compare(op, "dB added", &gb, &twice(&db), 1e-12, 1e-12).unwrap();
    }
}

#[test]
fn my_gemm_reports_its_own_shape_and_dtype_errors() {
    load("my_gemm");
    let a = matrix(3, 4, 1, DType::F32);
    let check = |inputs: &[&NDArray], wanted: &str| {
        let err = invoke1("my_gemm", inputs, &[]).unwrap_err().to_string();
        assert!(err.contains("my_gemm") && err.contains(wanted), "{err}");
    };
    check(
        &[&a, &matrix(5, 2, 2, DType::F32)],
        "expected axis 1 of the first input (4) to equal axis 0 of the second (5)",
    );
    let v = NDArray::from_vec(vec![1.0f32; 4], &[4]).unwrap();
    check(&[&a, &v], "expected 2-D matrices for both inputs, got 2-D and 1-D");
    check(&[&a, &matrix(4, 2, 2, DType::I32)], "expected input 1 to be float32 or float64, got int32");
    check(
        &[&a, &matrix(4, 2, 2, DType::F64)],
        "expected both inputs to have the same dtype, got float32 and float64",
    );
    // the engine and the operator stay usable
    let ok = invoke1("my_gemm", &[&a, &matrix(4, 2, 2, DType::F32)], &[]).unwrap();
    assert_eq!(ok.shape(), &[3, 2]);
}

/// The state_gemm example counts live instances and calls in process-wide
/// counters: tests that run the op hold this lock so that the counting test
/// sees only its own instances.
static STATE_GEMM_COUNTERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn state_gemm_counts_forward_calls_of_one_instance_and_is_destroyed_with_it() {
    let _counters = STATE_GEMM_COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    let lib = load("state_gemm");
    // the test hooks the example exports
    let raw = unsafe { libloading::Library::new(lib.path()) }.unwrap();
    let live = unsafe { *raw.get::<unsafe extern "C" fn() -> i32>(b"state_gemm_live_instances").unwrap() };
    let last = unsafe { *raw.get::<unsafe extern "C" fn() -> i32>(b"state_gemm_last_count").unwrap() };

    let op = registry::get("state_gemm").unwrap();
    let attrs = op.parse_attrs(&[("test_kw", "5".into())]).unwrap();
    let a = matrix(2, 3, 1, DType::F32);
    let b = matrix(3, 2, 2, DType::F32);
    let create = op.create_state.as_ref().expect("state_gemm is stateful");
    let kernel = &op.forward.iter().find(|(d, _)| *d == Device::Cpu).expect("a CPU kernel").1;
    let before = unsafe { live() };
    let state =
        create(&attrs, &[shape(&[2, 3]), shape(&[3, 2])], &[DType::F32, DType::F32], Device::Cpu).unwrap();
    assert_eq!(unsafe { live() }, before + 1);
    let want = invoke1("dot", &[&a, &b], &[]).unwrap();
    for call in 1..=3 {
        let out = NDArray::zeros(&[2, 2], DType::F32, Device::Cpu).unwrap();
        let ctx = OpContext {
            op_name: "state_gemm",
            attrs: &attrs,
            req: &[Req::Write],
            is_train: false,
            device: Device::Cpu,
            state: Some(&state),
        };
        kernel(&ctx, &[a.clone(), b.clone()], std::slice::from_ref(&out)).unwrap();
        // the counter starts at the attribute and counts this instance's calls
        assert_eq!(unsafe { last() }, 5 + call);
        assert_close(&out, &want, 1e-6, 1e-6).unwrap();
    }
    drop(state);
    assert_eq!(unsafe { live() }, before, "the instance dies with its state");

    // an imperative call makes a fresh instance, reading the attribute again
    let c = invoke1("state_gemm", &[&a, &b], &[("test_kw", "40".into())]).unwrap();
    assert_close(&c, &want, 1e-6, 1e-6).unwrap();
    assert_eq!(unsafe { last() }, 41);
    let err = invoke1("state_gemm", &[&a, &b], &[("test_kw", "many".into())]).unwrap_err().to_string();
    assert!(err.contains("state_gemm") && err.contains("test_kw=`many` is not an integer"), "{err}");
}

#[test]
fn two_cpp_libraries_keep_their_own_registries() {
    let g = load("my_gemm");
    let s = load("state_gemm");
    assert_eq!(g.op_names(), ["my_gemm"]);
    assert_eq!(s.op_names(), ["state_gemm"]);
    let again = load("my_gemm");
    assert_eq!(again.op_names(), ["my_gemm"]);
}

#[test]
fn a_cpp_exception_becomes_an_error_naming_the_op() {
    load("fixture");
    load("my_gemm");
    let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let err = invoke1("cpp_throw", &[&x], &[("why", "testing".into())]).unwrap_err().to_string();
    assert!(
        err.contains("cpp_throw") && err.contains("C++ exception: cpp_throw failed on purpose: testing"),
        "{err}"
    );
    let err = invoke1("cpp_throw_int", &[&x], &[]).unwrap_err().to_string();
    assert!(err.contains("cpp_throw_int") && err.contains("not a std::exception"), "{err}");
    let err = invoke1("cpp_fail_msg", &[&x], &[]).unwrap_err().to_string();
    assert!(err.contains("cpp_fail_msg") && err.contains("first problem; second problem"), "{err}");
    let err = invoke1("cpp_fail_silent", &[&x], &[]).unwrap_err().to_string();
    assert!(err.contains("cpp_fail_silent") && err.contains("forward failed: returned MX_FAIL"), "{err}");
    // messages belong to their call: the next failure does not repeat them
    let err = invoke1("cpp_fail_silent", &[&x], &[]).unwrap_err().to_string();
    assert!(!err.contains("problem"), "{err}");
    // the engine stays usable
    let a = matrix(2, 2, 1, DType::F32);
    let ok = invoke1("my_gemm", &[&a, &a], &[]).unwrap();
    assert_close(&ok, &invoke1("dot", &[&a, &a], &[]).unwrap(), 1e-6, 1e-6).unwrap();
}

#[test]
fn the_resource_offers_workspace_and_no_stream_on_the_cpu() {
    load("fixture");
    let x = matrix(2, 3, 1, DType::F32);
    let out = invoke1("cpp_probe", &[&x], &[]).unwrap();
    // stream/GPU absent, distinct workspaces, aligned, not training, req write, cpu, 2-D, dltensor
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 2.0, 1.0]);
    let out = {
        let _t = autograd::train_mode();
        invoke1("cpp_probe", &[&x], &[]).unwrap()
    };
    assert_eq!(out.to_vec::<f32>().unwrap()[3], 1.0, "is_train reaches the kernel");
    let op = registry::get("cpp_probe").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    let buf = NDArray::zeros(&[8], DType::F32, Device::Cpu).unwrap();
    invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&buf), &[Req::Add]).unwrap();
    assert_eq!(buf.to_vec::<f32>().unwrap()[4], 3.0, "the request reaches the kernel");
    // the default inferType is replaced by the op's own here
    let err = invoke1("cpp_probe", &[&x.astype(DType::F64).unwrap()], &[]).unwrap_err().to_string();
    assert!(err.contains("cpp_probe") && err.contains("float32 only"), "{err}");
}

#[test]
fn cpu_random_states_repeat_after_reseeding() {
    load("fixture");
    let x = NDArray::full(&[300], 5.0, DType::F32, Device::Cpu).unwrap();
    oxnet_core::random::seed(7);
    let a = invoke1("cpp_noise", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    let b = invoke1("cpp_noise", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    oxnet_core::random::seed(7);
    let c = invoke1("cpp_noise", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, c, "reseeding oxnet repeats the draws");
    assert_ne!(a, b, "two calls draw differently");
    assert!(a.iter().all(|v| (5.0..6.0).contains(v)), "{a:?}");
    let mean = a.iter().map(|v| v - 5.0).sum::<f32>() / a.len() as f32;
    assert!((mean - 0.5).abs() < 0.1, "mean {mean}");
}

#[test]
fn infer_shape_may_refine_inputs_and_mutated_inputs_are_written() {
    load("fixture");
    let op = registry::get("cpp_refine").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    let mut ins = [Some(shape(&[2, 3])), None];
    let mut outs = [None];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert_eq!(ins[1].as_deref(), Some(&[2usize, 3][..]), "the unknown input learned its shape");
    assert_eq!(outs[0].as_deref(), Some(&[2usize, 3][..]));
    let mut ins = [Some(shape(&[2, 3])), Some(shape(&[3, 2]))];
    let err = (op.infer_shape)(&attrs, &mut ins, &mut [None]).unwrap_err().to_string();
    assert!(err.contains("the inputs must have the same shape"), "{err}");
    // the default inferType gives the output the inputs' dtype
    let a = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let s = invoke1("cpp_refine", &[&a, &a], &[]).unwrap();
    assert_eq!((s.dtype(), s.to_vec::<f32>().unwrap()), (DType::F32, vec![2.0, 4.0]));

    let acc = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let inc = NDArray::from_vec(vec![10.0f32, 20.0, 30.0], &[3]).unwrap();
    let out = invoke1("cpp_accumulate", &[&acc, &inc], &[]).unwrap();
    assert_eq!(acc.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0], "input 0 is mutated in place");
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0]);
}

#[test]
fn a_stateful_op_without_backward_says_so() {
    load("fixture");
    let x = NDArray::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("cpp_stateful_no_backward", &[&x], &[]).unwrap()
    };
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, -2.0]);
    let err = y.backward().unwrap_err().to_string();
    assert!(err.contains("cpp_stateful_no_backward") && err.contains("does not support backward"), "{err}");
}

#[test]
fn initialize_may_refuse_oxnet_and_nothing_is_registered() {
    let err = oxnet_library::load(library("refuse"), false).unwrap_err().to_string();
    // initialize receives the MXNet API version the header reproduces; the
    // library reads oxnet's own (major*10000 + minor*100 + patch) from oxnet_version()
    let v: Vec<i32> = env!("CARGO_PKG_VERSION").split('.').map(|p| p.parse().unwrap()).collect();
    let version = v[0] * 10000 + v[1] * 100 + v[2];
    let wanted = format!("needs oxnet 99.0 or later, got version {version} (API 10901)");
    assert!(err.contains("cpp_refuse") && err.contains(&wanted), "{err}");
    assert!(!registry::contains("cpp_refused_op"));
}

#[test]
fn registration_mistakes_refuse_the_load_with_their_reasons() {
    let err = oxnet_library::load(library("bad"), false).unwrap_err().to_string();
    assert!(
        err.contains("cpp_bad_ctx_op") && err.contains("unknown context") && err.contains("tpu"),
        "{err}"
    );
    assert!(err.contains("cpp_no_parse_op") && err.contains("no parseAttrs"), "{err}");
    assert!(!registry::contains("cpp_bad_ctx_op") && !registry::contains("cpp_no_parse_op"));
}
