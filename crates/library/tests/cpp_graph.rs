//! The C++ SDK's partitioners and graph passes (`include/oxnet/lib_api.h`:
//! `REGISTER_PARTITIONER`, `REGISTER_PASS`, `Graph`, `CustomOpSelector`,
//! `PassResource`), called through the C ABI directly: the example
//! `examples/extensions/cpp/subgraph/subgraph_lib.cc` and a fixture library
//! (below) are compiled with g++, opened with libloading, and their
//! partitioner and pass descriptors called with hand-written NNVM graphs.
//! When MXNet's own header is available (`common::mxnet_sdk`: `target/mxnet-sdk`,
//! `.venv-mxnet`, `MXNET_SDK` or `MXNET_INCLUDE`), the example is also checked
//! against it.

mod common;

use oxnet_abi as abi;
use oxnet_core::{invoke1, NDArray};
use serde_json::Value as Json;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Callbacks that fail in every way the bridge must turn into messages, and
/// (with `-DBAD_REGISTRATION`) registrations that must refuse the load.
const FIXTURE: &str = r#"
#include <stdexcept>
#include "lib_api.h"
using namespace mxnet::ext;
typedef std::unordered_map<std::string, std::string> Options;

#if defined(BAD_REGISTRATION)
static MXReturnValue review(const Graph*, int, bool* accept, const Options&, std::unordered_map<std::string, std::string>*) {
  *accept = true;
  return MX_SUCCESS;
}
REGISTER_PARTITIONER(fx_bad_part).addStrategy("lonely", "_sg").setReviewSubgraph("missing", review);
REGISTER_PASS(fx_bodyless_pass);
#else
static MXReturnValue throwing_ops(const Graph*, std::vector<int>*, const Options&) {
  throw std::runtime_error("no gemm in this graph");
}
static MXReturnValue bad_ids(const Graph* g, std::vector<int>* ids, const Options&) {
  for (size_t i = 0; i < g->size(); ++i) (*ids)[i] = -7;
  return MX_SUCCESS;
}
static MXReturnValue resizing_ops(const Graph*, std::vector<int>* ids, const Options&) {
  ids->push_back(0);
  return MX_SUCCESS;
}
static MXReturnValue mixed_ids(const Graph* g, std::vector<int>* ids, const Options&) {
  // node 2: subgraph 3; other operator nodes: any subgraph
  for (size_t i = 0; i < g->size(); ++i) {
    if (g->getNode(i)->op != "null") (*ids)[i] = i == 2 ? 3 : -1;
  }
  return MX_SUCCESS;
}
static MXReturnValue failing_review(const Graph*, int id, bool*, const Options&,
                                    std::unordered_map<std::string, std::string>*) {
  MX_ERROR_MSG << "subgraph " << id << " is too big";
  return MX_FAIL;
}
static MXReturnValue silent_review(const Graph*, int, bool*, const Options&,
                                   std::unordered_map<std::string, std::string>* attrs) {
  (*attrs)["seen"] = "yes";  // never sets *accept: rejected, as in the reference
  return MX_SUCCESS;
}
class ThrowingSelector : public CustomOpSelector {
 public:
  bool Select(int id) override {
    if (id == 1) throw std::runtime_error("cannot look at node 1");
    return true;
  }
  bool SelectInput(int, int) override { return false; }
  bool SelectOutput(int, int) override { return false; }
  void Filter(const std::vector<int>& c, std::vector<int>* keep) override {
    keep->assign(c.begin(), c.end());
    keep->push_back(99);
  }
};
static MXReturnValue throwing_selector(const Graph*, CustomOpSelector** sel, const Options&) {
  *sel = new ThrowingSelector();
  return MX_SUCCESS;
}
static MXReturnValue no_selector(const Graph*, CustomOpSelector**, const Options&) { return MX_SUCCESS; }
REGISTER_PARTITIONER(fx_part)
    .addStrategy("throws", "_sg").setSupportedOps("throws", throwing_ops)
    .addStrategy("bad_ids", "_sg").setSupportedOps("bad_ids", bad_ids)
    .addStrategy("resizes", "_sg").setSupportedOps("resizes", resizing_ops)
    .addStrategy("mixed", "_sg").setSupportedOps("mixed", mixed_ids).setReviewSubgraph("mixed", failing_review)
    .addStrategy("silent", "_sg").setSupportedOps("silent", mixed_ids).setReviewSubgraph("silent", silent_review)
    .addStrategy("selector", "_sg").setCreateSelector("selector", throwing_selector)
    .addStrategy("no_selector", "_sg").setCreateSelector("no_selector", no_selector);

