//! The C++ SDK's partitioners and graph passes (`include/oxnet/lib_api.h`:
//! `REGISTER_PARTITIONER`, `REGISTER_PASS`, `Graph`, `CustomOpSelector`,
//! `PassResource`), called through the C ABI directly: the example
//! `examples/extensions/cpp/subgraph/subgraph_lib.cc` and a fixture library
//! (`harness.rs`) are compiled with g++, opened with libloading, and their
//! partitioner and pass descriptors called with hand-written NNVM graphs.
//! When MXNet's own header is available (`common::mxnet_sdk`: `target/mxnet-sdk`,
//! `.venv-mxnet`, `MXNET_SDK` or `MXNET_INCLUDE`), the example is also checked
//! against it.

#[path = "../common/mod.rs"]
mod common;
mod harness;

use harness::*;
use oxnet_abi as abi;
use oxnet_core::{invoke1, NDArray};
use std::ffi::CString;
use std::process::Command;

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
