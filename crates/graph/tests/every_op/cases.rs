//! The table of `every_op.rs`: sample inputs per operator, and the custom
//! operator behind the `Custom` case.

use super::{Outcome, CUSTOM_OP_TYPE};

#[path = "control_flow.rs"]
mod control_flow;
use oxnet_core::custom::{self, CustomOp, CustomOpProp};
use oxnet_core::{DType, Device, NDArray, Req, Result, Shape};
use std::sync::{Arc, Once};
// ---------------------------------------------------------------------------
// Sample inputs

/// One sample input of a case.
#[derive(Clone, Debug)]
pub struct In {
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
    pub dtype: DType,
    /// Whether the input is differentiated (false for indices, labels, conditions).
    pub grad: bool,
}

impl In {
    /// Takes no gradient (indices, labels, conditions, aux states).
    fn no_grad(mut self) -> In {
        self.grad = false;
        self
    }

    /// Stored as `dtype` (values must be representable).
    fn dtype(mut self, dtype: DType) -> In {
        self.dtype = dtype;
        self
    }

    pub fn array(&self) -> NDArray {
        NDArray::from_vec(self.values.clone(), &self.shape).unwrap().astype(self.dtype).unwrap()
    }
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// `n` distinct values in `(lo, hi)`, in a scrambled order. Arrays made with
/// different `salt`s lie on different grids, so no two values of two inputs
/// are equal either (no ties for maximum/minimum), and no value is 0 for a
/// range symmetric around 0.
pub fn distinct(n: usize, lo: f64, hi: f64, salt: u64) -> Vec<f64> {
    const GOLDEN: f64 = 0.618_033_988_749_895;
    // rank k goes to the position with the k-th smallest scramble key
    let key = |k: usize| ((k as f64 + salt as f64) * GOLDEN).fract();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| key(*a).total_cmp(&key(*b)));
    let frac = 0.3 + 0.4 * (salt as f64 * GOLDEN).fract();
    let mut out = vec![0.0; n];
    for (rank, &pos) in order.iter().enumerate() {
        out[pos] = lo + (hi - lo) * (rank as f64 + frac) / n as f64;
    }
    out
}

thread_local! {
    /// Salt of the next sample array: reset by [`cases`], so that each run
    /// of the table (per thread) draws the same values.
    static SALT: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
}

pub fn next_salt() -> u64 {
    SALT.with(|s| s.replace(s.get() + 1))
}

/// Distinct float64 values in `(lo, hi)`, differentiable.
fn uniform(shape: &[usize], lo: f64, hi: f64) -> In {
    In {
        shape: shape.to_vec(),
        values: distinct(numel(shape), lo, hi, next_salt()),
        dtype: DType::F64,
        grad: true,
    }
}

/// Mixed-sign values in `(-2, 2)`.
fn x(shape: &[usize]) -> In {
    uniform(shape, -2.0, 2.0)
}

/// Positive values in `(0.5, 2.5)` (log, sqrt, divisors, bases of powers).
fn pos(shape: &[usize]) -> In {
    uniform(shape, 0.5, 2.5)
}

/// Given values, differentiable.
fn vals(values: &[f64], shape: &[usize]) -> In {
    assert_eq!(values.len(), numel(shape));
    In { shape: shape.to_vec(), values: values.to_vec(), dtype: DType::F64, grad: true }
}

/// Integer-valued float64 indices (or labels, conditions): no gradient.
fn idx(values: &[f64], shape: &[usize]) -> In {
    vals(values, shape).no_grad()
}

// ---------------------------------------------------------------------------
// The table

/// A check of a case's inputs and executor outputs.
pub type Property = fn(&[NDArray], &[Vec<f64>]) -> Outcome;

/// One operator call to compare.
pub struct Case {
    pub op: &'static str,
    pub attrs: Vec<(&'static str, &'static str)>,
    pub inputs: Vec<In>,
    /// An extra check of the executor's `forward(true)` outputs (for random
    /// operators, whose values are compared but should also be plausible).
    pub property: Option<Property>,
}

fn case(op: &'static str, attrs: &[(&'static str, &'static str)], inputs: Vec<In>) -> Case {
    Case { op, attrs: attrs.to_vec(), inputs, property: None }
}

/// Dropout's outputs are 0 or `x / (1 - p)`, and with these sizes some of each.
fn dropout_property(p: f64) -> impl Fn(&[NDArray], &[Vec<f64>]) -> std::result::Result<(), String> {
    move |inputs, outputs| {
        let x = inputs[0].to_vec::<f64>().unwrap();
        let y = &outputs[0];
        let scale = 1.0 / (1.0 - p);
        let (mut dropped, mut kept) = (0, 0);
        for (a, b) in x.iter().zip(y) {
            if *b == 0.0 {
                dropped += 1;
            } else if (b - a * scale).abs() <= 1e-12 * b.abs() {
                kept += 1;
            } else {
                return Err(format!("Dropout output {b} is neither 0 nor {a} * {scale}"));
            }
        }
        if dropped == 0 || kept == 0 {
            return Err(format!(
                "Dropout(p={p}) dropped {dropped} and kept {kept}: the sample proves nothing"
            ));
        }
        Ok(())
    }
}