static MXReturnValue throwing_pass(Graph*, const Options&) { throw std::logic_error("pass exploded"); }
static MXReturnValue cycle_pass(Graph* g, const Options&) {
  Node* a = g->getNode(1);
  a->inputs.push_back(NodeEntry{a, 0});
  return MX_SUCCESS;
}
static MXReturnValue gpu_param_pass(Graph* g, const Options&) {
  Node* w = g->addNode("w", "null");
  w->alloc_arg({2}, MXContext::GPU(), kFloat32);
  return MX_SUCCESS;
}
static MXReturnValue aux_pass(Graph* g, const Options&) {
  Node* m = g->addInput("moving_mean");
  m->alloc_aux({2, 3}, MXContext::CPU(), kFloat64);
  for (int i = 0; i < 6; ++i) m->tensor->data<double>()[i] = 0.5 * i;
  g->attrs["aux_added"] = JsonVal(std::string("moving_mean"));
  return MX_SUCCESS;
}
REGISTER_PASS(fx_throw).setBody(throwing_pass);
REGISTER_PASS(fx_cycle).setBody(cycle_pass);
REGISTER_PASS(fx_gpu_param).setBody(gpu_param_pass);
REGISTER_PASS(fx_aux).setBody(aux_pass);
#endif
"#;

/// A graph: x, w -> my_gemm g0 -> relu r0 -> my_gemm g1 (with w) -> heads [g1].
const GRAPH: &str = r#"{"nodes": [
  {"op": "null", "name": "x", "inputs": []},
  {"op": "null", "name": "w", "inputs": []},
  {"op": "my_gemm", "name": "g0", "inputs": [[0, 0, 0], [1, 0, 0]], "attrs": {"alpha": "1.5", "label": "a \"quoted\" \u00e9"}},
  {"op": "relu", "name": "r0", "inputs": [[2, 0, 0]]},
  {"op": "my_gemm", "name": "g1", "inputs": [[3, 0, 0], [1, 0, 0]]}
 ], "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3, 4, 5], "heads": [[4, 0, 0]],
 "attrs": {"mxnet_version": ["int", 10901], "note": "plain"}}"#;

// ---------------------------------------------------------------------------
// Building and opening
// ---------------------------------------------------------------------------

fn example_source() -> PathBuf {
    common::repo_root().join("examples/extensions/cpp/subgraph/subgraph_lib.cc")
}

/// Compiles `source` (which includes "lib_api.h") against oxnet's header.
fn compile(source: &Path, name: &str, defines: &[&str]) -> PathBuf {
    let dir = common::out_dir().join("native");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("lib{name}.{}.so", std::process::id()));
    let output = Command::new("g++")
        .args(["-std=c++17", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(common::repo_root().join("include/oxnet"))
        .args(defines)
        .arg(source)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run g++");
    assert!(output.status.success(), "compiling {name} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    out
}

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn log(_host: *mut c_void, level: i32, message: *const c_char) {
    let text = CStr::from_ptr(message).to_string_lossy().into_owned();
    LOG.lock().unwrap().push(format!("{level}: {text}"));
}

struct HostTable(abi::Host);
unsafe impl Sync for HostTable {}
unsafe impl Send for HostTable {}

fn host() -> *const abi::Host {
    static HOST: OnceLock<HostTable> = OnceLock::new();
    &HOST
        .get_or_init(|| {
            HostTable(abi::Host {
                abi_version: abi::ABI_VERSION,
                struct_size: std::mem::size_of::<abi::Host>() as u32,
                host_version: 100,
                resource_size: std::mem::size_of::<abi::Resource>() as u32,
                tensor_size: std::mem::size_of::<abi::DLTensor>() as u32,
                shape_size: std::mem::size_of::<abi::Shape>() as u32,
                host_data: std::ptr::null_mut(),
                log: Some(log),
            })
        })
        .0
}

/// An opened library and its table (kept loaded for the test process).
struct Lib {
    table: abi::Library,
    _lib: libloading::Library,
}
unsafe impl Sync for Lib {}
unsafe impl Send for Lib {}

impl Lib {
    /// Opens `path`, checks the table's version and sizes, and returns it with
    /// the result of its `initialize`.
    fn open(path: &Path) -> (Lib, Result<(), String>) {
        let lib = unsafe { libloading::Library::new(path) }.expect("open the library");
        let entry: abi::EntryFn =
            unsafe { *lib.get::<abi::EntryFn>(abi::ENTRY_NAME.as_bytes()).expect("entry point") };
        let table = unsafe { entry(host()) };
        assert!(!table.is_null(), "the entry point returned no table");
        let table = unsafe { *table };
        let ours = abi::Library::empty();
        assert_eq!(table.abi_version, abi::ABI_VERSION);
        assert_eq!(
            [table.struct_size, table.op_size, table.partitioner_size, table.pass_size],
            [ours.struct_size, ours.op_size, ours.partitioner_size, ours.pass_size]
        );
        let init = table.initialize.expect("initialize");
        let status = call(|err| unsafe { init(100, err) });
        (Lib { table, _lib: lib }, status)
    }

    fn partitioners(&self) -> &[abi::Partitioner] {
        unsafe { std::slice::from_raw_parts(self.table.partitioners, self.table.num_partitioners as usize) }
    }

    fn passes(&self) -> &[abi::Pass] {
        unsafe { std::slice::from_raw_parts(self.table.passes, self.table.num_passes as usize) }
    }

    /// (user_data, strategy) of `partitioner`'s `strategy`.
    fn strategy(&self, partitioner: &str, strategy: &str) -> (*mut c_void, abi::Strategy) {
        let p = self.partitioners().iter().find(|p| s(p.name) == partitioner).expect("partitioner");
        assert_eq!(p.struct_size as usize, std::mem::size_of::<abi::Partitioner>());
        let all = unsafe { std::slice::from_raw_parts(p.strategies, p.num_strategies as usize) };
        (p.user_data, *all.iter().find(|x| s(x.name) == strategy).expect("strategy"))
    }

    fn pass(&self, name: &str) -> abi::Pass {
        *self.passes().iter().find(|p| s(p.name) == name).expect("pass")
    }
}

fn s(p: *const c_char) -> String {
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The example, compiled once (opened directly and loaded by oxnet: one copy).
fn example_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| compile(&example_source(), "subgraph_lib", &[])).clone()
}

fn example() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let (lib, init) = Lib::open(&example_path());
        init.expect("the example initialises");
        lib
    })
}

