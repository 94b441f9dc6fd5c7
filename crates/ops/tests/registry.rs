//! Every operator the engine promises is registered, documented and listed.

use oxnet_core::registry;
use oxnet_ops as _; // the built-in operators these tests call

const PROMISED: &[&str] = &[
    // element-wise unary
    "negative",
    "abs",
    "sign",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "square",
    "reciprocal",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "softrelu",
    "erf",
    "gelu",
    "clip",
    // binary with broadcasting, numpy names and MXNet aliases
    "add",
    "subtract",
    "multiply",
    "divide",
    "power",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "broadcast_add",
    "broadcast_sub",
    "broadcast_mul",
    "broadcast_div",
    "broadcast_power",
    "broadcast_maximum",
    "broadcast_minimum",
    "broadcast_equal",
    "broadcast_not_equal",
    "broadcast_greater",
    "broadcast_greater_equal",
    "broadcast_lesser",
    "broadcast_lesser_equal",
    "elemwise_add",
    "elemwise_sub",
    "elemwise_mul",
    "elemwise_div",
    "_plus_scalar",
    "_minus_scalar",
    "_rminus_scalar",
    "_mul_scalar",
    "_div_scalar",
    "_rdiv_scalar",
    "_power_scalar",
    "_rpower_scalar",
    "_maximum_scalar",
    "_minimum_scalar",
    "_equal_scalar",
    "_not_equal_scalar",
    "_greater_scalar",
    "_greater_equal_scalar",
    "_lesser_scalar",
    "_lesser_equal_scalar",
    // reductions
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "argmax",
    "argmin",
    "norm",
    // linear algebra
    "dot",
    "batch_dot",
    "FullyConnected",
    // neural
    "softmax",
    "log_softmax",
    "Activation",
    "LeakyReLU",
    "Dropout",
    "pick",
    "one_hot",
    "where",
    "softmax_cross_entropy",
    "MakeLoss",
    "make_loss",
    "SoftmaxOutput",
    "Softmax",
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
    "SVMOutput",
    // shape
    "reshape",
    "transpose",
    "expand_dims",
    "squeeze",
    "flatten",
    "concat",
    "stack",
    "split",
    "slice",
    "slice_axis",
    "take",
    "tile",
    "repeat",
    "broadcast_to",
    "cast",
    // custom operators
    "Custom",
];

#[test]
fn every_promised_operator_is_registered() {
    let missing: Vec<&&str> = PROMISED.iter().filter(|n| !registry::contains(n)).collect();
    assert!(missing.is_empty(), "not registered: {missing:?}");
}

#[test]
fn listing_describes_each_operator() {
    let ops = registry::list_ops();
    assert!(ops.len() >= 90, "{} operators listed", ops.len());
    for info in &ops {
        assert!(!info.doc.is_empty(), "`{}` has no documentation", info.name);
    }
    let fc = ops.iter().find(|o| o.name == "FullyConnected").unwrap();
    assert_eq!(fc.arguments, vec!["data", "weight", "bias"]);
    assert!(fc.attrs.iter().any(|a| a.name == "num_hidden" && a.default.is_none()));
    let sum = ops.iter().find(|o| o.name == "sum").unwrap();
    assert!(sum.attrs.iter().any(|a| a.name == "keepdims"));
    assert!(registry::get("no_such_op").unwrap_err().to_string().contains("no_such_op"));
}

#[test]
fn unregister_removes_every_name_of_an_operator() {
    use oxnet_core::{invoke1, NDArray, OpDef};
    let def = OpDef::new("test_unregister_twice")
        .alias("test_unregister_twice_alias")
        .doc("Doubles its input (test operator).")
        .arguments(&["data"])
        .forward(|ctx, inputs, outputs| {
            let doubled = invoke1("_mul_scalar", &[&inputs[0]], &[("scalar", 2.0.into())])?;
            oxnet_core::store::store(ctx.req[0], &outputs[0], &doubled)
        });
    registry::register(def);
    let x = NDArray::from_vec(vec![1.5f32], &[1]).unwrap();
    assert_eq!(
        invoke1("test_unregister_twice_alias", &[&x], &[]).unwrap().to_vec::<f32>().unwrap(),
        vec![3.0]
    );
    assert!(registry::unregister("test_unregister_twice"));
    assert!(!registry::contains("test_unregister_twice"));
    assert!(!registry::contains("test_unregister_twice_alias"));
    assert!(!registry::unregister("test_unregister_twice"));
}