pub fn cases() -> Vec<Case> {
    SALT.with(|s| s.set(1));
    let m = |shape: &[usize]| x(shape);
    let mut t = vec![
        // --- element-wise unary
        case("abs", &[], vec![m(&[2, 3])]),
        case("cos", &[], vec![m(&[2, 3])]),
        case("sin", &[], vec![m(&[2, 3])]),
        case("tanh", &[], vec![m(&[2, 3])]),
        case("sigmoid", &[], vec![m(&[2, 3])]),
        case("relu", &[], vec![m(&[2, 3])]),
        case("softrelu", &[], vec![m(&[2, 3])]),
        case("softsign", &[], vec![m(&[2, 3])]),
        case("hard_sigmoid", &[("alpha", "0.3")], vec![m(&[2, 3])]),
        case("gelu", &[], vec![m(&[2, 3])]),
        case("erf", &[], vec![m(&[2, 3])]),
        case("exp", &[], vec![m(&[2, 3])]),
        case("expm1", &[], vec![m(&[2, 3])]),
        case("negative", &[], vec![m(&[2, 3])]),
        case("square", &[], vec![m(&[2, 3])]),
        case("identity", &[], vec![m(&[2, 3])]),
        case("log", &[], vec![pos(&[2, 3])]),
        case("log1p", &[], vec![pos(&[2, 3])]),
        case("sqrt", &[], vec![pos(&[2, 3])]),
        case("rsqrt", &[], vec![pos(&[2, 3])]),
        case("reciprocal", &[], vec![pos(&[2, 3])]),
        case("clip", &[("a_min", "-1"), ("a_max", "1.5")], vec![m(&[2, 3])]),
        case("tan", &[], vec![uniform(&[2, 3], -1.2, 1.2)]),
        case("arcsin", &[], vec![uniform(&[2, 3], -0.9, 0.9)]),
        case("arccos", &[], vec![uniform(&[2, 3], -0.9, 0.9)]),
        case("arctan", &[], vec![m(&[2, 3])]),
        case("sinh", &[], vec![m(&[2, 3])]),
        case("cosh", &[], vec![m(&[2, 3])]),
        case("arcsinh", &[], vec![m(&[2, 3])]),
        case("arccosh", &[], vec![uniform(&[2, 3], 1.2, 3.0)]),
        case("arctanh", &[], vec![uniform(&[2, 3], -0.9, 0.9)]),
        case("log2", &[], vec![pos(&[2, 3])]),
        case("log10", &[], vec![pos(&[2, 3])]),
        case("cbrt", &[], vec![pos(&[2, 3])]),
        case("rcbrt", &[], vec![pos(&[2, 3])]),
        case("degrees", &[], vec![m(&[2, 3])]),
        case("radians", &[], vec![m(&[2, 3])]),
        case("gamma", &[], vec![uniform(&[2, 3], 0.2, 4.5)]),
        case("gammaln", &[], vec![uniform(&[2, 3], 0.2, 6.0)]),
        case("_backward_gammaln", &[], vec![m(&[2, 3]), uniform(&[2, 3], 0.2, 4.0)]),
        case("_backward_gammaln", &[("order", "2")], vec![m(&[2, 3]), uniform(&[2, 3], 0.2, 4.0)]),
        case("smooth_l1", &[], vec![m(&[2, 3])]),
        case("smooth_l1", &[("scalar", "2.5")], vec![uniform(&[2, 3], -0.5, 0.5)]),
        case("_contrib_quadratic", &[("a", "0.7"), ("b", "-1.2"), ("c", "0.3")], vec![m(&[2, 3])]),
        case("_contrib_gradientmultiplier", &[("scalar", "-0.7")], vec![m(&[2, 3])]),
        case("erfinv", &[], vec![uniform(&[2, 3], -0.9, 0.9)]),
        case("khatri_rao", &[("num_args", "3")], vec![m(&[2, 2]), m(&[3, 2]), m(&[1, 2])]),
        case(
            "_scatter_set_nd",
            &[("shape", "(3, 2)")],
            vec![m(&[3, 2]), m(&[2, 2]), idx(&[2., 0.], &[1, 2])],
        ),
        case("Crop", &[("num_args", "1"), ("h_w", "(2, 2)"), ("offset", "(1, 0)")], vec![m(&[1, 2, 3, 4])]),
        case("Crop", &[("num_args", "2"), ("center_crop", "True")], vec![m(&[1, 2, 3, 4]), m(&[2, 1, 1, 2])]),
        case("_np_cumsum", &[("axis", "1")], vec![m(&[2, 3])]),
        case("_np_cumsum", &[], vec![m(&[2, 3])]),
        case("multi_sum_sq", &[("num_arrays", "2")], vec![m(&[2, 3]), m(&[4])]),
        case(
            "multi_lars",
            &[("eta", "0.5"), ("eps", "1e-8")],
            vec![
                pos(&[3]).dtype(DType::F32),
                pos(&[3]).dtype(DType::F32),
                pos(&[3]).dtype(DType::F32),
                pos(&[3]).dtype(DType::F32),
            ],
        ),
        case("_contrib_div_sqrt_dim", &[], vec![m(&[2, 4])]),
        // zero gradient by definition
        case("sign", &[], vec![m(&[2, 3])]),
        case("logical_not", &[], vec![m(&[2, 3])]),
        case("floor", &[], vec![m(&[2, 3])]),
        case("ceil", &[], vec![m(&[2, 3])]),
        case("round", &[], vec![m(&[2, 3])]),
        case("rint", &[], vec![m(&[2, 3])]),
        case("fix", &[], vec![m(&[2, 3])]),
        case("trunc", &[], vec![m(&[2, 3])]),
        case("BlockGrad", &[], vec![m(&[2, 3])]),
        case("_identity_with_attr_like_rhs", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("zeros_like", &[], vec![m(&[2, 3])]),
        case("ones_like", &[], vec![m(&[2, 3])]),
        // --- activations
        case("Activation", &[("act_type", "relu")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "sigmoid")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "tanh")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "softrelu")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "softsign")], vec![m(&[2, 3])]),
        case("_activation_grad", &[("act_type", "relu")], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_activation_grad", &[("act_type", "sigmoid")], vec![m(&[2, 3]), uniform(&[2, 3], 0.05, 0.95)]),
        case("_activation_grad", &[("act_type", "tanh")], vec![m(&[2, 3]), uniform(&[2, 3], -0.9, 0.9)]),
        case("LeakyReLU", &[("act_type", "leaky"), ("slope", "0.1")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "elu"), ("slope", "0.7")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "selu")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "gelu")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "prelu")], vec![m(&[2, 3, 2]), m(&[3])]),
        case("LeakyReLU", &[("act_type", "prelu")], vec![m(&[2, 3]), m(&[1])]),
        // rrelu draws its slopes: seeded like Dropout below
        case("LeakyReLU", &[("act_type", "rrelu"), ("lower_bound", "0.1")], vec![m(&[3, 4])]),
        // --- gradient helpers (registered operators with their own gradients, for higher order)
        case("_backward_relu", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_backward_sigmoid", &[], vec![m(&[2, 3]), uniform(&[2, 3], 0.05, 0.95)]),
        case("_backward_tanh", &[], vec![m(&[2, 3]), uniform(&[2, 3], -0.95, 0.95)]),
        case("_backward_gelu", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_backward_clip", &[("a_min", "-1"), ("a_max", "1.5")], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_backward_reshape_to", &[("shape", "(3, 2)")], vec![m(&[2, 3])]),
        case("_backward_broadcast_to", &[("shape", "(2, 3, 4)")], vec![m(&[3, 1])]),
        case(
            "_backward_slice",
            &[("begin", "(None, 2)"), ("end", "(3, None)"), ("step", "(2, -1)"), ("shape", "(4, 3)")],
            vec![m(&[2, 3])],
        ),
        case(
            "_backward_take",
            &[("axis", "1"), ("shape", "(2, 3)")],
            vec![m(&[2, 4]), idx(&[0., 2., 2., 1.], &[4])],
        ),
        // ograd, index, data (data gives only the shape)
        case("_backward_pick", &[("axis", "1")], vec![m(&[3]), idx(&[2., 0., 3.], &[3]), m(&[3, 4])]),
        // --- scalar arithmetic
        case("_plus_scalar", &[("scalar", "1.5")], vec![m(&[2, 3])]),
        case("_minus_scalar", &[("scalar", "1.5")], vec![m(&[2, 3])]),
        case("_rminus_scalar", &[("scalar", "1.5")], vec![m(&[2, 3])]),
        case("_mul_scalar", &[("scalar", "-2.5")], vec![m(&[2, 3])]),
        case("_div_scalar", &[("scalar", "2.5"), ("is_int", "False")], vec![m(&[2, 3])]),
        case("_rdiv_scalar", &[("scalar", "2.5")], vec![pos(&[2, 3])]),
        case("_power_scalar", &[("scalar", "3")], vec![m(&[2, 3])]),
        case("_power_scalar", &[("scalar", "2.5")], vec![pos(&[2, 3])]),
        case("_rpower_scalar", &[("scalar", "2")], vec![m(&[2, 3])]),
        case("_maximum_scalar", &[("scalar", "0.3")], vec![m(&[2, 3])]),
        case("_minimum_scalar", &[("scalar", "0.3")], vec![m(&[2, 3])]),
        case("_equal_scalar", &[("scalar", "1")], vec![vals(&[1., 2., -1., 1., 0.5, 3.], &[2, 3])]),
        case("_not_equal_scalar", &[("scalar", "1")], vec![vals(&[1., 2., -1., 1., 0.5, 3.], &[2, 3])]),
        case("_greater_scalar", &[("scalar", "0.3")], vec![m(&[2, 3])]),
        case("_greater_equal_scalar", &[("scalar", "1")], vec![vals(&[1., 2., -1., 1., 0.5, 3.], &[2, 3])]),
        case("_lesser_scalar", &[("scalar", "0.3")], vec![m(&[2, 3])]),
        case("_lesser_equal_scalar", &[("scalar", "1")], vec![vals(&[1., 2., -1., 1., 0.5, 3.], &[2, 3])]),
        // --- element-wise binary (equal shapes)
        case("elemwise_add", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("elemwise_sub", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("elemwise_mul", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("elemwise_div", &[], vec![m(&[2, 3]), pos(&[2, 3])]),
        case("_maximum", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_minimum", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_power", &[], vec![pos(&[2, 3]), m(&[2, 3])]),
        case("_equal", &[], vec![vals(&[1., 2., 3., 4.], &[4]), vals(&[1., 0., 3., 5.], &[4])]),
        case("_not_equal", &[], vec![vals(&[1., 2., 3., 4.], &[4]), vals(&[1., 0., 3., 5.], &[4])]),
        case("_greater", &[], vec![vals(&[1., 2., 3., 4.], &[4]), vals(&[1., 0., 3., 5.], &[4])]),
        case("_greater_equal", &[], vec![vals(&[1., 2., 3., 4.], &[4]), vals(&[1., 0., 3., 5.], &[4])]),
        case("_lesser", &[], vec![vals(&[1., 2., 3., 4.], &[4]), vals(&[1., 0., 3., 5.], &[4])]),
        case("_lesser_equal", &[], vec![vals(&[1., 2., 3., 4.], &[4]), vals(&[1., 0., 3., 5.], &[4])]),
        case("add_n", &[], vec![m(&[2, 3]), m(&[2, 3]), m(&[2, 3])]),
        // --- broadcasting binary (both sides broadcast)
        case("broadcast_add", &[], vec![m(&[2, 1, 3]), m(&[1, 4, 3])]),
        case("broadcast_sub", &[], vec![m(&[2, 3]), m(&[1, 3])]),
        case("broadcast_mul", &[], vec![m(&[2, 1]), m(&[1, 3])]),
        case("broadcast_div", &[], vec![m(&[2, 3]), pos(&[2, 1])]),
        case("broadcast_maximum", &[], vec![m(&[2, 3]), m(&[1, 3])]),
        case("broadcast_minimum", &[], vec![m(&[2, 3]), m(&[1, 3])]),
        case("broadcast_power", &[], vec![pos(&[2, 3]), m(&[1, 3])]),
        case("broadcast_equal", &[], vec![vals(&[1., 2., 3., 4.], &[2, 2]), vals(&[1., 4.], &[1, 2])]),
        case("broadcast_not_equal", &[], vec![vals(&[1., 2., 3., 4.], &[2, 2]), vals(&[1., 4.], &[1, 2])]),
        case("broadcast_greater", &[], vec![vals(&[1., 2., 3., 4.], &[2, 2]), vals(&[1., 4.], &[1, 2])]),
        case(
            "broadcast_greater_equal",
            &[],
            vec![vals(&[1., 2., 3., 4.], &[2, 2]), vals(&[1., 4.], &[1, 2])],
        ),
        case("broadcast_lesser", &[], vec![vals(&[1., 2., 3., 4.], &[2, 2]), vals(&[1., 4.], &[1, 2])]),
        case("broadcast_lesser_equal", &[], vec![vals(&[1., 2., 3., 4.], &[2, 2]), vals(&[1., 4.], &[1, 2])]),
        // mod and hypot; mod's operands keep away from the jumps of floor(a / b)
        case(
            "broadcast_mod",
            &[],
            vec![vals(&[2.3, -1.7, 4.6, 0.8, -3.1, 5.2], &[2, 3]), vals(&[0.9, 1.3, -1.1], &[1, 3])],
        ),
        case("_mod", &[], vec![vals(&[2.3, -1.7, 4.6, 0.8], &[2, 2]), vals(&[0.9, 1.3, -1.1, 0.7], &[2, 2])]),
        case("_mod_scalar", &[("scalar", "1.4")], vec![vals(&[2.3, -1.7, 4.6, 0.8, -3.1, 5.2], &[2, 3])]),
        case("_rmod_scalar", &[("scalar", "2.5")], vec![vals(&[0.7, 1.9, -1.3, 2.9, -0.45, 3.3], &[2, 3])]),
        case("broadcast_hypot", &[], vec![m(&[2, 3]), m(&[1, 3])]),
        case("_hypot", &[], vec![m(&[2, 3]), m(&[2, 3])]),
        case("_hypot_scalar", &[("scalar", "-1.5")], vec![m(&[2, 3])]),
        // logical and, or, xor: zero gradient
        case("broadcast_logical_and", &[], vec![vals(&[0., 2., 3., 0.], &[2, 2]), vals(&[1., 0.], &[1, 2])]),
        case("broadcast_logical_or", &[], vec![vals(&[0., 2., 3., 0.], &[2, 2]), vals(&[1., 0.], &[1, 2])]),
        case("broadcast_logical_xor", &[], vec![vals(&[0., 2., 3., 0.], &[2, 2]), vals(&[1., 0.], &[1, 2])]),
        case("_logical_and", &[], vec![vals(&[0., 2., 3., 0.], &[4]), vals(&[1., 0., 2., 0.], &[4])]),
        case("_logical_or", &[], vec![vals(&[0., 2., 3., 0.], &[4]), vals(&[1., 0., 2., 0.], &[4])]),
        case("_logical_xor", &[], vec![vals(&[0., 2., 3., 0.], &[4]), vals(&[1., 0., 2., 0.], &[4])]),
        case("_logical_and_scalar", &[("scalar", "1")], vec![vals(&[0., 2., -1., 0.], &[4])]),
        case("_logical_or_scalar", &[("scalar", "0")], vec![vals(&[0., 2., -1., 0.], &[4])]),
        case("_logical_xor_scalar", &[("scalar", "1")], vec![vals(&[0., 2., -1., 0.], &[4])]),
        // --- reductions (distinct values: unique maxima and minima)
        case("sum", &[("axis", "(1,)")], vec![m(&[3, 4])]),
        case("sum", &[("axis", "(1,)"), ("exclude", "True"), ("keepdims", "True")], vec![m(&[2, 3, 2])]),
        case("mean", &[("axis", "(0,)"), ("keepdims", "True")], vec![m(&[3, 4])]),
        case("prod", &[("axis", "(1,)")], vec![m(&[3, 4])]),
        case("max", &[("axis", "(1,)")], vec![m(&[3, 4])]),
        case("max", &[], vec![m(&[3, 4])]),
        case("min", &[("axis", "(0,)"), ("keepdims", "True")], vec![m(&[3, 4])]),
        case("norm", &[], vec![m(&[3, 4])]),
        case("norm", &[("ord", "1"), ("axis", "(1,)")], vec![m(&[3, 4])]),
        case("norm", &[("axis", "(1,)"), ("out_dtype", "float32")], vec![m(&[3, 4])]),
        case("argmax", &[("axis", "1")], vec![m(&[3, 4])]),
        case("argmin", &[], vec![m(&[3, 4])]),
        // --- linear algebra
        case("dot", &[], vec![m(&[2, 3]), m(&[3, 4])]),
        case("dot", &[("transpose_a", "True"), ("transpose_b", "True")], vec![m(&[3, 2]), m(&[4, 3])]),
        case("batch_dot", &[], vec![m(&[2, 2, 3]), m(&[2, 3, 4])]),
        case("batch_dot", &[("transpose_b", "True")], vec![m(&[2, 2, 3]), m(&[2, 4, 3])]),
        case("FullyConnected", &[("num_hidden", "4")], vec![m(&[2, 3]), m(&[4, 3]), m(&[4])]),
        case(
            "FullyConnected",
            &[("num_hidden", "4"), ("no_bias", "True"), ("flatten", "False")],
            vec![m(&[2, 2, 3]), m(&[4, 3])],
        ),
        // --- the linalg family (`mx.nd.linalg.*`)
        case(
            "_linalg_gemm",
            &[("alpha", "0.5"), ("beta", "-2")],
            vec![m(&[2, 2, 3]), m(&[2, 3, 4]), m(&[2, 2, 4])],
        ),
        case(
            "_linalg_gemm",
            &[("transpose_a", "True"), ("transpose_b", "True"), ("axis", "0")],
            vec![m(&[3, 2, 2]), m(&[4, 2, 3]), m(&[2, 2, 4])],
        ),
        case(
            "_linalg_gemm2",
            &[("transpose_b", "True"), ("alpha", "1.5")],
            vec![m(&[2, 2, 3]), m(&[2, 4, 3])],
        ),
        case("_linalg_syrk", &[("alpha", "0.5")], vec![m(&[2, 2, 3])]),
        case("_linalg_syrk", &[("transpose", "True")], vec![m(&[3, 2])]),
        case("_linalg_trmm", &[("lower", "False"), ("alpha", "2")], vec![m(&[2, 3, 3]), m(&[2, 3, 2])]),
        case(
            "_linalg_trsm",
            &[("rightside", "True"), ("transpose", "True")],
            vec![vals(&[2., 0.3, -0.4, 0.5, 1.5, 0.7, -0.2, 0.6, 1.8], &[3, 3]), m(&[2, 3])],
        ),
        case("_linalg_sumlogdiag", &[], vec![pos(&[2, 2, 2])]),
        case("_linalg_potrf", &[], vec![vals(&[2., 1., 0.5, 1., 3., 0.2, 0.5, 0.2, 1.], &[3, 3])]),
        case("_linalg_potri", &[], vec![vals(&[1.5, 0., 0., 0.3, 2., 0., -0.4, 0.6, 1.2], &[3, 3])]),
        case("_linalg_gelqf", &[], vec![vals(&[1., 2., 3., 4., 5., 7.], &[2, 3])]),
        case("_linalg_syevd", &[], vec![vals(&[2., 1., 0.5, 1., 3., 0.2, 0.5, 0.2, 1.], &[3, 3])]),
        case("_linalg_inverse", &[], vec![vals(&[1.5, 0.7, 0.2, 0.3, 2., -0.5, -0.4, 0.6, 1.2], &[3, 3])]),
        case("_linalg_det", &[], vec![m(&[2, 3, 3])]),
        case("_linalg_slogdet", &[], vec![m(&[2, 3, 3])]),
        case("_linalg_extractdiag", &[("offset", "1")], vec![m(&[2, 3, 3])]),
        case("_linalg_makediag", &[("offset", "-1")], vec![m(&[2, 3])]),
        case("_linalg_extracttrian", &[("lower", "False")], vec![m(&[2, 3, 3])]),
        case("_linalg_maketrian", &[("offset", "1")], vec![m(&[2, 3])]),
        // --- convolution, pooling, normalization
        case(
            "Convolution",
            &[("kernel", "(2, 2)"), ("num_filter", "3"), ("pad", "(1, 0)"), ("stride", "(2, 1)")],
            vec![m(&[2, 2, 4, 3]), m(&[3, 2, 2, 2]), m(&[3])],
        ),
        case(
            "Convolution",
            &[
                ("kernel", "(3,)"),
                ("num_filter", "4"),
                ("num_group", "2"),
                ("no_bias", "True"),
                ("dilate", "(2,)"),
            ],
            vec![m(&[2, 4, 7]), m(&[4, 2, 3])],
        ),
        // offsets kept off whole numbers: no tap reads exactly at a pixel
        case(
            "_contrib_DeformableConvolution",
            &[
                ("kernel", "(2, 2)"),
                ("num_filter", "4"),
                ("num_group", "2"),
                ("num_deformable_group", "2"),
                ("pad", "(1, 1)"),
                ("stride", "(1, 2)"),
            ],
            vec![m(&[2, 4, 4, 5]), uniform(&[2, 16, 5, 3], 0.1, 0.9), m(&[4, 2, 2, 2]), m(&[4])],
        ),
        case(
            "_contrib_DeformableConvolution",
            &[
                ("kernel", "(3, 3)"),
                ("num_filter", "2"),
                ("no_bias", "True"),
                ("dilate", "(2, 1)"),
                ("pad", "(1, 0)"),
            ],
            vec![m(&[1, 2, 6, 4]), uniform(&[1, 18, 4, 2], -0.9, -0.1), m(&[2, 2, 3, 3])],
        ),
        case(
            "_contrib_ModulatedDeformableConvolution",
            &[
                ("kernel", "(2, 2)"),
                ("num_filter", "4"),
                ("num_group", "2"),
                ("num_deformable_group", "2"),
                ("pad", "(1, 1)"),
            ],
            vec![
                m(&[2, 4, 3, 4]),
                uniform(&[2, 16, 4, 5], 0.1, 0.9),
                uniform(&[2, 8, 4, 5], 0.1, 0.9),
                m(&[4, 2, 2, 2]),
                m(&[4]),
            ],
        ),
        case(
            "Deconvolution",
            &[
                ("kernel", "(2, 3)"),
                ("num_filter", "3"),
                ("no_bias", "False"),
                ("stride", "(2, 1)"),
                ("adj", "(1, 0)"),
            ],
            vec![m(&[2, 2, 3, 2]), m(&[2, 3, 2, 3]), m(&[3])],
        ),
        case("Pooling", &[("kernel", "(2, 2)"), ("stride", "(1, 2)")], vec![m(&[2, 2, 3, 4])]),
        case(
            "Pooling",
            &[("kernel", "(3,)"), ("pool_type", "avg"), ("pad", "(1,)"), ("pooling_convention", "full")],
            vec![m(&[2, 2, 5])],
        ),
        // channel-last layouts (data, weight and output with the channel axis last)
        case(
            "Convolution",
            &[
                ("kernel", "(2, 2)"),
                ("num_filter", "4"),
                ("num_group", "2"),
                ("stride", "(2, 1)"),
                ("layout", "NHWC"),
            ],
            vec![m(&[2, 4, 3, 2]), m(&[4, 2, 2, 1]), m(&[4])],
        ),
        case(
            "Deconvolution",
            &[("kernel", "(2, 1, 2)"), ("num_filter", "2"), ("no_bias", "False"), ("layout", "NDHWC")],
            vec![m(&[1, 2, 2, 3, 2]), m(&[2, 2, 1, 2, 2]), m(&[2])],
        ),
        case(
            "Pooling",
            &[
                ("kernel", "(3,)"),
                ("pool_type", "avg"),
                ("pad", "(1,)"),
                ("stride", "(2,)"),
                ("layout", "NWC"),
            ],
            vec![m(&[2, 5, 3])],
        ),
        // --- resizing and regions of interest (rois take no gradient)
        case(
            "UpSampling",
            &[("scale", "2"), ("sample_type", "nearest"), ("num_args", "1")],
            vec![m(&[2, 2, 2, 3])],
        ),
        case(
            "UpSampling",
            &[("scale", "2"), ("sample_type", "nearest"), ("num_args", "2"), ("multi_input_mode", "sum")],
            vec![m(&[1, 2, 2, 2]), m(&[1, 2, 1, 1])],
        ),
        case(
            "UpSampling",
            &[("scale", "2"), ("sample_type", "bilinear"), ("num_filter", "2"), ("num_args", "2")],
            vec![m(&[1, 2, 2, 3]), m(&[2, 1, 4, 4])],
        ),
        case("_contrib_BilinearResize2D", &[("height", "3"), ("width", "5")], vec![m(&[2, 2, 2, 3])]),
        case(
            "_contrib_BilinearResize2D",
            &[("mode", "like"), ("align_corners", "False")],
            vec![m(&[1, 2, 3, 3]), m(&[1, 1, 2, 5])],
        ),
        case(
            "ROIPooling",
            &[("pooled_size", "(2, 2)"), ("spatial_scale", "1")],
            vec![m(&[2, 2, 5, 5]), idx(&[0., 0., 0., 3., 3., 1., 1., 0., 4., 2.], &[2, 5])],
        ),
        case(
            "_contrib_ROIAlign",
            &[("pooled_size", "(2, 2)"), ("spatial_scale", "1"), ("sample_ratio", "2")],
            vec![m(&[2, 2, 5, 5]), idx(&[0., 0.5, 0.2, 3.1, 3.6, 1., 1.2, 0., 4.4, 2.3], &[2, 5])],
        ),
        case(
            "_contrib_PSROIPooling",
            &[("spatial_scale", "1"), ("output_dim", "2"), ("pooled_size", "2")],
            vec![m(&[2, 8, 5, 5]), idx(&[0., 0.4, 0., 3., 3.4, 1., 1., 0.6, 4., 2.], &[2, 5])],
        ),
        // --- spatial transformers (grids in normalized coordinates) and correlation
        case("GridGenerator", &[("transform_type", "affine"), ("target_shape", "(3, 4)")], vec![m(&[2, 6])]),
        case("GridGenerator", &[("transform_type", "warp")], vec![m(&[1, 2, 3, 4])]),
        case("BilinearSampler", &[], vec![m(&[1, 2, 4, 5]), uniform(&[1, 2, 3, 3], -0.9, 0.9)]),
        case(
            "SpatialTransformer",
            &[("target_shape", "(3, 3)"), ("transform_type", "affine"), ("sampler_type", "bilinear")],
            vec![m(&[1, 2, 4, 5]), uniform(&[1, 6], -0.8, 0.8)],
        ),
        case(
            "Correlation",
            &[("max_displacement", "1"), ("pad_size", "1")],
            vec![m(&[1, 2, 4, 4]), m(&[1, 2, 4, 4])],
        ),
        case(
            "Correlation",
            &[
                ("kernel_size", "3"),
                ("max_displacement", "2"),
                ("stride2", "2"),
                ("pad_size", "2"),
                ("is_multiply", "False"),
            ],
            vec![m(&[1, 2, 5, 5]), m(&[1, 2, 5, 5])],
        ),
        // --- attention products over interleaved projections (2 heads of 2)
        case("_contrib_interleaved_matmul_selfatt_qk", &[("heads", "2")], vec![m(&[3, 2, 12])]),
        case(
            "_contrib_interleaved_matmul_selfatt_valatt",
            &[("heads", "2")],
            vec![m(&[3, 2, 12]), m(&[4, 3, 3])],
        ),
        case("_contrib_interleaved_matmul_encdec_qk", &[("heads", "2")], vec![m(&[3, 2, 4]), m(&[2, 2, 8])]),
        case(
            "_contrib_interleaved_matmul_encdec_valatt",
            &[("heads", "2")],
            vec![m(&[2, 2, 8]), m(&[4, 3, 2])],
        ),
        case(
            "_image_normalize",
            &[("mean", "(0.1, 0.2, 0.3)"), ("std", "(1.5, 2.0, 0.5)")],
            vec![m(&[3, 2, 2])],
        ),
        case("_image_to_tensor", &[], vec![m(&[3, 4, 3])]),
        case("_image_flip_left_right", &[], vec![m(&[2, 3, 5, 1])]),
        case("_image_flip_top_bottom", &[], vec![m(&[3, 4, 3])]),
        case(
            "_image_crop",
            &[("x", "1"), ("y", "0"), ("width", "2"), ("height", "2")],
            vec![m(&[2, 3, 4, 3])],
        ),
        // --- Fourier transforms (interleaved complex rows) and count sketch
        case("_contrib_fft", &[], vec![m(&[2, 5])]),
        case("_contrib_ifft", &[("compute_size", "1")], vec![m(&[2, 1, 3, 8])]),
        case(
            "_contrib_count_sketch",
            &[("out_dim", "3")],
            vec![m(&[2, 4]), idx(&[2., 0., 2., 1.], &[1, 4]), idx(&[-1., 1., 1., -1.], &[1, 4])],
        ),
        // --- quantization (zero gradients; float32 data, 8- and 32-bit codes)
        case(
            "_contrib_quantize",
            &[("out_type", "int8")],
            vec![
                m(&[2, 3]).dtype(DType::F32),
                idx(&[-1.0], &[1]).dtype(DType::F32),
                idx(&[1.5], &[1]).dtype(DType::F32),
            ],
        ),
        case("_contrib_quantize_v2", &[("out_type", "uint8")], vec![m(&[2, 3]).dtype(DType::F32)]),
        case(
            "_contrib_dequantize",
            &[],
            vec![
                idx(&[-3.0, 5.0, 100.0], &[3]).dtype(DType::I8),
                idx(&[-2.0], &[1]).dtype(DType::F32),
                idx(&[1.0], &[1]).dtype(DType::F32),
            ],
        ),
        case(
            "_contrib_requantize",
            &[],
            vec![
                idx(&[-3e6, 5e8, 1.0], &[3]).dtype(DType::I32),
                idx(&[-2.0], &[1]).dtype(DType::F32),
                idx(&[1.0], &[1]).dtype(DType::F32),
            ],
        ),
        case("amp_cast", &[("dtype", "float32")], vec![m(&[2, 3])]),
        case("amp_multicast", &[("num_outputs", "2")], vec![m(&[2]), m(&[3])]),
        case("amp_cast", &[("dtype", "float64")], vec![m(&[2, 3]).dtype(DType::F32)]),
        // BatchNorm with batch statistics updates its moving statistics in
        // the backward pass, so a later forward(false) differs from a fresh
        // imperative call by design: the cases use the global statistics
        // (the batch-statistics path is tested in oxnet-ops and through
        // the executor in tests/python/test_conv_ops.py).
        case(
            "BatchNorm",
            &[("fix_gamma", "False"), ("use_global_stats", "True")],
            vec![m(&[3, 2, 2]), pos(&[2]), m(&[2]), x(&[2]).no_grad(), pos(&[2]).no_grad()],
        ),
        case("LRN", &[("nsize", "3"), ("alpha", "0.5")], vec![m(&[2, 4, 3])]),
        case(
            "BatchNorm_v1",
            &[("use_global_stats", "True"), ("output_mean_var", "True")],
            vec![m(&[3, 2, 2]), pos(&[2]), m(&[2]), x(&[2]).no_grad(), pos(&[2]).no_grad()],
        ),
        case(
            "_contrib_SyncBatchNorm",
            &[("use_global_stats", "True"), ("fix_gamma", "False"), ("key", "bn")],
            vec![m(&[3, 2, 2]), pos(&[2]), m(&[2]), x(&[2]).no_grad(), pos(&[2]).no_grad()],
        ),
        case(
            "BatchNorm",
            &[("use_global_stats", "True"), ("axis", "-1")],
            vec![m(&[3, 2, 2]), pos(&[2]), m(&[2]), x(&[2]).no_grad(), pos(&[2]).no_grad()],
        ),
        // --- LayerNorm, GroupNorm, InstanceNorm, L2Normalization
        case("LayerNorm", &[], vec![x(&[3, 4]), pos(&[4]), x(&[4])]),
        case(
            "LayerNorm",
            &[("axis", "1"), ("eps", "0.01"), ("output_mean_var", "True")],
            vec![x(&[2, 3, 2]), pos(&[3]), x(&[3])],
        ),
        case("GroupNorm", &[("num_groups", "2")], vec![x(&[2, 4, 3]), pos(&[2]), x(&[2])]),
        case(
            "GroupNorm",
            &[("num_groups", "3"), ("output_mean_var", "True")],
            vec![x(&[2, 3, 2, 2]), pos(&[3]), x(&[3])],
        ),
        case("InstanceNorm", &[], vec![x(&[2, 3, 4]), pos(&[3]), x(&[3])]),
        case("InstanceNorm", &[("eps", "0.01")], vec![x(&[2, 2, 2, 3]), pos(&[2]), x(&[2])]),
        case("L2Normalization", &[], vec![x(&[2, 3, 2])]),
        case("L2Normalization", &[("mode", "channel")], vec![x(&[2, 3, 2])]),
        case("L2Normalization", &[("mode", "spatial"), ("eps", "0.1")], vec![x(&[2, 3, 2, 2])]),
        // --- softmax family and losses
        case("softmax", &[], vec![m(&[2, 4])]),
        case("softmax", &[("axis", "0"), ("temperature", "2.0")], vec![m(&[3, 2])]),
        case("softmax", &[("dtype", "float32")], vec![m(&[2, 4])]),
        case(
            "softmax",
            &[("axis", "1"), ("use_length", "True")],
            vec![m(&[2, 4, 2]), idx(&[1., 4., 2., 0.], &[2, 2]).dtype(DType::I32)],
        ),
        case("log_softmax", &[("dtype", "float32")], vec![m(&[2, 4])]),
        case("SoftmaxActivation", &[], vec![m(&[2, 3, 2])]),
        case("SoftmaxActivation", &[("mode", "channel")], vec![m(&[2, 3, 2])]),
        case("softmin", &[("axis", "1")], vec![m(&[2, 3, 2])]),
        case("log_softmax", &[("temperature", "0.7")], vec![m(&[2, 4])]),
        case("softmax_cross_entropy", &[], vec![m(&[3, 4]), idx(&[1., 3., 0.], &[3])]),
        case("CTCLoss", &[], vec![m(&[5, 2, 4]), idx(&[1., 3., 3., 2., 0., 0.], &[2, 3])]),
        case(
            "CTCLoss",
            &[("blank_label", "last"), ("use_data_lengths", "True")],
            vec![m(&[5, 2, 4]), idx(&[0., 2., -1., 1., 1., 2.], &[2, 3]), idx(&[4., 5.], &[2])],
        ),
        // --- loss-output heads: their own gradient, whatever the head gradient
        case("MakeLoss", &[("grad_scale", "2"), ("normalization", "valid")], vec![m(&[2, 3])]),
        case("make_loss", &[], vec![m(&[2, 3])]),
        case("SoftmaxOutput", &[("normalization", "batch")], vec![m(&[3, 4]), idx(&[1., 3., 0.], &[3])]),
        case(
            "SoftmaxOutput",
            &[("multi_output", "True")],
            vec![m(&[2, 3, 2]), idx(&[2., 0., 1., 1.], &[2, 2])],
        ),
        case("LinearRegressionOutput", &[("grad_scale", "2")], vec![m(&[2, 3]), m(&[2, 3]).no_grad()]),
        case("LogisticRegressionOutput", &[], vec![m(&[2, 3]), m(&[2, 3]).no_grad()]),
        case("MAERegressionOutput", &[], vec![m(&[2, 3]), m(&[2, 3]).no_grad()]),
        case("SVMOutput", &[("use_linear", "True")], vec![m(&[3, 4]), idx(&[1., 3., 0.], &[3])]),
        // --- indexing
        case("take", &[], vec![m(&[4, 3]), idx(&[2., 0., 2., 5.], &[2, 2])]),
        case("take", &[("axis", "1"), ("mode", "wrap")], vec![m(&[2, 3, 2]), idx(&[1., -1., 1.], &[3])]),
        // int32 indices: mixed dtypes in one node
        case("take", &[], vec![m(&[4, 3]), idx(&[3., 1.], &[2]).dtype(DType::I32)]),
        case(
            "Embedding",
            &[("input_dim", "4"), ("output_dim", "3")],
            vec![idx(&[2., 0., 2., 5.], &[2, 2]), m(&[4, 3])],
        ),
        case("pick", &[("axis", "1")], vec![m(&[3, 4]), idx(&[2., 0., 3.], &[3])]),
        case(
            "pick",
            &[("axis", "0"), ("keepdims", "True"), ("mode", "wrap")],
            vec![m(&[3, 4]), idx(&[1., 7., -1., 2.], &[1, 4])],
        ),
        case("pick", &[], vec![m(&[2, 3]), idx(&[2., 1.], &[2]).dtype(DType::I32)]),
        // gather_nd: indices (M, ...) pick index tuples; a repeated one accumulates in the gradient
        case("gather_nd", &[], vec![m(&[3, 2, 2]), idx(&[2., 0., 2., 1., 0., 1.], &[2, 3])]),
        case("scatter_nd", &[("shape", "(3, 2)")], vec![m(&[2, 2]), idx(&[2., 0.], &[1, 2])]),
        case(
            "_backward_gather_nd",
            &[("shape", "(3, 2)")],
            vec![m(&[3]), idx(&[2., 0., 2., 1., 0., 1.], &[2, 3])],
        ),
        case("_contrib_index_copy", &[], vec![m(&[4, 2]), idx(&[3., 1.], &[2]), m(&[2, 2])]),
        // zero gradients: index arithmetic
        case("_contrib_index_array", &[("axes", "(1, 0)")], vec![m(&[2, 3])]),
        case("_contrib_arange_like", &[("start", "2"), ("repeat", "2")], vec![m(&[2, 3])]),
        case("_contrib_arange_like", &[("axis", "1")], vec![m(&[2, 3])]),
        case("ravel_multi_index", &[("shape", "(-1, 4)")], vec![idx(&[1., 2., 0., 3., 0., 1.], &[2, 3])]),
        case("unravel_index", &[("shape", "(3, 4)")], vec![idx(&[7., 8., 1.], &[3])]),
        // --- sequences: (time, batch, ...) with optional lengths
        case("SequenceMask", &[("value", "-1.5")], vec![m(&[3, 2, 2])]),
        case(
            "SequenceMask",
            &[("use_sequence_length", "True"), ("axis", "1"), ("value", "0.5")],
            vec![m(&[2, 3, 2]), idx(&[2., 1.], &[2])],
        ),
        case(
            "SequenceReverse",
            &[("use_sequence_length", "True")],
            vec![m(&[3, 2, 2]), idx(&[2., 3.], &[2])],
        ),
        case("SequenceLast", &[], vec![m(&[3, 2, 2])]),
        case(
            "SequenceLast",
            &[("use_sequence_length", "True"), ("axis", "1")],
            vec![m(&[2, 3, 2]), idx(&[3., 1.], &[2]).dtype(DType::I32)],
        ),
        case(
            "_backward_SequenceLast",
            &[("use_sequence_length", "True"), ("shape", "(3, 2, 2)")],
            vec![m(&[2, 2]), idx(&[1., 3.], &[2])],
        ),
        // --- recurrent
        case(
            "RNN",
            &[("mode", "lstm"), ("state_size", "2"), ("num_layers", "1"), ("state_outputs", "True")],
            vec![m(&[3, 2, 3]), m(&[56]), m(&[1, 2, 2]), m(&[1, 2, 2])],
        ),
        case(
            "RNN",
            &[
                ("mode", "gru"),
                ("state_size", "2"),
                ("num_layers", "1"),
                ("bidirectional", "True"),
                ("use_sequence_length", "True"),
            ],
            vec![m(&[3, 2, 3]), m(&[84]), m(&[2, 2, 2]), idx(&[3., 1.], &[2]).dtype(DType::I32)],
        ),
        // --- ordering
        case("topk", &[("k", "2"), ("ret_typ", "value")], vec![m(&[3, 4])]),
        case("topk", &[("k", "2"), ("ret_typ", "both"), ("axis", "0")], vec![m(&[3, 4])]),
        case(
            "topk",
            &[("k", "3"), ("ret_typ", "value"), ("axis", "None"), ("is_ascend", "True")],
            vec![m(&[3, 4])],
        ),
        case("sort", &[("axis", "0")], vec![m(&[3, 4])]),
        case("sort", &[("axis", "None"), ("is_ascend", "False")], vec![m(&[3, 4])]),
        case("argsort", &[], vec![m(&[3, 4])]),
        case("nansum", &[("axis", "1")], vec![m(&[3, 4])]),
        case("nanprod", &[("axis", "0"), ("keepdims", "True")], vec![m(&[3, 4])]),
        case("argmax_channel", &[], vec![m(&[3, 4])]),
        case("reverse", &[("axis", "(0, 1)")], vec![m(&[3, 4])]),
        case("shape_array", &[], vec![m(&[3, 4])]),
        case("size_array", &[], vec![m(&[3, 4])]),
        case("broadcast_axis", &[("axis", "(1,)"), ("size", "(3,)")], vec![m(&[4, 1])]),
        case("slice_like", &[("axes", "(0,)")], vec![m(&[4, 3]), m(&[2, 5]).no_grad()]),
        case("Pad", &[("mode", "edge"), ("pad_width", "(0, 0, 0, 0, 1, 2, 2, 1)")], vec![m(&[1, 1, 2, 3])]),
        case(
            "Pad",
            &[("mode", "reflect"), ("pad_width", "(0, 0, 0, 0, 1, 1, 2, 1)")],
            vec![m(&[1, 1, 2, 3])],
        ),
        case(
            "pad",
            &[("mode", "constant"), ("pad_width", "(0, 0, 0, 0, 1, 0, 0, 2)"), ("constant_value", "1.5")],
            vec![m(&[1, 2, 2, 3])],
        ),
        case("split_v2", &[("indices_or_sections", "(1, 3)"), ("axis", "1")], vec![m(&[2, 5])]),
        case("_split_v2", &[("sections", "3"), ("axis", "0"), ("squeeze_axis", "True")], vec![m(&[3, 2])]),
        // one_hot's only input is its indices: forward checks only
        case("one_hot", &[("depth", "4")], vec![idx(&[1., 0., 3.], &[3])]),
        case(
            "one_hot",
            &[("depth", "3"), ("dtype", "float64"), ("on_value", "2.5")],
            vec![idx(&[2., 1.], &[2])],
        ),
        case("where", &[], vec![idx(&[1., 0., 1., 0., 0., 1.], &[2, 3]), m(&[2, 3]), m(&[2, 3])]),
        // a condition of one entry per row
        case("where", &[], vec![idx(&[0., 1.], &[2]), m(&[2, 3]), m(&[2, 3])]),
        // --- shape manipulation
        case("reshape", &[("shape", "(-1, 0)")], vec![m(&[2, 3, 2])]),
        case("reshape", &[("shape", "(3, -1)"), ("reverse", "True")], vec![m(&[6, 2])]),
        case("reshape_like", &[], vec![m(&[2, 3]), m(&[3, 2])]),
        case("flatten", &[], vec![m(&[2, 3, 2])]),
        case("expand_dims", &[("axis", "1")], vec![m(&[2, 3])]),
        case("squeeze", &[("axis", "(1,)")], vec![m(&[2, 1, 3, 1])]),
        case("transpose", &[("axes", "(1, 2, 0)")], vec![m(&[2, 3, 4])]),
        case("SwapAxis", &[("dim1", "0"), ("dim2", "-1")], vec![m(&[2, 3, 4])]),
        case("transpose", &[], vec![m(&[2, 3])]),
        case("cast", &[("dtype", "float32")], vec![m(&[2, 3])]),
        case("cast", &[("dtype", "float64")], vec![m(&[2, 3]).dtype(DType::F32)]),
        case("slice", &[("begin", "(None, 3)"), ("end", "(None, 0)"), ("step", "(1, -1)")], vec![m(&[3, 4])]),
        case("slice", &[("begin", "(1,)"), ("end", "(3,)")], vec![m(&[4, 3])]),
        case(
            "_slice_assign",
            &[("begin", "(1, None)"), ("end", "(3, None)"), ("step", "(1, 2)")],
            vec![m(&[4, 3]), m(&[2, 2])],
        ),
        case(
            "_slice_assign_scalar",
            &[("scalar", "2.5"), ("begin", "(None, -1)"), ("end", "(None, 0)"), ("step", "(None, -2)")],
            vec![m(&[3, 4])],
        ),
        case("slice_axis", &[("axis", "1"), ("begin", "1"), ("end", "3")], vec![m(&[3, 4])]),
        case("slice_axis", &[("axis", "0"), ("begin", "-2"), ("end", "None")], vec![m(&[3, 4, 2])]),
        case("broadcast_to", &[("shape", "(2, 0, 4)")], vec![m(&[3, 1])]),
        case("broadcast_like", &[], vec![m(&[1, 3]), m(&[2, 3])]),
        case("depth_to_space", &[("block_size", "2")], vec![m(&[1, 8, 2, 1])]),
        case("space_to_depth", &[("block_size", "2")], vec![m(&[2, 1, 2, 4])]),
        case("diag", &[("k", "1")], vec![m(&[3, 4])]),
        case("diag", &[("k", "-1")], vec![m(&[3])]),
        case("diag", &[("k", "1"), ("axis1", "2"), ("axis2", "0")], vec![m(&[3, 2, 4])]),
        case(
            "_backward_diag",
            &[("k", "-1"), ("axis1", "1"), ("axis2", "0"), ("shape", "(3, 4, 2)")],
            vec![m(&[2, 3])],
        ),
        case("moments", &[("axes", "(0, 2)")], vec![m(&[2, 3, 2])]),
        case("moments", &[("axes", "(1,)"), ("keepdims", "True")], vec![m(&[3, 4])]),
        case(
            "im2col",
            &[("kernel", "(2, 2)"), ("stride", "(2, 1)"), ("pad", "(1, 0)")],
            vec![m(&[2, 2, 3, 3])],
        ),
        case(
            "col2im",
            &[("kernel", "(2,)"), ("dilate", "(2,)"), ("output_size", "(5,)")],
            vec![m(&[1, 4, 3])],
        ),
        case("_contrib_AdaptiveAvgPooling2D", &[("output_size", "(2, 3)")], vec![m(&[1, 2, 3, 5])]),
        case(
            "_backward_contrib_AdaptiveAvgPooling2D",
            &[("output_size", "2"), ("shape", "(1, 1, 3, 5)")],
            vec![m(&[1, 1, 2, 2])],
        ),
        case("tile", &[("reps", "(2, 1, 2)")], vec![m(&[2, 3])]),
        case("repeat", &[("repeats", "2"), ("axis", "1")], vec![m(&[2, 3])]),
        case("repeat", &[("repeats", "2")], vec![m(&[2, 2])]),
        case("concat", &[("dim", "1")], vec![m(&[2, 1]), m(&[2, 2]), m(&[2, 3])]),
        case("concat", &[("dim", "0")], vec![m(&[3, 2]), m(&[1, 2])]),
        case("stack", &[("axis", "1")], vec![m(&[2, 3]), m(&[2, 3])]),
        // several visible outputs
        case("split", &[("num_outputs", "2")], vec![m(&[2, 4, 3])]),
        case("split", &[("num_outputs", "3"), ("axis", "1"), ("squeeze_axis", "True")], vec![m(&[2, 3])]),
        // --- Custom: the test's own custom operator (lhs * rhs + bias, with an
        // aux state `bias`); the one operator whose gradient is a backward kernel
        case("Custom", &[("op_type", CUSTOM_OP_TYPE)], vec![m(&[2, 3]), m(&[2, 3]), m(&[2, 3]).no_grad()]),
    ];
    // --- random samplers: like Dropout, every forward call starts from the
    // same seed; their gradient is zero (MXNet's), the parameters' included
    for dist in ["uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial"] {
        let like: &'static str = Box::leak(format!("_random_{dist}_like").into_boxed_str());
        t.push(case(like, &[], vec![m(&[2, 3])]));
    }
    t.push(case(
        "_random_generalized_negative_binomial_like",
        &[("mu", "2"), ("alpha", "0.5")],
        vec![m(&[3, 2])],
    ));
    t.push(case("_sample_uniform", &[("shape", "(3,)")], vec![x(&[2]), uniform(&[2], 2.5, 3.5)]));
    t.push(case("_sample_normal", &[("shape", "(2, 2)")], vec![x(&[3]), pos(&[3])]));
    t.push(case("_sample_gamma", &[], vec![pos(&[2, 2]), pos(&[2, 2])]));
    t.push(case("_sample_exponential", &[("shape", "(4,)")], vec![pos(&[2])]));
    t.push(case("_sample_poisson", &[("shape", "(4,)")], vec![pos(&[2])]));
    t.push(case("_sample_negative_binomial", &[("shape", "(3,)")], vec![pos(&[2]), uniform(&[2], 0.2, 0.8)]));
    t.push(case("_sample_generalized_negative_binomial", &[("shape", "(3,)")], vec![pos(&[2]), pos(&[2])]));
    // the log probabilities of the draws carry a gradient into the probabilities
    t.push(case(
        "_sample_multinomial",
        &[("shape", "(4,)"), ("get_prob", "True"), ("dtype", "float64")],
        vec![vals(&[0.2, 0.3, 0.5, 0.1, 0.6, 0.3], &[2, 3])],
    ));
    t.extend(control_flow::cases());
    // --- densities of samples, differentiable in the parameters (and in
    // continuous samples)
    let counts = || idx(&[0.0, 1.0, 2.0, 3.0, 1.0, 4.0], &[2, 3]);
    t.push(case("_random_pdf_normal", &[], vec![x(&[2, 3]), x(&[2]), pos(&[2])]));
    t.push(case("_random_pdf_normal", &[("is_log", "True")], vec![x(&[2, 3]), x(&[2]), pos(&[2])]));
    t.push(case("_random_pdf_gamma", &[], vec![pos(&[2, 3]), pos(&[2]), pos(&[2])]));
    t.push(case("_random_pdf_exponential", &[("is_log", "True")], vec![pos(&[2, 3]), pos(&[2])]));
    t.push(case(
        "_random_pdf_uniform",
        &[],
        vec![uniform(&[2, 3], 0.5, 1.5), uniform(&[2], -1.0, 0.0), uniform(&[2], 2.0, 3.0)],
    ));
    t.push(case("_random_pdf_poisson", &[], vec![counts(), pos(&[2])]));
    t.push(case("_random_pdf_negative_binomial", &[], vec![counts(), pos(&[2]), uniform(&[2], 0.2, 0.8)]));
    t.push(case(
        "_random_pdf_generalized_negative_binomial",
        &[("is_log", "True")],
        vec![counts(), pos(&[2]), pos(&[2])],
    ));
    t.push(case(
        "_random_pdf_dirichlet",
        &[],
        vec![vals(&[0.2, 0.8, 0.6, 0.4, 0.3, 0.7], &[3, 2]), pos(&[2])],
    ));
    // --- Dropout is random: every forward call (imperative and executor)
    // starts from the same seed, so both draw the same mask and the values
    // can be compared exactly; the property checks the sample really drops
    // some entries and scales the others. forward(false) is the identity
    // (except with mode=always, which drops in predict mode too, from the same seed).
    let mut d = case("Dropout", &[("p", "0.5")], vec![m(&[4, 5])]);
    d.property = Some(|i, o| dropout_property(0.5)(i, o));
    t.push(d);
    let mut d = case("Dropout", &[("p", "0.4"), ("mode", "always"), ("axes", "(0,)")], vec![m(&[3, 6])]);
    d.property = Some(|i, o| dropout_property(0.4)(i, o));
    t.push(d);
    t.push(case("Dropout", &[("p", "0")], vec![m(&[2, 3])]));
    t.extend(detection_cases());
    t
}

/// The detection operators (`contrib.box_*`, `MultiBox*`, `Proposal`): boxes
/// with distinct scores, so that no order depends on ties.
fn detection_cases() -> Vec<Case> {
    let m = |shape: &[usize]| x(shape);
    // rows [class, score, x1, y1, x2, y2]
    let nms_rows: Vec<f64> = (0..10)
        .flat_map(|i| {
            let (x0, y0) = ((i * 3 % 5) as f64 * 0.4, (i * 2 % 5) as f64 * 0.3);
            [(i % 2) as f64, 0.05 + ((i * 7) % 10) as f64 / 10.0, x0, y0, x0 + 1.0, y0 + 0.8]
        })
        .collect();
    let unit_boxes = |n: usize| {
        let v: Vec<f64> = (0..n)
            .flat_map(|i| {
                let (x0, y0) = ((i % 3) as f64 * 0.25, (i / 3) as f64 * 0.3);
                [x0, y0, x0 + 0.35 + 0.05 * i as f64, y0 + 0.4]
            })
            .collect();
        vals(&v, &[1, n, 4])
    };
    let labels =
        [0., 0.1, 0.1, 0.5, 0.45, 1., 0.3, 0.2, 0.8, 0.7, 2., 0.0, 0.3, 0.4, 0.9, -1., -1., -1., -1., -1.];
    let f32s = |i: In| i.dtype(DType::F32);
    let proposal = [
        ("scales", "(1, 2)"),
        ("ratios", "(1,)"),
        ("rpn_pre_nms_top_n", "10"),
        ("rpn_post_nms_top_n", "5"),
        ("rpn_min_size", "4"),
        ("threshold", "0.6"),
        ("output_score", "True"),
    ];
    vec![
        case(
            "_contrib_box_iou",
            &[],
            vec![
                vals(&[0.1, 0.2, 1.3, 1.1, 0.5, 0.4, 2.0, 1.7], &[2, 4]),
                vals(&[0.0, 0.0, 1.0, 1.0, 1.2, 0.9, 2.2, 2.1, 0.3, 0.6, 1.6, 1.9], &[3, 4]),
            ],
        ),
        case("_contrib_box_nms", &[("overlap_thresh", "0.3")], vec![vals(&nms_rows, &[2, 5, 6])]),
        case(
            "_contrib_box_nms",
            &[("overlap_thresh", "0.2"), ("id_index", "0"), ("topk", "4"), ("out_format", "center")],
            vec![vals(&nms_rows, &[10, 6])],
        ),
        case(
            "_contrib_box_encode",
            &[],
            vec![
                idx(&[1., -1., 1.], &[1, 3]),
                idx(&[1., 0., 0.], &[1, 3]),
                unit_boxes(3),
                vals(&[0.1, 0.0, 0.6, 0.5, 0.3, 0.2, 0.9, 0.8], &[1, 2, 4]),
                vals(&[0.1, 0.0, -0.1, 0.2], &[4]),
                pos(&[4]),
            ],
        ),
        case(
            "_contrib_box_decode",
            &[("format", "corner"), ("clip", "1.5")],
            vec![m(&[2, 3, 4]), unit_boxes(3)],
        ),
        case("_contrib_bipartite_matching", &[("threshold", "-1.0")], vec![m(&[2, 3, 4])]),
        case(
            "_contrib_MultiBoxPrior",
            &[("sizes", "(0.4, 0.2)"), ("ratios", "(1, 2)")],
            vec![m(&[1, 2, 3, 4])],
        ),
        case(
            "_contrib_MultiBoxTarget",
            &[("negative_mining_ratio", "1"), ("overlap_threshold", "0.3")],
            vec![unit_boxes(6), idx(&labels, &[2, 2, 5]), m(&[2, 3, 6])],
        ),
        case(
            "_contrib_MultiBoxDetection",
            &[("threshold", "0.6"), ("nms_threshold", "0.3")],
            vec![pos(&[2, 3, 6]), uniform(&[2, 24], -0.5, 0.5), unit_boxes(6)],
        ),
        case(
            "_contrib_Proposal",
            &proposal,
            vec![
                f32s(uniform(&[1, 4, 3, 3], 0.0, 1.0)),
                f32s(m(&[1, 8, 3, 3])),
                f32s(idx(&[48., 40., 1.], &[1, 3])),
            ],
        ),
        case(
            "_contrib_MultiProposal",
            &proposal,
            vec![
                f32s(uniform(&[2, 4, 3, 3], 0.0, 1.0)),
                f32s(m(&[2, 8, 3, 3])),
                f32s(idx(&[48., 40., 1., 32., 48., 0.5], &[2, 3])),
            ],
        ),
    ]
}

// ---------------------------------------------------------------------------
// The custom operator behind the `Custom` case

struct MulAdd;

impl CustomOp for MulAdd {
    fn forward(
        &self,
        _train: bool,
        req: &[Req],
        ins: &[NDArray],
        outs: &[NDArray],
        aux: &[NDArray],
    ) -> Result<()> {
        let p = oxnet_core::invoke1("elemwise_mul", &[&ins[0], &ins[1]], &[])?;
        let y = oxnet_core::invoke1("elemwise_add", &[&p, &aux[0]], &[])?;
        custom::assign(&outs[0], req[0], &y)
    }

    fn backward(
        &self,
        req: &[Req],
        out_grad: &[NDArray],
        in_data: &[NDArray],
        _out_data: &[NDArray],
        in_grad: &[NDArray],
        _aux: &[NDArray],
    ) -> Result<()> {
        let da = oxnet_core::invoke1("elemwise_mul", &[&out_grad[0], &in_data[1]], &[])?;
        let db = oxnet_core::invoke1("elemwise_mul", &[&out_grad[0], &in_data[0]], &[])?;
        custom::assign(&in_grad[0], req[0], &da)?;
        custom::assign(&in_grad[1], req[1], &db)
    }
}

struct MulAddProp;

impl CustomOpProp for MulAddProp {
    fn list_arguments(&self) -> Vec<String> {
        vec!["lhs".into(), "rhs".into()]
    }

    fn list_auxiliary_states(&self) -> Vec<String> {
        vec!["bias".into()]
    }

    fn create_operator(&self, _: Device, _: &[Shape], _: &[DType]) -> Result<Arc<dyn CustomOp>> {
        Ok(Arc::new(MulAdd))
    }
}

pub fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| custom::register(CUSTOM_OP_TYPE, |_| Ok(Arc::new(MulAddProp))));
}