/// The example loaded as oxnet loads libraries (registering its operator).
fn loaded_example() -> oxnet_library::Library {
    static LIB: OnceLock<oxnet_library::Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = oxnet_library::load(example_path(), false).unwrap();
        assert_eq!(lib.op_names(), ["_custom_subgraph_op"]);
        assert_eq!(lib.subgraph_op_names(), ["_custom_subgraph_op"]);
        lib
    })
    .clone()
}

fn fixture() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let src = common::out_dir().join(format!("cpp_graph_fixture.{}.cc", std::process::id()));
        std::fs::write(&src, FIXTURE).unwrap();
        let (lib, init) = Lib::open(&compile(&src, "cpp_graph_fixture", &[]));
        init.expect("the fixture initialises");
        lib
    })
}

// ---------------------------------------------------------------------------
// Calling through the ABI
// ---------------------------------------------------------------------------

unsafe extern "C" fn set_message(host: *mut c_void, message: *const c_char) {
    let m = &mut *(host as *mut String);
    if !m.is_empty() {
        m.push_str("; ");
    }
    m.push_str(&CStr::from_ptr(message).to_string_lossy());
}

/// Calls `f` with an error sink: Ok, or the message of a failure.
fn call(f: impl FnOnce(*mut abi::Error) -> i32) -> Result<(), String> {
    let mut msg = String::new();
    let mut err =
        abi::Error { host_data: &mut msg as *mut String as *mut c_void, set_message: Some(set_message) };
    match f(&mut err) {
        abi::OK => Ok(()),
        status => Err(if msg.is_empty() { format!("status {status} without a message") } else { msg }),
    }
}

unsafe extern "C" fn push(host: *mut c_void, key: *const c_char, value: *const c_char) {
    let v = &mut *(host as *mut Vec<(Option<String>, String)>);
    let key = (!key.is_null()).then(|| CStr::from_ptr(key).to_string_lossy().into_owned());
    v.push((key, CStr::from_ptr(value).to_string_lossy().into_owned()));
}

/// Owned attributes and their ABI view.
struct Options {
    _strings: Vec<CString>,
    keys: Vec<*const c_char>,
    values: Vec<*const c_char>,
}

impl Options {
    fn new(pairs: &[(&str, &str)]) -> Options {
        let mut strings = Vec::new();
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        for (k, v) in pairs {
            let (k, v) = (CString::new(*k).unwrap(), CString::new(*v).unwrap());
            keys.push(k.as_ptr());
            values.push(v.as_ptr());
            strings.push(k);
            strings.push(v);
        }
        Options { _strings: strings, keys, values }
    }
    fn abi(&self) -> abi::Attrs {
        abi::Attrs { keys: self.keys.as_ptr(), values: self.values.as_ptr(), count: self.keys.len() as i32 }
    }
}

fn supported_ops(
    lib: &Lib,
    strategy: &str,
    part: &str,
    graph: &str,
    options: &[(&str, &str)],
    n: usize,
) -> Result<Vec<i32>, String> {
    let (user, st) = lib.strategy(part, strategy);
    let f = st.supported_ops.expect("supported_ops");
    let json = CString::new(graph).unwrap();
    let opts = Options::new(options);
    let mut ids = vec![-1i32; n];
    call(|err| unsafe { f(user, json.as_ptr(), ids.as_mut_ptr(), n as i32, &opts.abi(), err) })?;
    Ok(ids)
}

