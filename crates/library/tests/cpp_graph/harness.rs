//! The harness of the C++ SDK graph tests: the fixture library's source,
//! the hand-written graph, compiling and opening the libraries, a host
//! table that logs, and wrappers over the partitioner and pass descriptors.

use oxnet_abi as abi;
use serde_json::Value as Json;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Callbacks that fail in every way the bridge must turn into messages, and
/// (with `-DBAD_REGISTRATION`) registrations that must refuse the load.
pub const FIXTURE: &str = r#"
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
pub const GRAPH: &str = r#"{"nodes": [
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

pub fn example_source() -> PathBuf {
    crate::common::repo_root().join("examples/extensions/cpp/subgraph/subgraph_lib.cc")
}

/// Compiles `source` (which includes "lib_api.h") against oxnet's header.
pub fn compile(source: &Path, name: &str, defines: &[&str]) -> PathBuf {
    let dir = crate::common::out_dir().join("native");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("lib{name}.{}.so", std::process::id()));
    let output = Command::new("g++")
        .args(["-std=c++17", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate::common::repo_root().join("include/oxnet"))
        .args(defines)
        .arg(source)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run g++");
    assert!(output.status.success(), "compiling {name} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    out
}

pub static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn log(_host: *mut c_void, level: i32, message: *const c_char) {
    let text = CStr::from_ptr(message).to_string_lossy().into_owned();
    LOG.lock().unwrap().push(format!("{level}: {text}"));
}

pub struct HostTable(abi::Host);
unsafe impl Sync for HostTable {}
unsafe impl Send for HostTable {}

pub fn host() -> *const abi::Host {
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
pub struct Lib {
    pub table: abi::Library,
    pub _lib: libloading::Library,
}
unsafe impl Sync for Lib {}
unsafe impl Send for Lib {}

impl Lib {
    /// Opens `path`, checks the table's version and sizes, and returns it with
    /// the result of its `initialize`.
    pub fn open(path: &Path) -> (Lib, Result<(), String>) {
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

    pub fn partitioners(&self) -> &[abi::Partitioner] {
        unsafe { std::slice::from_raw_parts(self.table.partitioners, self.table.num_partitioners as usize) }
    }

    pub fn passes(&self) -> &[abi::Pass] {
        unsafe { std::slice::from_raw_parts(self.table.passes, self.table.num_passes as usize) }
    }

    /// (user_data, strategy) of `partitioner`'s `strategy`.
    pub fn strategy(&self, partitioner: &str, strategy: &str) -> (*mut c_void, abi::Strategy) {
        let p = self.partitioners().iter().find(|p| s(p.name) == partitioner).expect("partitioner");
        assert_eq!(p.struct_size as usize, std::mem::size_of::<abi::Partitioner>());
        let all = unsafe { std::slice::from_raw_parts(p.strategies, p.num_strategies as usize) };
        (p.user_data, *all.iter().find(|x| s(x.name) == strategy).expect("strategy"))
    }

    pub fn pass(&self, name: &str) -> abi::Pass {
        *self.passes().iter().find(|p| s(p.name) == name).expect("pass")
    }
}

pub fn s(p: *const c_char) -> String {
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The example, compiled once (opened directly and loaded by oxnet: one copy).
pub fn example_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| compile(&example_source(), "subgraph_lib", &[])).clone()
}

pub fn example() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let (lib, init) = Lib::open(&example_path());
        init.expect("the example initialises");
        lib
    })
}

/// The example loaded as oxnet loads libraries (registering its operator).
pub fn loaded_example() -> oxnet_library::Library {
    static LIB: OnceLock<oxnet_library::Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = oxnet_library::load(example_path(), false).unwrap();
        assert_eq!(lib.op_names(), ["_custom_subgraph_op"]);
        assert_eq!(lib.subgraph_op_names(), ["_custom_subgraph_op"]);
        lib
    })
    .clone()
}

pub fn fixture() -> &'static Lib {
    static LIB: OnceLock<Lib> = OnceLock::new();
    LIB.get_or_init(|| {
        let src = crate::common::out_dir().join(format!("cpp_graph_fixture.{}.cc", std::process::id()));
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
pub fn call(f: impl FnOnce(*mut abi::Error) -> i32) -> Result<(), String> {
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
pub struct Options {
    pub _strings: Vec<CString>,
    pub keys: Vec<*const c_char>,
    pub values: Vec<*const c_char>,
}

impl Options {
    pub fn new(pairs: &[(&str, &str)]) -> Options {
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
    pub fn abi(&self) -> abi::Attrs {
        abi::Attrs { keys: self.keys.as_ptr(), values: self.values.as_ptr(), count: self.keys.len() as i32 }
    }
}

pub fn supported_ops(
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

pub fn review(
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
pub struct Param {
    pub name: String,
    pub aux: bool,
    pub dtype: i32,
    pub shape: Vec<i64>,
    pub _tensor: Box<abi::DLTensor>,
    /// The storage (8-byte words).
    pub data: Vec<u64>,
}

/// Parameters a pass allocated.
#[derive(Default)]
pub struct Params {
    pub made: Vec<Param>,
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

pub fn run_pass(
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

pub fn parse(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Accessors that fail the test with the value when the shape is wrong.
pub trait Expect {
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
pub fn nodes(g: &Json) -> Vec<(String, String, Vec<[i64; 2]>)> {
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

pub fn node_attr<'a>(g: &'a Json, node: usize, key: &str) -> Option<&'a str> {
    g["nodes"].list()[node].get("attrs").and_then(|a| a.get(key)).map(|v| v.str())
}

pub fn strings(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

pub fn log_has(text: &str) -> bool {
    LOG.lock().unwrap().iter().any(|l| l.contains(text))
}
