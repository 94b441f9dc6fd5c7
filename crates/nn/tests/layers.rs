//! Layers against hand-computed values and gradients; naming; errors.

use oxnet_core::custom::{self, CustomOp, CustomOpProp};
use oxnet_core::{autograd, invoke1, DType, Device, NDArray, Req, Result, Shape};
use oxnet_nn::block::Block;
use oxnet_nn::init::{Constant, One};
use oxnet_nn::layers::{
    Activation, CustomLayer, Dense, Dropout, Flatten, Identity, LeakyReLU, Sequential, Swish, ELU, GELU, SELU,
};
use oxnet_nn::parameter::{shared_init, Parameter};
use std::sync::Arc;

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn close(got: &NDArray, want: &[f64], tol: f64) {
    let got = got.to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{got:?} vs {want:?}");
    }
}

#[test]
fn dense_matches_hand_computed_values_and_gradients() {
    let dense = Dense::new(2).in_units(3);
    dense.initialize(&shared_init(One)).unwrap();
    dense.weight().set_data(&arr(&[1.0, 2.0, 3.0, -1.0, 0.0, 1.0], &[2, 3])).unwrap();
    dense.bias().unwrap().set_data(&arr(&[0.5, -0.5], &[2])).unwrap();
    let x = arr(&[1.0, 1.0, 1.0, 2.0, 0.0, -1.0], &[2, 3]);
    let y = {
        let _r = autograd::record();
        dense.call(&x).unwrap()
    };
    // rows: [1+2+3+0.5, -1+0+1-0.5] = [6.5, -0.5]; [2-3+0.5, -2-1-0.5] = [-0.5, -3.5]
    close(&y, &[6.5, -0.5, -0.5, -3.5], 1e-6);
    // d(sum(y·c))/dW = cᵀ·x, with c = [[1, 2], [3, 4]]
    let c = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    autograd::backward(&[&y], &[Some(&c)], Default::default()).unwrap();
    close(&dense.weight().grad().unwrap(), &[7.0, 1.0, -2.0, 10.0, 2.0, -2.0], 1e-6);
    close(&dense.bias().unwrap().grad().unwrap(), &[4.0, 6.0], 1e-6);
}

#[test]
fn dense_infers_in_units_and_applies_its_activation() {
    let dense = Dense::new(2).activation("relu").unwrap().use_bias(false);
    dense.initialize(&shared_init(Constant::new(-1.0))).unwrap();
    assert!(dense.weight().is_deferred());
    assert!(dense.bias().is_none());
    let x = arr(&[1.0, -2.0, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0], &[2, 2, 2]);
    // flatten: (2, 4); weight (2, 4) of -1: outputs -0 ... relu
    let y = dense.call(&x).unwrap();
    assert_eq!(dense.weight().shape(), vec![2, 4]);
    close(&y, &[0.0, 0.0, 0.0, 0.0], 0.0);
    // without flatten the last axis holds the features
    let d2 = Dense::new(3).flatten(false);
    d2.initialize(&shared_init(One)).unwrap();
    let y = d2.call(&x).unwrap();
    assert_eq!(y.shape(), &[2, 2, 3]);
    assert_eq!(d2.weight().shape(), vec![3, 2]);
    close(&y.slice_axis(0, 0, Some(1)).unwrap(), &[-1.0, -1.0, -1.0, 1.0, 1.0, 1.0], 1e-6);
}

#[test]
fn dense_errors_name_the_block() {
    let dense = Dense::new(2).in_units(3);
    dense.initialize(&shared_init(One)).unwrap();
    let err = dense.call(&arr(&[1.0; 8], &[2, 4])).unwrap_err().to_string();
    assert!(err.contains(dense.name()) && err.contains("(2, 3)"), "{err}");
    let fresh = Dense::new(2);
    let err = fresh.call(&arr(&[1.0; 4], &[2, 2])).unwrap_err().to_string();
    assert!(err.contains(&format!("{}weight", fresh.prefix())) && err.contains("initialize"), "{err}");
    assert!(Dense::new(2).activation("wobble").is_err());
}