fn review(
    lib: &Lib,
    part: &str,
    strategy: &str,
    graph: &str,
    id: i32,
    options: &[(&str, &str)],
) -> Result<(bool, Vec<(String, String)>), String> {
    let (user, st) = lib.strategy(part, strategy);
    let f = st.review_subgraph.expect("review_subgraph");
    let json = CString::new(graph).unwrap();
    let opts = Options::new(options);
    let mut accept = -1;
    let mut pushed: Vec<(Option<String>, String)> = Vec::new();
    let mut sink = abi::Sink { host_data: &mut pushed as *mut _ as *mut c_void, push: Some(push) };
    call(|err| unsafe { f(user, json.as_ptr(), id, &opts.abi(), &mut accept, &mut sink, err) })?;
    assert!(accept == 0 || accept == 1, "accept is {accept}");
    Ok((accept == 1, pushed.into_iter().map(|(k, v)| (k.expect("attribute key"), v)).collect()))
}

/// One parameter a pass allocated through the test's `alloc_param`.
struct Param {
    name: String,
    aux: bool,
    dtype: i32,
    shape: Vec<i64>,
    _tensor: Box<abi::DLTensor>,
    /// The storage (8-byte words).
    data: Vec<u64>,
}

/// Parameters a pass allocated.
#[derive(Default)]
struct Params {
    made: Vec<Param>,
}

unsafe extern "C" fn alloc_param(
    host: *mut c_void,
    name: *const c_char,
    is_aux: i32,
    shape: *const i64,
    ndim: i32,
    dtype: i32,
) -> *mut abi::DLTensor {
    let params = &mut *(host as *mut Params);
    let shape: Vec<i64> = std::slice::from_raw_parts(shape, ndim as usize).to_vec();
    let (code, bits) = match dtype {
        abi::DTYPE_FLOAT32 => (abi::K_DL_FLOAT, 32u8),
        abi::DTYPE_FLOAT64 => (abi::K_DL_FLOAT, 64),
        _ => return std::ptr::null_mut(),
    };
    let n: i64 = shape.iter().product();
    let mut data = vec![0u64; (n as usize * bits as usize / 8).div_ceil(8).max(1)];
    let mut t = Box::new(abi::DLTensor {
        data: data.as_mut_ptr() as *mut c_void,
        device: abi::DLDevice { device_type: abi::K_DL_CPU, device_id: 0 },
        ndim,
        dtype: abi::DLDataType { code, bits, lanes: 1 },
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    });
    let name = CStr::from_ptr(name).to_string_lossy().into_owned();
    let ptr = &mut *t as *mut abi::DLTensor;
    params.made.push(Param { name, aux: is_aux != 0, dtype, shape, _tensor: t, data });
    let last = params.made.last_mut().unwrap();
    (*ptr).shape = last.shape.as_mut_ptr();
    ptr
}

fn run_pass(
    lib: &Lib,
    name: &str,
    graph: &str,
    options: &[(&str, &str)],
    params: &mut Params,
) -> Result<String, String> {
    let pass = lib.pass(name);
    assert_eq!(pass.struct_size as usize, std::mem::size_of::<abi::Pass>());
    let f = pass.run.expect("run");
    let json = CString::new(graph).unwrap();
    let opts = Options::new(options);
    let mut pushed: Vec<(Option<String>, String)> = Vec::new();
    let mut sink = abi::Sink { host_data: &mut pushed as *mut _ as *mut c_void, push: Some(push) };
    let res =
        abi::PassResource { host_data: params as *mut Params as *mut c_void, alloc_param: Some(alloc_param) };
    call(|err| unsafe { f(pass.user_data, json.as_ptr(), &opts.abi(), &mut sink, &res, err) })?;
    assert_eq!(pushed.len(), 1, "a pass pushes exactly one graph");
    assert_eq!(pushed[0].0, None, "the graph is pushed without a key");
    Ok(pushed.pop().unwrap().1)
}

// ---------------------------------------------------------------------------
// Reading the passes' output (serde_json, which oxnet-library already uses)
// ---------------------------------------------------------------------------

fn parse(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Accessors that fail the test with the value when the shape is wrong.
trait Expect {
    fn list(&self) -> &[Json];
    fn str(&self) -> &str;
    fn num(&self) -> f64;
    /// A list of numbers as integers.
    fn ints(&self) -> Vec<i64>;
}

impl Expect for Json {
    fn list(&self) -> &[Json] {
        self.as_array().unwrap_or_else(|| panic!("not a list: {self}"))
    }
    fn str(&self) -> &str {
        self.as_str().unwrap_or_else(|| panic!("not a string: {self}"))
    }
    fn num(&self) -> f64 {
        self.as_f64().unwrap_or_else(|| panic!("not a number: {self}"))
    }
    fn ints(&self) -> Vec<i64> {
        self.list().iter().map(|x| x.num() as i64).collect()
    }
}

/// (op, name, inputs as [id, index]) of every node.
fn nodes(g: &Json) -> Vec<(String, String, Vec<[i64; 2]>)> {
    g["nodes"]
        .list()
        .iter()
        .map(|n| {
            let ins = n["inputs"]
                .list()
                .iter()
                .map(|e| [e.list()[0].num() as i64, e.list()[1].num() as i64])
                .collect();
            (n["op"].str().to_string(), n["name"].str().to_string(), ins)
        })
        .collect()
}

fn node_attr<'a>(g: &'a Json, node: usize, key: &str) -> Option<&'a str> {
    g["nodes"].list()[node].get("attrs").and_then(|a| a.get(key)).map(|v| v.str())
}

