//! `optimize_for` on real graphs with loaded libraries' partitioners and
//! passes (MXNet's lib_subgraph and lib_pass flows): oxnet's C++ example
//! (`my_part` with `_custom_subgraph_op`, passes `add_bias`), and the
//! MXNet-built `mx_ops` (`mx_part`, whose subgraph operator it does not
//! define, so oxnet's host subgraph operator runs it; `mx_tag_pass`).

mod common;

use oxnet_core::{Device, NDArray, Req};
use oxnet_graph::json::{from_json, to_json};
use oxnet_graph::partition::optimize_for;
use oxnet_graph::{Executor, Symbol};
use std::path::PathBuf;

fn load(path: PathBuf) -> oxnet_library::Library {
    oxnet_library::load(path, false).unwrap()
}

/// The partitioner example, built against oxnet's lib_api.h.
fn subgraph_lib() -> PathBuf {
    let include = format!("-I{}", common::repo_root().join("include/oxnet").display());
    let source = common::repo_root().join("examples/extensions/cpp/subgraph/subgraph_lib.cc");
    common::build_native("g++", &["-std=c++17", &include], &[source], "subgraph_lib_opt")
}

fn gemm(op: &str, a: &Symbol, b: &Symbol, name: &str) -> Symbol {
    Symbol::op(op, &[a, b], &[], Some(name)).unwrap()
}

/// x, w -> gemm -> relu -> gemm(., w) -> tanh
fn chain(op: &str) -> Symbol {
    let x = Symbol::var("x");
    let w = Symbol::var("w");
    let g0 = gemm(op, &x, &w, "g0");
    let r0 = Symbol::op("relu", &[&g0], &[], Some("r0")).unwrap();
    let g1 = gemm(op, &r0, &w, "g1");
    Symbol::op("tanh", &[&g1], &[], Some("t0")).unwrap()
}

fn inputs() -> (NDArray, NDArray) {
    let x = NDArray::from_vec((0..6).map(|i| (i as f32 - 2.5) / 3.0).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let w = NDArray::from_vec((0..9).map(|i| ((i * 7 % 5) as f32 - 2.0) / 4.0).collect::<Vec<_>>(), &[3, 3])
        .unwrap();
    (x, w)
}

/// Outputs and (with `grads`) argument gradients of `sym` on `args` by name.
fn run(sym: &Symbol, args: &[(&str, NDArray)], grads: bool) -> (Vec<f32>, Vec<Vec<f32>>) {
    let names = sym.list_arguments().unwrap();
    let arrays: Vec<NDArray> = names
        .iter()
        .map(|n| {
            args.iter().find(|(k, _)| k == n).unwrap_or_else(|| panic!("no value for {n}")).1.copy().unwrap()
        })
        .collect();
    let reqs = vec![if grads { Req::Write } else { Req::Null }; names.len()];
    let g = arrays.iter().map(|a| grads.then(|| NDArray::zeros_like(a).unwrap())).collect();
    let mut exe = Executor::new(sym, Device::Cpu, arrays, g, reqs, vec![]).unwrap();
    let out = exe.forward(grads).unwrap()[0].to_vec::<f32>().unwrap();
    let mut gs = Vec::new();
    if grads {
        exe.backward(&[]).unwrap();
        gs = exe.grad_arrays().iter().map(|g| g.as_ref().unwrap().to_vec::<f32>().unwrap()).collect();
    }
    (out, gs)
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn lib_subgraph_flow_with_the_cpp_example() {
    load(common::build_cpp_example("my_gemm"));
    load(subgraph_lib());
    let net = chain("my_gemm");
    let (x, w) = inputs();
    let args = [("x", x), ("w", w)];
    let (want, _) = run(&net, &args, false);
    for strategy_options in [vec![], vec![("exclude", "g1")]] {
        let part = optimize_for(&net, "my_part", &strategy_options).unwrap().symbol;
        let json = to_json(&part).unwrap();
        assert!(json.contains("\"_custom_subgraph_op\""), "{json}");
        assert!(json.contains("\"reviewed_by\""), "{json}");
        let (got, _) = run(&part, &args, false);
        close(&got, &want);
        // exported and loaded back, the partitioned graph still runs
        let (again, _) = run(&from_json(&json).unwrap(), &args, false);
        close(&again, &want);
    }
    // the review can reject: the graph stays as it was
    let kept = optimize_for(&net, "my_part", &[("reject", "true")]).unwrap().symbol;
    assert_eq!(to_json(&kept).unwrap(), to_json(&net).unwrap());
}

#[test]
fn lib_pass_flow_with_the_cpp_example() {
    load(common::build_cpp_example("my_gemm"));
    load(subgraph_lib());
    let net = chain("my_gemm");
    let (x, w) = inputs();
    let (want, _) = run(&net, &[("x", x.clone()), ("w", w.clone())], false);
    let out = optimize_for(&net, "add_bias", &[]).unwrap();
    assert_eq!(out.new_params.len(), 1);
    let p = &out.new_params[0];
    assert_eq!((p.name.as_str(), p.is_aux), ("bias", false));
    p.array.fill(1.0).unwrap();
    let (got, _) = run(&out.symbol, &[("x", x), ("w", w), ("bias", p.array.clone())], false);
    close(&got, &want.iter().map(|v| v + 1.0).collect::<Vec<_>>());
    let renamed = optimize_for(&net, "prefix_names", &[("prefix", "p_")]).unwrap().symbol;
    assert!(to_json(&renamed).unwrap().contains("\"p_g0\""));
}

#[test]
fn mxnet_built_partitioner_with_oxnets_host_subgraph_operator() {
    let Some(sdk) = common::mxnet_sdk() else {
        common::skip_without_mxnet("mxnet_built_partitioner_with_oxnets_host_subgraph_operator");
        return;
    };
    let include = format!("-I{}", sdk.include.display());
    let source = common::repo_root().join("examples/extensions/mxnet/mx_ops.cc");
    let lib =
        common::build_native("g++", &["-std=c++11", &include], &[source, sdk.lib_api_cc.clone()], "mx_ops");
    load(lib);
    let net = chain("mx_gemm");
    let (x, w) = inputs();
    let args = [("x", x.clone()), ("w", w.clone())];
    let (want, want_grads) = run(&net, &args, true);
    for strategy in [vec![("ops", "mx_gemm,relu")], vec![]] {
        let part = optimize_for(&net, "mx_part", &strategy).unwrap().symbol;
        let json = to_json(&part).unwrap();
        assert!(json.contains("\"_mx_subgraph_op\""), "{json}");
        assert!(json.contains("\"mx_reviewed\""), "{json}");
        let (got, got_grads) = run(&part, &args, true);
        close(&got, &want);
        for (a, b) in got_grads.iter().zip(&want_grads) {
            close(a, b);
        }
    }
    let tagged = optimize_for(&net, "mx_tag_pass", &[("tag", "hello")]).unwrap().symbol;
    assert!(to_json(&tagged).unwrap().contains("\"mx_tag\": \"hello\""));
    let (got, _) = run(&tagged, &args, false);
    close(&got, &want);
    let err = optimize_for(&net, "mx_part", &[("fail", "1")]).err().unwrap().to_string();
    assert!(err.contains("mx_part: asked to fail"), "{err}");
}
