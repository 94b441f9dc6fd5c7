//! Hybridized blocks against imperative ones: same outputs and gradients,
//! deferred shapes inferred on the first call, custom operators inside
//! the graph, export.

use oxnet_core::{autograd, random, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::Xavier;
use oxnet_nn::layers::{CustomLayer, Dense, Dropout, Sequential, Swish};
use oxnet_nn::loss::{Loss, SoftmaxCrossEntropyLoss};
use oxnet_nn::parameter::shared_init;
use oxnet_nn::trainer::Trainer;

fn mlp() -> Sequential {
    let mut net = Sequential::new();
    net.name_scope(|net| {
        net.add(Dense::new(8).activation("tanh").unwrap());
        net.add(Swish::new(1.0).unwrap());
        net.add(Dense::new(4));
    });
    net
}

fn max_diff(a: &NDArray, b: &NDArray) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// Loss and gradients of one step, with the parameters' values and gradients.
fn step(net: &dyn Block, x: &NDArray, y: &NDArray) -> (NDArray, Vec<(NDArray, NDArray)>) {
    let loss_fn = SoftmaxCrossEntropyLoss::new();
    let out = {
        let _r = autograd::record();
        let scores = net.call(x).unwrap();
        loss_fn.loss(&scores, y).unwrap()
    };
    out.backward().unwrap();
    let params = net.collect_params().unwrap();
    let grads = params
        .iter()
        .map(|p| (p.data().unwrap().copy().unwrap(), p.grad().unwrap().copy().unwrap()))
        .collect();
    (out, grads)
}

#[test]
fn hybridized_and_imperative_give_the_same_outputs_and_gradients() {
    random::seed(11);
    let x = NDArray::random_uniform(-1.0, 1.0, &[5, 6], oxnet_core::DType::F32).unwrap();
    let y = NDArray::from_vec(vec![0.0f32, 3.0, 1.0, 2.0, 1.0], &[5]).unwrap();

    let imperative = mlp();
    imperative.initialize(&shared_init(Xavier::default())).unwrap();
    let (loss_i, grads_i) = step(&imperative, &x, &y);

    let hybrid = mlp().hybridize();
    hybrid.initialize(&shared_init(Xavier::default())).unwrap();
    // deferred: shapes are inferred on the first call; copy the values over after it
    assert!(hybrid.collect_params().unwrap().iter().any(|p| p.is_deferred()));
    hybrid.call(&x).unwrap();
    for (p, (v, _)) in hybrid.collect_params().unwrap().iter().zip(&grads_i) {
        assert!(p.is_initialized());
        p.set_data(v).unwrap();
    }
    let (loss_h, grads_h) = step(&hybrid, &x, &y);
    assert!(max_diff(&loss_i, &loss_h) < 1e-6);
    assert_eq!(grads_i.len(), 4);
    for ((_, gi), (_, gh)) in grads_i.iter().zip(&grads_h) {
        assert!(max_diff(gi, gh) < 1e-6, "{:?} vs {:?}", gi.to_vec::<f32>(), gh.to_vec::<f32>());
        assert!(gi.to_vec::<f32>().unwrap().iter().any(|v| *v != 0.0));
    }
    // a training step gives the same parameters
    let hyper = [("learning_rate", "0.5"), ("momentum", "0.9")];
    for net in [&imperative as &dyn Block, &hybrid] {
        Trainer::from_name(&net.collect_params().unwrap(), "sgd", &hyper).unwrap().step(5).unwrap();
    }
    let pi = imperative.collect_params().unwrap();
    let ph = hybrid.collect_params().unwrap();
    for (a, b) in pi.iter().zip(ph.iter()) {
        assert!(max_diff(&a.data().unwrap(), &b.data().unwrap()) < 1e-6);
    }
    let first = pi.iter().next().unwrap().data().unwrap();
    assert!(max_diff(&first, &grads_i[0].0) > 1e-4, "the step changed the weights");
    // one graph per input signature (train and predict mode share it)
    assert_eq!(hybrid.cached_graphs(), 1);
    hybrid.call(&x.slice_axis(0, 0, Some(2)).unwrap().copy().unwrap()).unwrap();
    assert_eq!(hybrid.cached_graphs(), 2);
    let symbol = hybrid.symbol().unwrap();
    let args = symbol.list_arguments().unwrap();
    assert_eq!(args[0], "data");
    assert!(args.iter().any(|a| a.ends_with("dense1_bias")), "{args:?}");
}

#[test]
fn hybridized_network_with_a_custom_operator_and_dropout() {
    oxnet_core::custom::register("nn_hybrid_double", |_| Ok(std::sync::Arc::new(DoubleProp)));
    let make = || {
        let mut net = Sequential::new();
        net.add(CustomLayer::custom("nn_hybrid_double", &[]).unwrap());
        net.add(Dropout::new(0.5).unwrap());
        net.add(Dense::new(2).in_units(3));
        net
    };
    let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
    let imperative = make();
    let hybrid = make().hybridize();
    for net in [&imperative as &dyn Block, &hybrid] {
        net.initialize(&shared_init(oxnet_nn::init::One)).unwrap();
    }
    // predict mode: dropout is the identity; x doubled then summed: 12 per output
    for net in [&imperative as &dyn Block, &hybrid] {
        assert_eq!(net.call(&x).unwrap().to_vec::<f32>().unwrap(), vec![12.0, 12.0]);
    }
    // train mode: each doubled value is dropped or doubled again; gradients
    // flow through the custom operator and the dropout mask into the weight
    for net in [&imperative as &dyn Block, &hybrid] {
        let ones = NDArray::ones(&[200, 3], oxnet_core::DType::F32, Default::default()).unwrap();
        let y = {
            let _r = autograd::record();
            net.call(&ones).unwrap()
        };
        y.backward().unwrap();
        let v = y.to_vec::<f32>().unwrap();
        assert!(v.iter().all(|s| [0.0, 4.0, 8.0, 12.0].contains(s)), "{:?}", &v[..6]);
        assert!(v.iter().any(|s| *s < 12.0) && v.iter().any(|s| *s > 0.0), "some values dropped, some kept");
        // with unit weights and head gradients: Σ_k dW[j, k] = Σ_n y[n, j]
        let w = net.collect_params().unwrap().iter().next().unwrap().clone();
        let g = w.grad().unwrap().to_vec::<f32>().unwrap();
        for j in 0..2 {
            let col: f32 = v.iter().skip(j).step_by(2).sum();
            assert!((g[3 * j..3 * j + 3].iter().sum::<f32>() - col).abs() < 1e-3);
        }
    }
}

struct Double;
struct DoubleProp;

impl oxnet_core::custom::CustomOp for Double {
    fn forward(
        &self,
        _: bool,
        req: &[oxnet_core::Req],
        ins: &[NDArray],
        outs: &[NDArray],
        _: &[NDArray],
    ) -> oxnet_core::Result<()> {
        let y = oxnet_core::invoke1("_mul_scalar", &[&ins[0]], &[("scalar", 2.0.into())])?;
        oxnet_core::custom::assign(&outs[0], req[0], &y)
    }

    fn backward(
        &self,
        req: &[oxnet_core::Req],
        og: &[NDArray],
        _: &[NDArray],
        _: &[NDArray],
        ig: &[NDArray],
        _: &[NDArray],
    ) -> oxnet_core::Result<()> {
        let g = oxnet_core::invoke1("_mul_scalar", &[&og[0]], &[("scalar", 2.0.into())])?;
        oxnet_core::custom::assign(&ig[0], req[0], &g)
    }
}

impl oxnet_core::custom::CustomOpProp for DoubleProp {
    fn create_operator(
        &self,
        _: oxnet_core::Device,
        _: &[oxnet_core::Shape],
        _: &[oxnet_core::DType],
    ) -> oxnet_core::Result<std::sync::Arc<dyn oxnet_core::custom::CustomOp>> {
        Ok(std::sync::Arc::new(Double))
    }
}

#[test]
fn deferred_shapes_that_cannot_be_inferred_are_errors_naming_the_block() {
    let net = Dense::new(3).hybridize();
    net.initialize(&shared_init(Xavier::default())).unwrap();
    // a 0-d input: FullyConnected cannot infer in_units
    let err = net.call(&NDArray::scalar(1.0f32)).unwrap_err().to_string();
    assert!(err.contains(net.name()), "{err}");
    // an uninitialised block
    let fresh = Dense::new(3).in_units(2).hybridize();
    let err = fresh.call(&NDArray::from_vec(vec![1.0f32, 2.0], &[1, 2]).unwrap()).unwrap_err().to_string();
    assert!(err.contains(&format!("{}weight", fresh.prefix())) && err.contains("initialize"), "{err}");
}

#[test]
fn export_writes_the_symbol_and_the_parameters() {
    let net = mlp().hybridize();
    assert!(net.export("unused", 0).is_err());
    net.initialize(&shared_init(Xavier::default())).unwrap();
    net.call(&NDArray::ones(&[2, 6], oxnet_core::DType::F32, Default::default()).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("oxnet_nn_export_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("mlp");
    let (sym, params) = net.export(base.to_str().unwrap(), 3).unwrap();
    assert!(sym.ends_with("mlp-symbol.json") && params.ends_with("mlp-0003.params"));
    let loaded = oxnet_nn::io::load(&params).unwrap();
    let names = loaded.names().unwrap();
    assert_eq!(names.len(), 4);
    assert!(names.iter().all(|n| n.starts_with("arg:")), "{names:?}");
    let json = std::fs::read_to_string(&sym).unwrap();
    assert!(json.contains("FullyConnected") && json.contains("\"data\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two inputs, two outputs: `(a + b, a · w)` with a learnt `w`.
struct TwoWay {
    prefix: String,
    w: oxnet_nn::parameter::Parameter,
}

impl Block for TwoWay {
    fn prefix(&self) -> &str {
        &self.prefix
    }

    fn params(&self) -> Vec<(String, oxnet_nn::parameter::Parameter)> {
        vec![("weight".into(), self.w.clone())]
    }

    fn forward(&self, inputs: &[NDArray]) -> oxnet_core::Result<Vec<NDArray>> {
        if inputs.len() != 2 {
            return Err(oxnet_core::Error::Invalid(format!("TwoWay takes 2 inputs, got {}", inputs.len())));
        }
        let sum = oxnet_core::invoke1("elemwise_add", &[&inputs[0], &inputs[1]], &[])?;
        let prod = oxnet_core::invoke1("broadcast_mul", &[&inputs[0], &self.w.data()?], &[])?;
        Ok(vec![sum, prod])
    }
}

#[test]
fn several_inputs_and_outputs_and_an_identity() {
    let prefix = oxnet_nn::naming::unique_prefix("twoway");
    let w = oxnet_nn::parameter::Parameter::new(format!("{prefix}weight"), &[3]);
    let net = TwoWay { prefix, w }.hybridize();
    net.initialize(&shared_init(oxnet_nn::init::Constant::new(2.0))).unwrap();
    let a = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
    let b = NDArray::from_vec(vec![10.0f32, 20.0, 30.0], &[1, 3]).unwrap();
    let outs = {
        let _r = autograd::record();
        net.forward(&[a.clone(), b.clone()]).unwrap()
    };
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0]);
    assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    autograd::backward(&[&outs[1]], &[], Default::default()).unwrap();
    let w = net.collect_params().unwrap().iter().next().unwrap().clone();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
    assert_eq!(net.symbol().unwrap().list_arguments().unwrap()[..2], ["data0", "data1"]);
    let err = net.call(&NDArray::zeros(&[1, 3], oxnet_core::DType::F32, Default::default()).unwrap());
    assert!(err.is_err_and(|e| e.to_string().contains("inputs") || e.to_string().contains("outputs")));

    let id = oxnet_nn::layers::Identity::new().hybridize();
    assert_eq!(id.call(&a).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
}