fn strings(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn log_has(text: &str) -> bool {
    LOG.lock().unwrap().iter().any(|l| l.contains(text))
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn the_example_declares_its_partitioner_and_passes() {
    let lib = example();
    let parts: Vec<String> = lib.partitioners().iter().map(|p| s(p.name)).collect();
    assert_eq!(parts, ["my_part"]);
    let (user, by_op) = lib.strategy("my_part", "by_op");
    assert!(!user.is_null());
    assert_eq!(s(by_op.subgraph_op_name), "_custom_subgraph_op");
    assert!(
        by_op.supported_ops.is_some() && by_op.review_subgraph.is_some() && by_op.create_selector.is_none()
    );
    let (_, grow) = lib.strategy("my_part", "grow");
    assert_eq!(s(grow.subgraph_op_name), "_custom_subgraph_op");
    assert!(grow.supported_ops.is_none() && grow.review_subgraph.is_some() && grow.create_selector.is_some());
    // each strategy has its own functions (the ABI's strategies carry no user data)
    assert_ne!(by_op.review_subgraph.map(|f| f as usize), grow.review_subgraph.map(|f| f as usize));
    let passes: Vec<String> = lib.passes().iter().map(|p| s(p.name)).collect();
    assert_eq!(passes, ["prefix_names", "add_bias"]);
}

#[test]
fn supported_ops_marks_the_gemm_nodes() {
    let lib = example();
    // "any subgraph" (-1 in the reference) becomes one fresh id: 0 here
    assert_eq!(supported_ops(lib, "by_op", "my_part", GRAPH, &[], 5).unwrap(), [-1, -1, 0, -1, 0]);
    assert_eq!(
        supported_ops(lib, "by_op", "my_part", GRAPH, &[("exclude", "g1")], 5).unwrap(),
        [-1, -1, 0, -1, -1]
    );
    let err = supported_ops(lib, "by_op", "my_part", GRAPH, &[], 4).unwrap_err();
    assert!(err.contains("room for 4 ids for a graph of 5 nodes"), "{err}");
}

#[test]
fn review_accepts_with_attributes_or_rejects() {
    let lib = example();
    let sub = r#"{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "null", "name": "w", "inputs": []},
        {"op": "my_gemm", "name": "g0", "inputs": [[0, 0, 0], [1, 0, 0]]}], "arg_nodes": [0, 1], "heads": [[2, 0, 0]]}"#;
    for strategy in ["by_op", "grow"] {
        let (accept, attrs) = review(lib, "my_part", strategy, sub, 7, &[]).unwrap();
        assert!(accept);
        assert_eq!(attrs, strings(&[("num_gemms", "1"), ("reviewed_by", "my_part/7")]));
        let (accept, attrs) = review(lib, "my_part", strategy, sub, 7, &[("reject", "true")]).unwrap();
        assert!(!accept);
        assert!(attrs.is_empty());
    }
    let (accept, attrs) = review(lib, "my_part", "by_op", GRAPH, 0, &[]).unwrap();
    assert!(accept);
    assert_eq!(attrs[0], ("num_gemms".to_string(), "2".to_string()));
}

#[test]
fn the_selector_grows_through_gemm_nodes() {
    let lib = example();
    let (user, st) = lib.strategy("my_part", "grow");
    let create = st.create_selector.unwrap();
    let json = CString::new(GRAPH).unwrap();
    let opts = Options::new(&[]);
    let mut sel: abi::Selector = unsafe { std::mem::zeroed() };
    call(|err| unsafe { create(user, json.as_ptr(), &opts.abi(), &mut sel, err) }).unwrap();
    let yes = |f: &dyn Fn(*mut i32) -> i32| {
        let mut v = -1;
        assert_eq!(f(&mut v), abi::OK);
        v
    };
    unsafe {
        let (select, input, output) =
            (sel.select.unwrap(), sel.select_input.unwrap(), sel.select_output.unwrap());
        assert_eq!(yes(&|v| select(sel.selector, 2, v)), 1);
        assert_eq!(yes(&|v| select(sel.selector, 3, v)), 0);
        assert_eq!(yes(&|v| select(sel.selector, 0, v)), 0);
        assert_eq!(yes(&|v| input(sel.selector, 4, 3, v)), 0);
        assert_eq!(yes(&|v| input(sel.selector, 4, 2, v)), 1);
        assert_eq!(yes(&|v| output(sel.selector, 2, 3, v)), 0);
        let candidates = [2, 3, 4];
        let mut keep = [0i32; 3];
        let mut n = -1;
        assert_eq!(
            sel.filter.unwrap()(sel.selector, candidates.as_ptr(), 3, keep.as_mut_ptr(), &mut n),
            abi::OK
        );
        assert_eq!(&keep[..n as usize], [2, 4]);
        sel.reset.unwrap()(sel.selector);
        sel.destroy.unwrap()(sel.selector);
    }
}

