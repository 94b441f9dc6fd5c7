//! Files written by MXNet 1.9.1 (tests/fixtures/params, made by
//! scripts/make_params_fixtures.py) read back with the values MXNet read
//! (tests/fixtures/params/expected.json), and the exported model runs to
//! MXNet's output.

use oxnet_core::{DType, Device, NDArray, Req};
use oxnet_graph::{simple_bind, GradReqs};
use oxnet_nn::io::{self, ParamList};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/params")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn values(record: &Value) -> Vec<f64> {
    record["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap_or_else(|| if v.as_bool().unwrap() { 1.0 } else { 0.0 }))
        .collect()
}

fn shape(record: &Value) -> Vec<usize> {
    record["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect()
}

/// Checks one array against its record: exactly, but for the last bits of
/// f64 that serde_json's float parsing may lose.
fn check(a: &NDArray, record: &Value, what: &str) {
    assert_eq!(a.dtype(), DType::from_name(record["dtype"].as_str().unwrap()).unwrap(), "{what}");
    assert_eq!(a.shape(), &shape(record)[..], "{what}");
    let got = a.to_vec::<f64>().unwrap();
    let want = values(record);
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g == w || (g - w).abs() <= 1e-14 * w.abs(), "{what}[{i}]: {g} != {w}");
    }
}

fn check_file(file: &str) -> ParamList {
    let exp = &expected()[file];
    let list = io::load(&fixtures().join(file)).unwrap();
    let records = exp["arrays"].as_array().unwrap();
    assert_eq!(list.len(), records.len(), "{file}");
    match exp["kind"].as_str().unwrap() {
        "named" => {
            let names = list.names().unwrap_or_else(|| panic!("{file} should be named"));
            for (i, r) in records.iter().enumerate() {
                assert_eq!(names[i], r["name"].as_str().unwrap(), "{file}: order of names");
                check(list.arrays()[i], r, &format!("{file}:{}", names[i]));
            }
        }
        _ => {
            assert!(list.names().is_none(), "{file} should be unnamed");
            for (i, r) in records.iter().enumerate() {
                check(list.arrays()[i], r, &format!("{file}[{i}]"));
            }
        }
    }
    list
}

#[test]
fn every_fixture_reads_with_mxnets_values() {
    let exp = expected();
    let files: Vec<&String> = exp.as_object().unwrap().keys().filter(|k| k.ends_with(".params")).collect();
    assert_eq!(files.len(), 4);
    for file in files {
        check_file(file);
    }
}

#[test]
fn save_parameters_keys_and_dtypes() {
    let mlp = check_file("mlp.params");
    assert_eq!(mlp.names().unwrap(), vec!["0.weight", "0.bias", "1.weight", "1.bias"]);
    let dtypes = check_file("dtypes.params");
    let kinds: Vec<DType> = dtypes.arrays().iter().map(|a| a.dtype()).collect();
    assert_eq!(
        kinds,
        vec![DType::F32, DType::F64, DType::F16, DType::I32, DType::I64, DType::U8, DType::I8, DType::Bool]
    );
    let np = check_file("np_shape.params");
    assert_eq!(np.get("scalar").unwrap().ndim(), 0);
    assert_eq!(np.get("empty").unwrap().shape(), &[0, 3]);
}

#[test]
fn fixtures_survive_a_round_trip_through_oxnet_byte_for_byte() {
    // MXNet writes V2 records for these (no 0-d or empty arrays), so oxnet's
    // bytes must be MXNet's exactly.
    for file in ["mlp.params", "dtypes.params", "mlp-0000.params"] {
        let bytes = std::fs::read(fixtures().join(file)).unwrap();
        let list = io::from_bytes(&bytes).unwrap();
        assert_eq!(io::to_bytes(&list).unwrap(), bytes, "{file}");
    }
    // and the V3 one too (oxnet switches to V3 for its 0-d and empty arrays)
    let bytes = std::fs::read(fixtures().join("np_shape.params")).unwrap();
    assert_eq!(io::to_bytes(&io::from_bytes(&bytes).unwrap()).unwrap(), bytes);
}

#[test]
fn exported_model_runs_to_mxnets_output() {
    let exp = &expected()["mlp_forward"];
    let sym = oxnet_graph::json::load(&fixtures().join(exp["symbol"].as_str().unwrap())).unwrap();
    let params = io::load(&fixtures().join(exp["params"].as_str().unwrap())).unwrap();
    let ParamList::Named(params) = params else { panic!("exported params are named") };
    let mut args = HashMap::new();
    let mut aux = HashMap::new();
    for (name, a) in params {
        if let Some(n) = name.strip_prefix("arg:") {
            args.insert(n.to_string(), a);
        } else if let Some(n) = name.strip_prefix("aux:") {
            aux.insert(n.to_string(), a);
        } else {
            panic!("exported key without arg:/aux: prefix: {name}");
        }
    }
    let input = &exp["input"];
    let x = NDArray::from_vec(values(input).iter().map(|&v| v as f32).collect::<Vec<_>>(), &shape(input))
        .unwrap();
    let shapes = HashMap::from([("data".to_string(), shape(input))]);
    let mut exe =
        simple_bind(&sym, Device::Cpu, &GradReqs::All(Req::Null), &HashMap::new(), &shapes).unwrap();
    args.insert("data".into(), x);
    exe.copy_params_from(&args, &aux, false).unwrap();
    let out = exe.forward(false).unwrap()[0].clone();
    let want = values(&exp["output"]);
    assert_eq!(out.shape(), &shape(&exp["output"])[..]);
    for (g, w) in out.to_vec::<f64>().unwrap().iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}
