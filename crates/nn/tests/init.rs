//! Initializers: values of each built-in, MXNet's dispatch by name, the JSON
//! form, and reproducibility under a seed.

use oxnet_core::{random, DType, Device, NDArray};
use oxnet_nn::init::{
    self, fans, from_json, Bilinear, Constant, FactorType, InitDesc, Initializer, LSTMBias, Load, MSRAPrelu,
    Mixed, Normal, One, OrthoRandType, Orthogonal, RandType, Uniform, Xavier, Zero,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Tests share the global generator; each holds this lock while it draws.
static RNG_LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    RNG_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn zeros(shape: &[usize], dtype: DType) -> NDArray {
    NDArray::zeros(shape, dtype, Device::Cpu).unwrap()
}

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn fill(init: &dyn Initializer, name: &str, shape: &[usize]) -> Vec<f64> {
    let a = zeros(shape, DType::F32);
    init.init(&InitDesc::new(name), &a).unwrap();
    values(&a)
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

// ----- constants ---------------------------------------------------------------

#[test]
fn zero_one_constant_fill_every_float_dtype_exactly() {
    for dtype in [DType::F32, DType::F64, DType::F16] {
        let a = NDArray::full(&[2, 3], 7.0, dtype, Device::Cpu).unwrap();
        Zero.init(&InitDesc::new("w_weight"), &a).unwrap();
        assert_eq!(values(&a), vec![0.0; 6], "{dtype:?}");
        One.init(&InitDesc::new("w_weight"), &a).unwrap();
        assert_eq!(values(&a), vec![1.0; 6], "{dtype:?}");
        Constant::new(0.5).init(&InitDesc::new("w_weight"), &a).unwrap();
        assert_eq!(values(&a), vec![0.5; 6], "{dtype:?}");
    }
}

#[test]
fn constant_arrays_broadcast_as_mxnet_assignment_does() {
    let row = Constant::from_values(vec![1.0, 2.0, 3.0], vec![3]).unwrap();
    assert_eq!(fill(&row, "a_weight", &[2, 3]), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    let col = Constant::from_values(vec![1.0, 2.0], vec![2, 1]).unwrap();
    assert_eq!(fill(&col, "a_weight", &[2, 3]), vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    let extra = Constant::from_values(vec![5.0, 6.0, 7.0], vec![1, 1, 3]).unwrap();
    assert_eq!(fill(&extra, "a_weight", &[2, 3]), vec![5.0, 6.0, 7.0, 5.0, 6.0, 7.0]);
    let bad = Constant::from_values(vec![1.0, 2.0], vec![2]).unwrap();
    let err = bad.init(&InitDesc::new("a_weight"), &zeros(&[2, 3], DType::F32)).unwrap_err().to_string();
    assert!(err.contains("a_weight") && err.contains("[2]"), "{err}");
}

#[test]
fn constant_reads_and_writes_nested_lists() {
    let c = from_json(r#"["constant", {"value": [[1, 2], [3, 4.5]]}]"#).unwrap();
    assert_eq!(fill(c.as_ref(), "x_weight", &[2, 2]), vec![1.0, 2.0, 3.0, 4.5]);
    assert_eq!(c.to_json().unwrap(), r#"["constant", {"value": [[1, 2], [3, 4.5]]}]"#);
    assert_eq!(Constant::new(3.0).to_json().unwrap(), r#"["constant", {"value": 3}]"#);
    let err = from_json(r#"["constant", {"value": [[1, 2], [3]]}]"#).unwrap_err().to_string();
    assert!(err.contains("constant") && err.contains("value") && err.contains("ragged"), "{err}");
    let err = from_json("constant").unwrap_err().to_string();
    assert!(err.contains("constant") && err.contains("value"), "{err}");
}

#[test]
fn lstm_bias_sets_the_forget_gate_only() {
    let v = fill(&LSTMBias::new(2.5), "lstm_bias", &[8]);
    // the name ends in bias: dispatch sends it to init_bias (zeros) ...
    assert_eq!(v, vec![0.0; 8]);
    // ... unless the parameter names LSTMBias explicitly
    let a = zeros(&[8, 2], DType::F32);
    let desc = InitDesc::with_init("lstm_i2h_bias", &LSTMBias::new(2.5)).unwrap();
    Zero.init(&desc, &a).unwrap();
    let mut want = vec![0.0; 16];
    want[4..8].fill(2.5);
    assert_eq!(values(&a), want);
}

// ----- random draws --------------------------------------------------------------

#[test]
fn uniform_stays_in_bounds_with_the_right_moments() {
    let _g = lock();
    let v = fill(&Uniform::new(0.5), "w_weight", &[400, 250]);
    assert!(v.iter().all(|x| (-0.5..=0.5).contains(x)));
    let (mean, std) = mean_std(&v);
    assert!(mean.abs() < 0.01, "mean {mean}");
    // variance of U(-a, a) is a²/3
    assert!((std - 0.5 / 3f64.sqrt()).abs() < 0.005, "std {std}");
    assert!(v.iter().cloned().fold(f64::MIN, f64::max) > 0.49);
    assert!(v.iter().cloned().fold(f64::MAX, f64::min) < -0.49);
    let v = fill(&Uniform::default(), "w_weight", &[1000]);
    assert!(v.iter().all(|x| x.abs() <= 0.07 + 1e-7));
}

#[test]
fn normal_has_the_right_moments() {
    let _g = lock();
    let v = fill(&Normal::new(2.0), "w_weight", &[100_000]);
    let (mean, std) = mean_std(&v);
    assert!(mean.abs() < 0.03, "mean {mean}");
    assert!((std - 2.0).abs() < 0.03, "std {std}");
}

#[test]
fn draws_are_reproducible_under_a_seed() {
    let _g = lock();
    let inits: Vec<Box<dyn Initializer>> = vec![
        Box::new(Uniform::new(1.0)),
        Box::new(Normal::new(1.0)),
        Box::new(Xavier::default()),
        Box::new(MSRAPrelu::default()),
        Box::new(Orthogonal::default()),
    ];
    for init in &inits {
        random::seed(42);
        let a = fill(init.as_ref(), "w_weight", &[6, 5]);
        random::seed(42);
        let b = fill(init.as_ref(), "w_weight", &[6, 5]);
        random::seed(43);
        let c = fill(init.as_ref(), "w_weight", &[6, 5]);
        assert_eq!(a, b, "{init:?}");
        assert_ne!(a, c, "{init:?}");
    }
}

#[test]
fn xavier_scale_by_hand() {
    let x = |r, f, m| Xavier::new(r, f, m);
    // dense (64, 32): fan_in 32, fan_out 64
    assert_eq!(fans("w", &[64, 32]).unwrap(), (32.0, 64.0));
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    close(x(RandType::Uniform, FactorType::Avg, 3.0).scale("w", &[64, 32]).unwrap(), (3.0f64 / 48.0).sqrt());
    close(x(RandType::Uniform, FactorType::In, 3.0).scale("w", &[64, 32]).unwrap(), (3.0f64 / 32.0).sqrt());
    close(x(RandType::Uniform, FactorType::Out, 2.0).scale("w", &[64, 32]).unwrap(), (2.0f64 / 64.0).sqrt());
    // convolution (16, 8, 3, 3): fan_in 8*9 = 72, fan_out 16*9 = 144
    assert_eq!(fans("w", &[16, 8, 3, 3]).unwrap(), (72.0, 144.0));
    close(
        x(RandType::Gaussian, FactorType::Avg, 3.0).scale("w", &[16, 8, 3, 3]).unwrap(),
        (3.0f64 / 108.0).sqrt(),
    );
    close(
        x(RandType::Gaussian, FactorType::In, 2.0).scale("w", &[16, 8, 3, 3]).unwrap(),
        (2.0f64 / 72.0).sqrt(),
    );
    // 3-D (4, 6, 5): hw = 5
    assert_eq!(fans("w", &[4, 6, 5]).unwrap(), (30.0, 20.0));
}

#[test]
fn xavier_draws_match_their_scale() {
    let _g = lock();
    // uniform, avg, (300, 200): c = sqrt(3 / 250)
    let c = (3.0f64 / 250.0).sqrt();
    let v = fill(&Xavier::default(), "fc_weight", &[300, 200]);
    assert!(v.iter().all(|x| x.abs() <= c + 1e-7));
    assert!(v.iter().any(|x| x.abs() > 0.99 * c));
    let (_, std) = mean_std(&v);
    assert!((std - c / 3f64.sqrt()).abs() < 0.01 * c, "std {std}");
    // gaussian, in, conv (64, 32, 3, 3): sigma = sqrt(2 / 288)
    let s = (2.0f64 / 288.0).sqrt();
    let v = fill(&Xavier::new(RandType::Gaussian, FactorType::In, 2.0), "conv_weight", &[64, 32, 3, 3]);
    let (mean, std) = mean_std(&v);
    assert!(mean.abs() < 0.02 * s && (std - s).abs() < 0.02 * s, "mean {mean} std {std} want {s}");
    // MSRAPrelu(out, slope 0.5) on (128, 64): gaussian, magnitude 2/1.25, fan_out 128
    let s = (2.0f64 / 1.25 / 128.0).sqrt();
    let v = fill(&MSRAPrelu::new(FactorType::Out, 0.5), "fc_weight", &[128, 64]);
    let (_, std) = mean_std(&v);
    assert!((std - s).abs() < 0.03 * s, "std {std} want {s}");
}

#[test]
fn xavier_needs_two_dimensions_and_names_the_parameter() {
    let err = Xavier::default().init(&InitDesc::new("dense0_weight"), &zeros(&[5], DType::F32)).unwrap_err();
    assert!(err.to_string().contains("dense0_weight"), "{err}");
    let err = MSRAPrelu::default().init(&InitDesc::new("p_weight"), &zeros(&[], DType::F32)).unwrap_err();
    assert!(err.to_string().contains("p_weight"), "{err}");
}

#[test]
fn orthogonal_rows_or_columns_are_orthonormal() {
    let _g = lock();
    let check = |shape: &[usize], scale: f64, rand: OrthoRandType| {
        let v = fill(&Orthogonal::new(scale, rand), "w_weight", shape);
        let rows = shape[0];
        let cols = v.len() / rows;
        // the Gram matrix of the shorter side is scale² I
        let (n, get): (usize, Box<dyn Fn(usize, usize) -> f64>) = if rows <= cols {
            (rows, Box::new(|i, k| v[i * cols + k]))
        } else {
            (cols, Box::new(|i, k| v[k * cols + i]))
        };
        let len = rows.max(cols);
        for i in 0..n {
            for j in 0..n {
                let d: f64 = (0..len).map(|k| get(i, k) * get(j, k)).sum();
                let want = if i == j { scale * scale } else { 0.0 };
                assert!((d - want).abs() < 1e-5, "{shape:?} ({i},{j}): {d}");
            }
        }
    };
    check(&[4, 10], 1.414, OrthoRandType::Uniform);
    check(&[10, 4], 1.0, OrthoRandType::Normal);
    check(&[6, 6], 2.0, OrthoRandType::Uniform);
    check(&[4, 2, 2, 2], 1.0, OrthoRandType::Normal);
}

#[test]
fn bilinear_matches_hand_computed_kernels() {
    // width 4: f = 2, c = 0.75, profile [0.25, 0.75, 0.75, 0.25]
    let p = [0.25, 0.75, 0.75, 0.25];
    let want: Vec<f64> = (0..16).map(|i| p[i / 4] * p[i % 4]).collect();
    assert_eq!(fill(&Bilinear, "up_weight", &[1, 1, 4, 4]), want);
    // width 5, height 3: f = 3, c = 2/3, x profile [1/3, 2/3, 1, 2/3, 1/3], y profile [1/3, 2/3, 1]
    let px = [1.0 / 3.0, 2.0 / 3.0, 1.0, 2.0 / 3.0, 1.0 / 3.0];
    let py = [1.0 / 3.0, 2.0 / 3.0, 1.0];
    let want: Vec<f64> = (0..30).map(|i| ((py[(i / 5) % 3] * px[i % 5]) as f32) as f64).collect();
    assert_eq!(fill(&Bilinear, "up_weight", &[2, 1, 3, 5]), want);
    let err = Bilinear.init(&InitDesc::new("up_weight"), &zeros(&[3, 3], DType::F32)).unwrap_err();
    assert!(err.to_string().contains("up_weight"), "{err}");
}

#[test]
fn initializers_fill_strided_views() {
    let base = zeros(&[3, 4], DType::F64);
    let view = base.transpose(None).unwrap(); // (4, 3), not contiguous
    Constant::from_values(vec![1.0, 2.0, 3.0], vec![3])
        .unwrap()
        .init(&InitDesc::new("t_weight"), &view)
        .unwrap();
    assert_eq!(values(&base), vec![1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0]);
}

// ----- dispatch ----------------------------------------------------------------------

#[test]
fn dispatch_follows_the_name_suffix() {
    let _g = lock(); // `_quantize` weights draw random integers
    let c = Constant::new(7.0);
    let cases = [
        ("fc_weight", 7.0),
        ("fc_bias", 0.0),
        ("bn_gamma", 1.0),
        ("bn_beta", 0.0),
        ("q_min", 0.0),
        ("q_max", 1.0),
        ("fc_weight_quantize", f64::NAN), // random integers
        ("fc_bias_quantize", 0.0),
    ];
    for (name, want) in cases {
        let a = NDArray::full(&[4], 3.0, DType::F32, Device::Cpu).unwrap();
        c.init(&InitDesc::new(name), &a).unwrap();
        if want.is_nan() {
            assert!(values(&a).iter().all(|x| x.fract() == 0.0 && (-127.0..127.0).contains(x)), "{name}");
        } else {
            assert_eq!(values(&a), vec![want; 4], "{name}");
        }
    }
    let err = c.init(&InitDesc::new("bn_running_mean"), &zeros(&[4], DType::F32)).unwrap_err();
    assert!(err.to_string().contains("bn_running_mean"), "{err}");
}

#[test]
fn init_attribute_overrides_the_name() {
    let a = zeros(&[2, 2], DType::F32);
    let mut attrs = BTreeMap::new();
    attrs.insert("__init__".to_string(), r#"["constant", {"value": 4}]"#.to_string());
    // a bias that would be zero, and a name with no rule at all
    for name in ["fc_bias", "bn_running_mean"] {
        Xavier::default().init(&InitDesc::with_attrs(name, attrs.clone()), &a).unwrap();
        assert_eq!(values(&a), vec![4.0; 4]);
    }
    attrs.insert("__init__".to_string(), "ones".to_string());
    Zero.init(&InitDesc::with_attrs("bn_running_var", attrs.clone()), &a).unwrap();
    assert_eq!(values(&a), vec![1.0; 4]);
    // an empty attribute is ignored
    attrs.insert("__init__".to_string(), String::new());
    One.init(&InitDesc::with_attrs("fc_bias", attrs), &a).unwrap();
    assert_eq!(values(&a), vec![0.0; 4]);
}

#[test]
fn legacy_names_follow_mxnets_older_rules() {
    let c = Constant::new(7.0);
    let cases = [
        ("bn_moving_mean", 0.0),
        ("bn_moving_var", 1.0),
        ("bn_moving_inv_var", 0.0),
        ("bn_moving_avg", 0.0),
        ("stn_loc_weight", 0.0),
        ("fc_weight", 7.0),
        ("fc_bias", 0.0),
    ];
    for (name, want) in cases {
        let a = NDArray::full(&[6], 3.0, DType::F32, Device::Cpu).unwrap();
        c.init_legacy(name, &a).unwrap();
        assert_eq!(values(&a), vec![want; 6], "{name}");
    }
    let a = zeros(&[6], DType::F32);
    c.init_legacy("stn_loc_bias", &a).unwrap();
    assert_eq!(values(&a), vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    let a = zeros(&[1, 1, 4, 4], DType::F32);
    c.init_legacy("upsampling0_weight", &a).unwrap();
    assert_eq!(values(&a)[5], 0.5625);
}

#[test]
fn mixed_picks_the_first_matching_pattern() {
    let mixed = Mixed::new(
        &["fc1_.*", ".*bias", ".*"],
        vec![Box::new(Constant::new(2.0)), Box::new(Constant::new(5.0)), Box::new(One)],
    )
    .unwrap();
    assert_eq!(fill(&mixed, "fc1_weight", &[2]), vec![2.0; 2]);
    // the chosen initializer still dispatches by name: a bias gets zeros
    assert_eq!(fill(&mixed, "fc2_bias", &[2]), vec![0.0; 2]);
    assert_eq!(fill(&mixed, "fc2_weight", &[2]), vec![1.0; 2]);
    // patterns match at the start of the name, as Python's re.match
    let only = Mixed::new(&["bias"], vec![Box::new(One)]).unwrap();
    let err = only.init(&InitDesc::new("fc_bias"), &zeros(&[2], DType::F32)).unwrap_err().to_string();
    assert!(err.contains("fc_bias") && err.contains("bias"), "{err}");
    assert!(Mixed::new(&["("], vec![Box::new(One)]).unwrap_err().to_string().contains("patterns"));
    assert!(Mixed::new(&["a", "b"], vec![Box::new(One)]).is_err());
    // and round-trips through JSON
    let back = from_json(&mixed.to_json().unwrap()).unwrap();
    assert_eq!(fill(back.as_ref(), "fc1_weight", &[2]), vec![2.0; 2]);
}

#[test]
fn load_copies_by_name_and_falls_back() {
    let saved = vec![
        ("arg:fc_weight".to_string(), NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap()),
        ("aux:bn_moving_var".to_string(), NDArray::from_vec(vec![9.0f64, 8.0], &[2]).unwrap()),
    ];
    let load = Load::new(saved.clone(), Some(Box::new(Constant::new(5.0))), false);
    assert_eq!(load.names().collect::<Vec<_>>(), vec!["bn_moving_var", "fc_weight"]);
    assert_eq!(fill(&load, "fc_weight", &[2, 2]), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(fill(&load, "bn_moving_var", &[2]), vec![9.0, 8.0]);
    assert_eq!(fill(&load, "other_weight", &[3]), vec![5.0; 3]);
    let err = load.init(&InitDesc::new("fc_weight"), &zeros(&[4], DType::F32)).unwrap_err().to_string();
    assert!(err.contains("fc_weight") && err.contains("shape mismatch"), "{err}");
    let bare = Load::new(saved, None, false);
    let err = bare.init(&InitDesc::new("x_weight"), &zeros(&[4], DType::F32)).unwrap_err().to_string();
    assert!(err.contains("x_weight") && err.contains("no default"), "{err}");
    assert!(bare.to_json().is_err());
}

// ----- JSON and names ---------------------------------------------------------------

#[test]
fn dumps_matches_mxnet() {
    let cases: Vec<(Box<dyn Initializer>, &str)> = vec![
        (
            Box::new(Xavier::default()),
            r#"["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]"#,
        ),
        (Box::new(MSRAPrelu::default()), r#"["msraprelu", {"factor_type": "avg", "slope": 0.25}]"#),
        (Box::new(Orthogonal::default()), r#"["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]"#),
        (Box::new(Uniform::new(0.1)), r#"["uniform", {"scale": 0.1}]"#),
        (Box::new(Normal::default()), r#"["normal", {"sigma": 0.01}]"#),
        (Box::new(Bilinear), r#"["bilinear", {}]"#),
        (Box::new(Zero), r#"["zero", {}]"#),
        (Box::new(One), r#"["one", {}]"#),
        (Box::new(LSTMBias::default()), r#"["lstmbias", {"forget_bias": 1}]"#),
    ];
    for (init, want) in cases {
        let text = init.to_json().unwrap();
        assert_eq!(text, want);
        assert_eq!(from_json(&text).unwrap().to_json().unwrap(), want);
    }
}

#[test]
fn from_json_takes_names_lists_and_objects() {
    for (spec, want) in [
        ("zeros", r#"["zero", {}]"#),
        ("Ones", r#"["one", {}]"#),
        ("XAVIER", r#"["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]"#),
        ("uniform", r#"["uniform", {"scale": 0.07}]"#),
        ("normal", r#"["normal", {"sigma": 0.01}]"#),
        ("msraprelu", r#"["msraprelu", {"factor_type": "avg", "slope": 0.25}]"#),
        (
            r#"["Xavier", {"magnitude": 2.34, "factor_type": "in"}]"#,
            r#"["xavier", {"rnd_type": "uniform", "factor_type": "in", "magnitude": 2.34}]"#,
        ),
        (r#"{"initializer": "normal", "sigma": "0.5"}"#, r#"["normal", {"sigma": 0.5}]"#),
        (r#"["zeros"]"#, r#"["zero", {}]"#),
    ] {
        assert_eq!(from_json(spec).unwrap().to_json().unwrap(), want, "{spec}");
    }
    assert!(init::registered_names().contains(&"msraprelu".to_string()));
}

#[test]
fn bad_specs_name_the_initializer_and_argument() {
    let cases = [
        ("nosuch", vec!["nosuch"]),
        (r#"["xavier", {"rnd_type": "cauchy"}]"#, vec!["xavier", "rnd_type", "cauchy"]),
        (r#"["xavier", {"factor_type": "mid"}]"#, vec!["xavier", "factor_type"]),
        (r#"["msraprelu", {"factor_type": "mid"}]"#, vec!["msraprelu", "factor_type"]),
        (r#"["orthogonal", {"rand_type": "gaussian"}]"#, vec!["orthogonal", "rand_type"]),
        (r#"["uniform", {"scale": "wide"}]"#, vec!["uniform", "scale"]),
        (r#"["normal", {"sigma": 1, "mean": 2}]"#, vec!["normal", "mean", "unexpected"]),
        (r#"["xavier", {"magnitude": 3"#, vec!["not valid JSON"]),
        ("", vec!["empty"]),
    ];
    for (spec, words) in cases {
        let err = match from_json(spec) {
            Ok(i) => panic!("{spec} built {i:?}"),
            Err(e) => e.to_string(),
        };
        for w in words {
            assert!(err.contains(w), "{spec}: {err}");
        }
    }
    let err = Uniform::new(-1.0).init(&InitDesc::new("w_weight"), &zeros(&[2], DType::F32)).unwrap_err();
    assert!(err.to_string().contains("scale"), "{err}");
}

#[derive(Debug)]
struct Halves;

impl Initializer for Halves {
    fn name(&self) -> &str {
        "halves"
    }
    fn kwargs(&self) -> oxnet_core::Result<Vec<(String, serde_json::Value)>> {
        Ok(Vec::new())
    }
    fn init_weight(&self, _desc: &InitDesc, arr: &NDArray) -> oxnet_core::Result<()> {
        arr.fill(0.5)
    }
}

#[test]
fn user_initializers_register_by_name() {
    init::register("Halves", Arc::new(|_args| Ok(Box::new(Halves))));
    let h = from_json("halves").unwrap();
    assert_eq!(fill(h.as_ref(), "fc_weight", &[3]), vec![0.5; 3]);
    assert_eq!(fill(h.as_ref(), "fc_bias", &[3]), vec![0.0; 3]);
    let err = from_json(r#"["halves", {"x": 1}]"#).unwrap_err().to_string();
    assert!(err.contains("halves") && err.contains('x'), "{err}");
    let a = zeros(&[2], DType::F32);
    One.init(&InitDesc::with_init("fc_bias", &Halves).unwrap(), &a).unwrap();
    assert_eq!(values(&a), vec![0.5; 2]);
}
