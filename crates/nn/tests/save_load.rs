//! Saving and loading block parameters: round trips, strictness, and a
//! failed load leaving the parameters unchanged.

use oxnet_core::NDArray;
use oxnet_nn::block::Block;
use oxnet_nn::collection::LoadOptions;
use oxnet_nn::init::{Uniform, Zero};
use oxnet_nn::io::{self, ParamList};
use oxnet_nn::layers::{Dense, Sequential};
use oxnet_nn::parameter::shared_init;
use std::path::PathBuf;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("oxnet_nn_{tag}_{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn net(in_units: usize) -> Sequential {
    let mut net = Sequential::new();
    net.add(Dense::new(3).in_units(in_units).activation("relu").unwrap());
    net.add(Dense::new(2).in_units(3));
    net
}

fn values(b: &dyn Block) -> Vec<Vec<f32>> {
    b.collect_params().unwrap().iter().map(|p| p.data().unwrap().to_vec::<f32>().unwrap()).collect()
}

#[test]
fn round_trip_by_structural_names() {
    let dir = TempDir::new("roundtrip");
    let path = dir.0.join("net.params");
    let a = net(4);
    a.initialize(&shared_init(Uniform::new(1.0))).unwrap();
    a.save_parameters(&path).unwrap();
    let keys = io::load(&path).unwrap().names().unwrap().iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(keys, ["0.weight", "0.bias", "1.weight", "1.bias"]);

    // another network (other prefixes), initialised differently, loads the values
    let b = net(4);
    b.initialize(&shared_init(Zero)).unwrap();
    b.load_parameters(&path).unwrap();
    assert_eq!(values(&a), values(&b));
    // a network whose shapes are still deferred takes them from the file
    let mut c = Sequential::new();
    c.add(Dense::new(3).activation("relu").unwrap());
    c.add(Dense::new(2));
    c.load_parameters(&path).unwrap();
    assert_eq!(values(&a), values(&c));
    let x = NDArray::ones(&[1, 4], oxnet_core::DType::F32, Default::default()).unwrap();
    assert_eq!(a.call(&x).unwrap().to_vec::<f32>().unwrap(), c.call(&x).unwrap().to_vec::<f32>().unwrap());
}

#[test]
fn a_failed_load_leaves_the_parameters_unchanged() {
    let dir = TempDir::new("failed");
    let path = dir.0.join("net.params");
    let a = net(4);
    a.initialize(&shared_init(Uniform::new(1.0))).unwrap();
    a.save_parameters(&path).unwrap();

    // shapes differ (in_units 5): the error names the parameter, nothing changes
    let b = net(5);
    b.initialize(&shared_init(Zero)).unwrap();
    let before = values(&b);
    let err = b.load_parameters(&path).unwrap_err().to_string();
    assert!(err.contains("0.weight") || err.contains("weight"), "{err}");
    assert!(err.contains("net.params"), "{err}");
    assert_eq!(values(&b), before);

    // a missing key and an extra key
    let arrays = match io::load(&path).unwrap() {
        ParamList::Named(v) => v,
        _ => unreachable!(),
    };
    let missing = dir.0.join("missing.params");
    io::save(&missing, &ParamList::Named(arrays[1..].to_vec())).unwrap();
    let c = net(4);
    c.initialize(&shared_init(Zero)).unwrap();
    let before = values(&c);
    let err = c.load_parameters(&missing).unwrap_err().to_string();
    assert!(err.contains("0.weight") && err.contains("missing"), "{err}");
    assert_eq!(values(&c), before);
    c.load_parameters_with(&missing, LoadOptions { allow_missing: true, ..Default::default() }).unwrap();
    assert_eq!(values(&c)[0], before[0], "the missing one keeps its value");
    assert_eq!(values(&c)[1..], values(&a)[1..]);

    let mut extra_arrays = arrays.clone();
    extra_arrays.push(("2.weight".to_string(), arrays[0].1.clone()));
    let extra = dir.0.join("extra.params");
    io::save(&extra, &ParamList::Named(extra_arrays)).unwrap();
    let err = c.load_parameters(&extra).unwrap_err().to_string();
    assert!(err.contains("2.weight") && err.contains("not present"), "{err}");
    c.load_parameters_with(&extra, LoadOptions { ignore_extra: true, ..Default::default() }).unwrap();
    assert_eq!(values(&c), values(&a));

    // a corrupt file
    let bad = dir.0.join("bad.params");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let d = net(4);
    d.initialize(&shared_init(Zero)).unwrap();
    let before = values(&d);
    let err = d.load_parameters(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.params"), "{err}");
    assert_eq!(values(&d), before);

    // another dtype: an error unless casting is allowed
    let cast = dir.0.join("f64.params");
    let f64s: Vec<(String, NDArray)> =
        arrays.iter().map(|(k, v)| (k.clone(), v.astype(oxnet_core::DType::F64).unwrap())).collect();
    io::save(&cast, &ParamList::Named(f64s)).unwrap();
    let err = d.load_parameters(&cast).unwrap_err().to_string();
    assert!(err.contains("dtype") || err.contains("float64"), "{err}");
    assert_eq!(values(&d), before);
    d.load_parameters_with(&cast, LoadOptions { cast_dtype: true, ..Default::default() }).unwrap();
    assert_eq!(values(&d), values(&a));
}

#[test]
fn full_names_round_trip_through_the_collection() {
    let dir = TempDir::new("fullnames");
    let path = dir.0.join("dict.params");
    let mut a = Sequential::new();
    a.name_scope(|a| {
        a.add(Dense::new(3).in_units(2));
        a.add(Dense::new(2).in_units(3));
    });
    a.initialize(&shared_init(Uniform::new(1.0))).unwrap();
    a.collect_params().unwrap().save(&path, a.prefix()).unwrap();
    // keys without structure: the block's prefix is restored when loading
    let names = io::load(&path).unwrap().names().unwrap().iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(names.iter().all(|n| !n.contains('.')), "{names:?}");
    let params = a.collect_params().unwrap();
    for p in &params {
        p.set_data(&NDArray::zeros(&p.shape(), p.dtype(), Default::default()).unwrap()).unwrap();
    }
    assert!(values(&a).iter().all(|v| v.iter().all(|x| *x == 0.0)));
    a.load_parameters(&path).unwrap();
    assert!(values(&a).iter().any(|v| v.iter().any(|x| *x != 0.0)));
}