#[test]
fn prefix_names_renames_and_marks_operator_nodes() {
    let lib = example();
    let mut params = Params::default();
    let out = run_pass(lib, "prefix_names", GRAPH, &[("prefix", "p_")], &mut params).unwrap();
    assert!(params.made.is_empty());
    let g = parse(&out);
    let names: Vec<String> = nodes(&g).into_iter().map(|n| n.1).collect();
    assert_eq!(names, ["x", "w", "p_g0", "p_r0", "p_g1"]);
    let ops: Vec<String> = nodes(&g).into_iter().map(|n| n.0).collect();
    assert_eq!(ops, ["null", "null", "my_gemm", "relu", "my_gemm"]);
    let inputs: Vec<Vec<[i64; 2]>> = nodes(&g).into_iter().map(|n| n.2).collect();
    assert_eq!(inputs, [vec![], vec![], vec![[0, 0], [1, 0]], vec![[2, 0]], vec![[3, 0], [1, 0]]]);
    assert_eq!(node_attr(&g, 2, "alpha"), Some("1.5"));
    assert_eq!(node_attr(&g, 2, "label"), Some("a \"quoted\" \u{e9}"));
    assert_eq!(node_attr(&g, 2, "renamed_by"), Some("prefix_names"));
    assert_eq!(node_attr(&g, 4, "renamed_by"), Some("prefix_names"));
    assert_eq!(node_attr(&g, 0, "renamed_by"), None);
    assert_eq!(g["arg_nodes"].ints(), [0, 1]);
    assert_eq!(g["node_row_ptr"].ints(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(g["heads"].list()[0].ints(), [4, 0, 0]);
    // graph attributes survive in both forms
    assert_eq!(g["attrs"]["mxnet_version"].list()[0].str(), "int");
    assert_eq!(g["attrs"]["mxnet_version"].list()[1].num(), 10901.0);
    assert_eq!(g["attrs"]["note"].str(), "plain");
    // the default prefix
    let out = run_pass(lib, "prefix_names", GRAPH, &[], &mut params).unwrap();
    assert_eq!(nodes(&parse(&out))[3].1, "ext_r0");
}

#[test]
fn add_bias_allocates_a_parameter_and_rewires_the_output() {
    let lib = example();
    let mut params = Params::default();
    let out = run_pass(lib, "add_bias", GRAPH, &[], &mut params).unwrap();
    assert_eq!(params.made.len(), 1);
    let Param { name, aux, dtype, shape, data, .. } = &params.made[0];
    assert_eq!(
        (name.as_str(), *aux, *dtype, shape.as_slice()),
        ("bias", false, abi::DTYPE_FLOAT32, &[1i64][..])
    );
    assert_eq!(f32::from_bits(data[0] as u32), 1.0);
    let g = parse(&out);
    let n = nodes(&g);
    assert_eq!(n.len(), 7);
    assert_eq!((n[5].0.as_str(), n[5].1.as_str()), ("null", "bias"));
    assert_eq!((n[6].0.as_str(), n[6].1.as_str()), ("broadcast_add", "bias_add"));
    assert_eq!(n[6].2, [[4, 0], [5, 0]]);
    assert_eq!(g["heads"].list()[0].ints(), [6, 0, 0]);
    assert_eq!(g["arg_nodes"].ints(), [0, 1, 5]);
    assert_eq!(g["node_row_ptr"].ints(), [0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn failing_partitioner_callbacks_become_error_messages() {
    let lib = fixture();
    let err = supported_ops(lib, "throws", "fx_part", GRAPH, &[], 5).unwrap_err();
    assert!(err.contains("threw a C++ exception: no gemm in this graph"), "{err}");
    let err = supported_ops(lib, "bad_ids", "fx_part", GRAPH, &[], 5).unwrap_err();
    assert!(err.contains("gave node 0 the id -7"), "{err}");
    let err = supported_ops(lib, "resizes", "fx_part", GRAPH, &[], 5).unwrap_err();
    assert!(err.contains("supportedOps resized its id list (5 entries expected)"), "{err}");
    // explicit ids are kept; "any" takes the next free id
    assert_eq!(supported_ops(lib, "mixed", "fx_part", GRAPH, &[], 5).unwrap(), [-1, -1, 3, 4, 4]);
    assert_eq!(review(lib, "fx_part", "mixed", GRAPH, 5, &[]).unwrap_err(), "subgraph 5 is too big");
    // a review that never sets accept rejects (as in the reference) but still gives its attributes
    assert_eq!(
        review(lib, "fx_part", "silent", GRAPH, 0, &[]).unwrap(),
        (false, strings(&[("seen", "yes")]))
    );
    // malformed graphs from the host
    let err = supported_ops(lib, "mixed", "fx_part", r#"{"nodes": [{"op": "relu""#, &[], 1).unwrap_err();
    assert!(err.contains("cannot read the graph oxnet passed: malformed JSON at offset"), "{err}");
    let bad = r#"{"nodes": [{"op": "relu", "name": "r", "inputs": [[3, 0, 0]]}], "heads": []}"#;
    let err = supported_ops(lib, "mixed", "fx_part", bad, &[], 1).unwrap_err();
    assert!(err.contains("node 0 (`r`) input 0 refers to node 3, but the graph has 1 nodes"), "{err}");
    let err = supported_ops(lib, "mixed", "fx_part", r#"{"heads": []}"#, &[], 0).unwrap_err();
    assert!(err.contains("no \"nodes\" list"), "{err}");
}

#[test]
fn failing_selectors_fail_their_calls_and_log_why() {
    let lib = fixture();
    let json = CString::new(GRAPH).unwrap();
    let opts = Options::new(&[]);
    let (user, st) = lib.strategy("fx_part", "no_selector");
    let mut sel: abi::Selector = unsafe { std::mem::zeroed() };
    let err =
        call(|err| unsafe { st.create_selector.unwrap()(user, json.as_ptr(), &opts.abi(), &mut sel, err) })
            .unwrap_err();
    assert!(err.contains("without creating a CustomOpSelector"), "{err}");
    assert!(sel.selector.is_null());
    let (user, st) = lib.strategy("fx_part", "selector");
    call(|err| unsafe { st.create_selector.unwrap()(user, json.as_ptr(), &opts.abi(), &mut sel, err) })
        .unwrap();
    unsafe {
        let mut v = -1;
        assert_eq!(sel.select.unwrap()(sel.selector, 0, &mut v), abi::OK);
        assert_eq!(v, 1);
        assert_eq!(sel.select.unwrap()(sel.selector, 1, &mut v), abi::FAIL);
        assert!(log_has("1: CustomOpSelector::Select threw a C++ exception: cannot look at node 1"));
        let (candidates, mut keep, mut n) = ([0, 2], [0i32; 2], -1);
        assert_eq!(
            sel.filter.unwrap()(sel.selector, candidates.as_ptr(), 2, keep.as_mut_ptr(), &mut n),
            abi::FAIL
        );
        assert!(log_has(
            "CustomOpSelector::Filter threw a C++ exception: kept more nodes than the candidates"
        ));
        sel.destroy.unwrap()(sel.selector);
    }
}

#[test]
fn failing_passes_become_error_messages() {
    let lib = fixture();
    let mut params = Params::default();
    let err = run_pass(lib, "fx_throw", GRAPH, &[], &mut params).unwrap_err();
    assert_eq!(err, "threw a C++ exception: pass exploded");
    let err = run_pass(lib, "fx_cycle", GRAPH, &[], &mut params).unwrap_err();
    assert!(err.contains("the rewritten graph cannot be written: the graph has a cycle"), "{err}");
    let err = run_pass(lib, "fx_gpu_param", GRAPH, &[], &mut params).unwrap_err();
    assert!(err.contains("alloc_arg(`w`): oxnet allocates pass parameters on the CPU only"), "{err}");
    assert!(params.made.is_empty());
    let err = run_pass(lib, "fx_aux", "[1, 2", &[], &mut params).unwrap_err();
    assert!(err.contains("cannot read the graph oxnet passed"), "{err}");
}

#[test]
fn a_pass_can_allocate_auxiliary_states_and_set_graph_attributes() {
    let lib = fixture();
    let mut params = Params::default();
    let out = run_pass(lib, "fx_aux", GRAPH, &[], &mut params).unwrap();
    let Param { name, aux, dtype, shape, data, .. } = &params.made[0];
    assert_eq!(
        (name.as_str(), *aux, *dtype, shape.as_slice()),
        ("moving_mean", true, abi::DTYPE_FLOAT64, &[2i64, 3][..])
    );
    let values: Vec<f64> = data.iter().map(|b| f64::from_bits(*b)).collect();
    assert_eq!(values, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
    let g = parse(&out);
    assert_eq!(nodes(&g)[5].1, "moving_mean");
    assert_eq!(g["arg_nodes"].ints(), [0, 1, 5]);
    assert_eq!(g["attrs"]["aux_added"].str(), "moving_mean");
}

#[test]
fn bad_registrations_refuse_the_load() {
    let src = common::out_dir().join(format!("cpp_graph_bad.{}.cc", std::process::id()));
    std::fs::write(&src, FIXTURE).unwrap();
    let (lib, init) = Lib::open(&compile(&src, "cpp_graph_bad", &["-DBAD_REGISTRATION"]));
    std::mem::forget(lib); // never unloaded, like the other libraries of this process
    let err = init.unwrap_err();
    for part in [
        "bad registration of partitioner `fx_bad_part`",
        "strategy `lonely` has neither supportedOps nor createSelector",
        "setReviewSubgraph for unknown strategy `missing` (call addStrategy first)",
        "bad registration of graph pass `fx_bodyless_pass`: no body (call setBody)",
    ] {
        assert!(err.contains(part), "missing `{part}` in: {err}");
    }
}

#[test]
fn the_example_is_also_valid_against_mxnets_header() {
    let Some(dir) = common::mxnet_header_dir() else {
        common::skip_without_mxnet("the_example_is_also_valid_against_mxnets_header");
        return;
    };
    let out = Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-Wall", "-I"])
        .arg(&dir)
        .arg(example_source())
        .output()
        .expect("run g++");
    assert!(
        out.status.success(),
        "subgraph_lib.cc does not compile against MXNet's header:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_example_runs_through_oxnets_host_side_calls() {
    // the same library, loaded as oxnet loads it, driven by oxnet-library's graph calls
    let lib = loaded_example();
    let by_op = lib.strategy("my_part", "by_op").unwrap();
    assert_eq!(by_op.subgraph_op_name(), "_custom_subgraph_op");
    assert_eq!(by_op.supported_ops(GRAPH, 5, &[]).unwrap(), [-1, -1, 0, -1, 0]);
    // the host grows subgraphs with the selector: g0 and g1 are not adjacent
    // (relu r0 lies between them), so each seeds its own subgraph
    let grow = lib.strategy("my_part", "grow").unwrap();
    assert_eq!(grow.supported_ops(GRAPH, 5, &[]).unwrap(), [-1, -1, 0, -1, 1]);
    let (accept, attrs) = grow.review_subgraph(GRAPH, 4, &[]).unwrap();
    assert!(accept);
    assert_eq!(attrs, strings(&[("num_gemms", "2"), ("reviewed_by", "my_part/4")]));
    assert!(!by_op.review_subgraph(GRAPH, 4, &[("reject", "true")]).unwrap().0);
    let out = lib.pass("add_bias").unwrap().run_with_zeros(GRAPH, &[]).unwrap();
    assert_eq!(out.params.len(), 1);
    assert_eq!((out.params[0].name.as_str(), out.params[0].is_aux), ("bias", false));
    assert_eq!(out.params[0].array.to_vec::<f32>().unwrap(), [1.0]);
    assert_eq!(parse(&out.graph_json)["heads"].list()[0].ints(), [6, 0, 0]);
    let err =
        lib.pass("prefix_names").unwrap().run_with_zeros("{\"nodes\": 3}", &[]).unwrap_err().to_string();
    assert!(err.contains("graph pass `prefix_names`"), "{err}");
}

fn matrix(rows: usize, cols: usize, seed: f32) -> NDArray {
    let v: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.61 + seed).sin()).collect();
    NDArray::from_vec(v, &[rows, cols]).unwrap()
}

#[test]
fn the_subgraph_operator_runs_its_subgraph() {
    loaded_example();
    // GRAPH as a subgraph: g1 = my_gemm(relu(my_gemm(x, w)), w)
    let (x, w) = (matrix(3, 4, 0.2), matrix(4, 4, 1.1));
    let got = invoke1("_custom_subgraph_op", &[&x, &w], &[("subgraph_sym_json", GRAPH.into())]).unwrap();
    let h = invoke1("relu", &[&invoke1("dot", &[&x, &w], &[]).unwrap()], &[]).unwrap();
    let want = invoke1("dot", &[&h, &w], &[]).unwrap();
    assert_eq!(got.shape(), &[3, 4]);
    oxnet_core::check::assert_close(&got, &want, 1e-5, 1e-5).unwrap();
    // its errors
    let err = invoke1("_custom_subgraph_op", &[&x, &w], &[]).unwrap_err().to_string();
    assert!(err.contains("needs its subgraph in the attribute subgraph_sym_json"), "{err}");
    let bad = GRAPH.replace("\"relu\"", "\"tanh\"");
    let err = invoke1("_custom_subgraph_op", &[&x, &w], &[("subgraph_sym_json", bad.into())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot run node `r0` (op tanh with 1 inputs)"), "{err}");
    let err = invoke1("_custom_subgraph_op", &[&w, &x], &[("subgraph_sym_json", GRAPH.into())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("node `g0` multiplies matrices of incompatible shapes"), "{err}");
}