#[test]
fn activations_match_their_formulas() {
    let xs = [-2.0f32, -0.5, 0.0, 1.5];
    let x = arr(&xs, &[4]);
    let f = |f: &dyn Fn(f64) -> f64| xs.iter().map(|&v| f(v as f64)).collect::<Vec<f64>>();
    close(&Activation::new("tanh").unwrap().call(&x).unwrap(), &f(&|v| v.tanh()), 1e-6);
    close(&Activation::new("softrelu").unwrap().call(&x).unwrap(), &f(&|v| (1.0 + v.exp()).ln()), 1e-6);
    close(&LeakyReLU::new(0.1).unwrap().call(&x).unwrap(), &f(&|v| if v > 0.0 { v } else { 0.1 * v }), 1e-6);
    close(&ELU::new(1.0).unwrap().call(&x).unwrap(), &f(&|v| if v > 0.0 { v } else { v.exp() - 1.0 }), 1e-6);
    let (l, a) = (1.050_700_987_355_480_5, 1.673_263_242_354_377_3);
    close(
        &SELU::new().unwrap().call(&x).unwrap(),
        &f(&|v| l * if v > 0.0 { v } else { a * (v.exp() - 1.0) }),
        1e-5,
    );
    // GELU: x·Φ(x), Φ(-2) = 0.02275, Φ(-0.5) = 0.30854, Φ(1.5) = 0.93319
    close(
        &GELU::new().unwrap().call(&x).unwrap(),
        &[-2.0 * 0.022_750_1, -0.5 * 0.308_537_5, 0.0, 1.5 * 0.933_192_8],
        1e-4,
    );
    close(&Swish::new(2.0).unwrap().call(&x).unwrap(), &f(&|v| v / (1.0 + (-2.0 * v).exp())), 1e-6);
    assert!(LeakyReLU::new(-1.0).is_err());
}

#[test]
fn dropout_flatten_identity() {
    let x = arr(&[1.0; 1000], &[10, 100]);
    let d = Dropout::new(0.5).unwrap();
    close(&d.call(&x).unwrap(), &vec![1.0; 1000], 0.0);
    let y = {
        let _t = autograd::train_mode();
        d.call(&x).unwrap().to_vec::<f32>().unwrap()
    };
    let kept = y.iter().filter(|&&v| v != 0.0).count();
    assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
    assert!((350..650).contains(&kept), "{kept}");
    assert!(Dropout::new(1.5).is_err());
    let f = Flatten::new().unwrap().call(&arr(&[0.0; 24], &[2, 3, 4])).unwrap();
    assert_eq!(f.shape(), &[2, 12]);
    let i = Identity::new().forward(&[x.clone(), f.clone()]).unwrap();
    assert!(i[0].same_handle(&x) && i[1].same_handle(&f));
}

#[test]
fn sequential_names_children_and_chains() {
    let mut net = Sequential::new();
    net.name_scope(|net| {
        net.add(Dense::new(3).in_units(2));
        net.add(Dense::new(1));
    });
    let prefix = net.prefix().to_string();
    let names: Vec<String> = net.collect_params().unwrap().names().iter().map(|s| s.to_string()).collect();
    assert_eq!(
        names,
        ["dense0_weight", "dense0_bias", "dense1_weight", "dense1_bias"].map(|n| format!("{prefix}{n}"))
    );
    let structural: Vec<String> = net.collect_params_with_prefix().into_iter().map(|(k, _)| k).collect();
    assert_eq!(structural, ["0.weight", "0.bias", "1.weight", "1.bias"]);
    assert_eq!(net.collect_params_matching("weight$").unwrap().len(), 2);
    net.initialize(&shared_init(One)).unwrap();
    // [1, 2] → dense0 (ones, bias 0) → [3, 3, 3] → dense1 → [9]
    close(&net.call(&arr(&[1.0, 2.0], &[1, 2])).unwrap(), &[9.0], 1e-6);
    let err = net.call(&arr(&[1.0, 2.0, 3.0], &[1, 3])).unwrap_err().to_string();
    assert!(err.contains(net.name()) && err.contains(&format!("{prefix}dense0")), "{err}");
}

/// `y = x · scale` with a per-feature scale, as a Rust custom operator.
struct ScaleOp;

impl CustomOp for ScaleOp {
    fn forward(&self, _: bool, req: &[Req], ins: &[NDArray], outs: &[NDArray], _: &[NDArray]) -> Result<()> {
        custom::assign(&outs[0], req[0], &invoke1("broadcast_mul", &[&ins[0], &ins[1]], &[])?)
    }

    fn backward(
        &self,
        req: &[Req],
        og: &[NDArray],
        ins: &[NDArray],
        _: &[NDArray],
        ig: &[NDArray],
        _: &[NDArray],
    ) -> Result<()> {
        custom::assign(&ig[0], req[0], &invoke1("broadcast_mul", &[&og[0], &ins[1]], &[])?)?;
        let prod = invoke1("elemwise_mul", &[&og[0], &ins[0]], &[])?;
        custom::assign(&ig[1], req[1], &invoke1("sum", &[&prod], &[("axis", 0i64.into())])?)
    }
}

struct ScaleProp;

impl CustomOpProp for ScaleProp {
    fn list_arguments(&self) -> Vec<String> {
        vec!["data".into(), "scale".into()]
    }

    fn infer_shape(&self, s: &[Shape]) -> Result<(Vec<Shape>, Vec<Shape>, Vec<Shape>)> {
        Ok((vec![s[0].clone(), Shape::from_slice(&[s[0][1]])], vec![s[0].clone()], vec![]))
    }

    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(ScaleOp))
    }
}

#[test]
fn custom_layer_puts_a_users_operator_in_a_network() {
    custom::register("nn_test_scale", |_| Ok(Arc::new(ScaleProp)));
    let layer = CustomLayer::custom("nn_test_scale", &[]).unwrap().with_param("scale", &[2], None);
    let mut net = Sequential::new();
    net.add(layer);
    net.add(Dense::new(1).in_units(2));
    net.initialize(&shared_init(One)).unwrap();
    let x = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let scale = net.collect_params().unwrap().iter().next().unwrap().clone();
    scale.set_data(&arr(&[2.0, -1.0], &[2])).unwrap();
    let y = {
        let _r = autograd::record();
        net.call(&x).unwrap()
    };
    close(&y, &[0.0, 2.0], 1e-6);
    y.backward().unwrap();
    // d(sum(x·s))/ds = column sums of x
    close(&scale.grad().unwrap(), &[4.0, 6.0], 1e-6);
    let err = CustomLayer::custom("nn_test_missing_op", &[]).err().unwrap().to_string();
    assert!(err.contains("nn_test_missing_op"), "{err}");
    // a built-in operator with an inferred parameter shape, and one that cannot be inferred
    let fc = CustomLayer::op("FullyConnected", &[("num_hidden", 1i64.into()), ("no_bias", true.into())])
        .unwrap()
        .with_param("weight", &[1, 0], None);
    fc.initialize(&shared_init(One)).unwrap();
    close(&fc.call(&x).unwrap(), &[3.0, 7.0], 1e-6);
    // a custom operator's own inference fills its parameter's shape too
    let inferred = CustomLayer::custom("nn_test_scale", &[]).unwrap().with_param("scale", &[0], None);
    inferred.initialize(&shared_init(One)).unwrap();
    close(&inferred.call(&x).unwrap(), &[1.0, 2.0, 3.0, 4.0], 0.0);
    assert_eq!(inferred.param("scale").unwrap().shape(), vec![2]);
    let bad = CustomLayer::op("broadcast_add", &[]).unwrap().with_param("offset", &[0], None);
    bad.initialize(&shared_init(One)).unwrap();
    let err = bad.call(&x).unwrap_err().to_string();
    assert!(err.contains(&format!("{}offset", bad.prefix())) && err.contains("cannot be inferred"), "{err}");
}

#[test]
fn a_block_written_by_hand_with_a_shared_parameter() {
    let shared = Parameter::new("tied_weight", &[2, 2]);
    let a = CustomLayer::op("FullyConnected", &[("num_hidden", 2i64.into()), ("no_bias", true.into())])
        .unwrap()
        .with_shared_param("weight", shared.clone());
    let b = CustomLayer::op("FullyConnected", &[("num_hidden", 2i64.into()), ("no_bias", true.into())])
        .unwrap()
        .with_shared_param("weight", shared.clone());
    let mut net = Sequential::new();
    net.add(a);
    net.add(b);
    assert_eq!(net.collect_params().unwrap().len(), 1);
    assert_eq!(net.collect_params_with_prefix().len(), 2);
    net.initialize(&shared_init(One)).unwrap();
    close(&net.call(&arr(&[1.0, 1.0], &[1, 2])).unwrap(), &[4.0, 4.0], 1e-6);
}
