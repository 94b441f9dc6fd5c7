//! Every registered operator with a gradient, run as a one-node graph by the
//! [`Executor`] and compared with imperative autograd on the same inputs.
//!
//! For each operator the table in [`cases`] gives attributes and sample
//! inputs (values, shapes, dtypes, which inputs take no gradient). Each case
//! builds `op(x0, x1, ...)` with [`Symbol::compose_op`] over one variable
//! per input and checks, against `invoke` under `autograd::record()` +
//! `autograd::backward` with the same head gradients:
//!
//! * outputs of `forward(true)` and `forward(false)` (the latter against an
//!   imperative call in predict mode), float64 inputs, tolerance 1e-12;
//! * gradients with grad_req `write` (also after a second backward, which
//!   must overwrite, not add);
//! * grad_req `add`: buffers pre-filled with [`ADD_FILL`] end as
//!   `ADD_FILL + g`, and as `ADD_FILL + 2g` after a second backward;
//! * grad_req `null` on the first differentiable input (no gradient buffer)
//!   with `write` on the others, which must still get their gradients
//!   (operators with one differentiable input: everything `null`, forward
//!   only).
//!
//! [`every_op_with_a_gradient_has_a_case`] fails when an operator with a
//! gradient (`Gradient::Rule`, `Kernel` or `Zero`) has no case and is not in
//! [`EXCLUDED`], so new operators get covered. Aliases are one operator
//! (`list_ops` folds them); cases may name an operator by an alias.

use oxnet_core::custom::{self, CustomOp, CustomOpProp};
use oxnet_core::{
    autograd, random, registry, AttrValue, DType, Device, Gradient, NDArray, Req, Result, Shape,
};
use oxnet_graph::{Executor, Symbol};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Once};

/// Operators with a gradient that have no case, each with the reason.
/// Keep this short: prefer adding a case.
const EXCLUDED: &[(&str, &str)] = &[];

/// Operators whose executor result disagrees with imperative autograd, with
/// the diagnosis. Their cases still run and must fail; a case that starts to
/// pass makes the test fail so that the entry gets removed.
const KNOWN_BUGS: &[(&str, &str)] = &[];

/// What `add` gradient buffers hold before backward.
const ADD_FILL: f64 = 0.75;
/// The seed set before every forward call, so that operators drawing random
/// numbers (Dropout) draw the same numbers imperatively and in the executor.
/// The generator is global: no other test in this file may draw from it.
const SEED: u64 = 20240611;
const RTOL: f64 = 1e-12;
const ATOL: f64 = 1e-12;

/// The name under which the test's custom operator (for `Custom`) is registered.
const CUSTOM_OP_TYPE: &str = "every_op_mul_add";

// ---------------------------------------------------------------------------
// Sample inputs

/// One sample input of a case.
#[derive(Clone, Debug)]
struct In {
    shape: Vec<usize>,
    values: Vec<f64>,
    dtype: DType,
    /// Whether the input is differentiated (false for indices, labels, conditions).
    grad: bool,
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

    fn array(&self) -> NDArray {
        NDArray::from_vec(self.values.clone(), &self.shape).unwrap().astype(self.dtype).unwrap()
    }
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// `n` distinct values in `(lo, hi)`, in a scrambled order. Arrays made with
/// different `salt`s lie on different grids, so no two values of two inputs
/// are equal either (no ties for maximum/minimum), and no value is 0 for a
/// range symmetric around 0.
fn distinct(n: usize, lo: f64, hi: f64, salt: u64) -> Vec<f64> {
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

fn next_salt() -> u64 {
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
type Property = fn(&[NDArray], &[Vec<f64>]) -> Outcome;

/// One operator call to compare.
struct Case {
    op: &'static str,
    attrs: Vec<(&'static str, &'static str)>,
    inputs: Vec<In>,
    /// An extra check of the executor's `forward(true)` outputs (for random
    /// operators, whose values are compared but should also be plausible).
    property: Option<Property>,
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

fn cases() -> Vec<Case> {
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
        // zero gradient by definition
        case("sign", &[], vec![m(&[2, 3])]),
        case("BlockGrad", &[], vec![m(&[2, 3])]),
        case("zeros_like", &[], vec![m(&[2, 3])]),
        case("ones_like", &[], vec![m(&[2, 3])]),
        // --- activations
        case("Activation", &[("act_type", "relu")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "sigmoid")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "tanh")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "softrelu")], vec![m(&[2, 3])]),
        case("Activation", &[("act_type", "softsign")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "leaky"), ("slope", "0.1")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "elu"), ("slope", "0.7")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "selu")], vec![m(&[2, 3])]),
        case("LeakyReLU", &[("act_type", "gelu")], vec![m(&[2, 3])]),
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
        // --- softmax family and losses
        case("softmax", &[], vec![m(&[2, 4])]),
        case("softmax", &[("axis", "0"), ("temperature", "2.0")], vec![m(&[3, 2])]),
        case("softmin", &[("axis", "1")], vec![m(&[2, 3, 2])]),
        case("log_softmax", &[("temperature", "0.7")], vec![m(&[2, 4])]),
        case("softmax_cross_entropy", &[], vec![m(&[3, 4]), idx(&[1., 3., 0.], &[3])]),
        // --- indexing
        case("take", &[], vec![m(&[4, 3]), idx(&[2., 0., 2., 5.], &[2, 2])]),
        case("take", &[("axis", "1"), ("mode", "wrap")], vec![m(&[2, 3, 2]), idx(&[1., -1., 1.], &[3])]),
        // int32 indices: mixed dtypes in one node
        case("take", &[], vec![m(&[4, 3]), idx(&[3., 1.], &[2]).dtype(DType::I32)]),
        case("pick", &[("axis", "1")], vec![m(&[3, 4]), idx(&[2., 0., 3.], &[3])]),
        case(
            "pick",
            &[("axis", "0"), ("keepdims", "True"), ("mode", "wrap")],
            vec![m(&[3, 4]), idx(&[1., 7., -1., 2.], &[1, 4])],
        ),
        case("pick", &[], vec![m(&[2, 3]), idx(&[2., 1.], &[2]).dtype(DType::I32)]),
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
        case("transpose", &[], vec![m(&[2, 3])]),
        case("cast", &[("dtype", "float32")], vec![m(&[2, 3])]),
        case("cast", &[("dtype", "float64")], vec![m(&[2, 3]).dtype(DType::F32)]),
        case("slice", &[("begin", "(None, 3)"), ("end", "(None, 0)"), ("step", "(1, -1)")], vec![m(&[3, 4])]),
        case("slice", &[("begin", "(1,)"), ("end", "(3,)")], vec![m(&[4, 3])]),
        case("slice_axis", &[("axis", "1"), ("begin", "1"), ("end", "3")], vec![m(&[3, 4])]),
        case("slice_axis", &[("axis", "0"), ("begin", "-2"), ("end", "None")], vec![m(&[3, 4, 2])]),
        case("broadcast_to", &[("shape", "(2, 0, 4)")], vec![m(&[3, 1])]),
        case("broadcast_like", &[], vec![m(&[1, 3]), m(&[2, 3])]),
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
    t
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

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| custom::register(CUSTOM_OP_TYPE, |_| Ok(Arc::new(MulAddProp))));
}

// ---------------------------------------------------------------------------
// Running one case

type Outcome = std::result::Result<(), String>;

fn err(what: &str) -> impl Fn(oxnet_core::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn compare(what: &str, got: &[f64], want: &[f64]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g == w || (g - w).abs() <= ATOL + RTOL * w.abs();
        if !ok {
            return Err(format!("{what}: element {j} is {g}, expected {w}\n  got  {got:?}\n  want {want:?}"));
        }
    }
    Ok(())
}

/// Shape, dtype and values of an array.
#[derive(Debug, Clone)]
struct Snap {
    shape: Vec<usize>,
    dtype: DType,
    values: Vec<f64>,
}

fn snap(a: &NDArray) -> Snap {
    Snap { shape: a.shape().to_vec(), dtype: a.dtype(), values: a.to_vec::<f64>().unwrap() }
}

fn compare_snaps(what: &str, got: &[Snap], want: &[Snap]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: {} outputs, expected {}", got.len(), want.len()));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g.shape != w.shape || g.dtype != w.dtype {
            return Err(format!(
                "{what}: output {k} is {:?} {}, expected {:?} {}",
                g.shape, g.dtype, w.shape, w.dtype
            ));
        }
        compare(&format!("{what}: output {k}"), &g.values, &w.values)?;
    }
    Ok(())
}

/// The imperative reference of one case.
struct Reference {
    /// Visible outputs of a recorded train-mode call.
    train: Vec<Snap>,
    /// Visible outputs of a predict-mode call.
    predict: Vec<Snap>,
    /// One head gradient per visible output.
    head_grads: Vec<NDArray>,
    /// Gradient of each input (`None` for inputs without gradient).
    grads: Vec<Option<Vec<f64>>>,
}

fn call(case: &Case, params: &[(String, String)], inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    let attrs: Vec<(&str, AttrValue)> =
        params.iter().map(|(k, v)| (k.as_str(), AttrValue::Raw(v.clone()))).collect();
    let refs: Vec<&NDArray> = inputs.iter().collect();
    random::seed(SEED);
    oxnet_core::invoke(case.op, &refs, &attrs)
}

fn reference(
    case: &Case,
    params: &[(String, String)],
    n_args: usize,
    n_vis: usize,
) -> std::result::Result<Reference, String> {
    let inputs: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
    let differentiable: Vec<bool> =
        case.inputs.iter().enumerate().map(|(i, s)| s.grad && i < n_args).collect();
    for (x, d) in inputs.iter().zip(&differentiable) {
        if *d {
            x.attach_grad(Req::Write).map_err(err("attach_grad"))?;
        }
    }
    let outs = {
        let _r = autograd::record();
        call(case, params, &inputs).map_err(err("imperative forward (train)"))?
    };
    let outs = &outs[..n_vis.min(outs.len())];
    let train: Vec<Snap> = outs.iter().map(snap).collect();
    let head_grads: Vec<NDArray> = outs
        .iter()
        .map(|o| {
            let v = distinct(o.size(), 0.5, 1.5, next_salt());
            NDArray::from_vec(v, o.shape()).unwrap().astype(o.dtype()).unwrap()
        })
        .collect();
    let any_grad = differentiable.iter().any(|d| *d);
    if any_grad {
        let heads: Vec<&NDArray> = outs.iter().collect();
        let hg: Vec<Option<&NDArray>> = head_grads.iter().map(Some).collect();
        autograd::backward(&heads, &hg, Default::default()).map_err(err("imperative backward"))?;
    }
    let grads = inputs
        .iter()
        .zip(&differentiable)
        .map(|(x, d)| d.then(|| x.grad().expect("attached").to_vec::<f64>().unwrap()))
        .collect();
    let predict = {
        let fresh: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
        let _p = autograd::pause();
        let _m = autograd::predict_mode();
        call(case, params, &fresh).map_err(err("imperative forward (predict)"))?
    };
    let predict = predict[..n_vis.min(predict.len())].iter().map(snap).collect();
    Ok(Reference { train, predict, head_grads, grads })
}

/// Binds `sym` with fresh copies of the case's inputs, one request per
/// argument; `add` buffers start at [`ADD_FILL`].
fn bind(sym: &Symbol, case: &Case, n_args: usize, reqs: &[Req]) -> std::result::Result<Executor, String> {
    let arrays: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
    let (args, aux) = arrays.split_at(n_args);
    let grads = args
        .iter()
        .zip(reqs)
        .map(|(a, r)| match r {
            Req::Null => None,
            Req::Add => Some(NDArray::full(a.shape(), ADD_FILL, a.dtype(), Device::Cpu).unwrap()),
            _ => Some(NDArray::full(a.shape(), -3.0, a.dtype(), Device::Cpu).unwrap()), // overwritten
        })
        .collect();
    Executor::new(sym, Device::Cpu, args.to_vec(), grads, reqs.to_vec(), aux.to_vec()).map_err(err("bind"))
}

fn forward(exe: &mut Executor, is_train: bool) -> std::result::Result<Vec<Snap>, String> {
    random::seed(SEED);
    let outs =
        exe.forward(is_train).map_err(err(if is_train { "forward(true)" } else { "forward(false)" }))?;
    Ok(outs.iter().map(snap).collect())
}

fn backward(exe: &mut Executor, r: &Reference) -> Outcome {
    let hg: Vec<Option<NDArray>> = r.head_grads.iter().map(|g| Some(g.clone())).collect();
    exe.backward(&hg).map_err(err("backward"))
}

fn executor_grad(exe: &Executor, i: usize) -> std::result::Result<Vec<f64>, String> {
    let g = exe.grad_arrays()[i].as_ref().ok_or_else(|| format!("argument {i} has no gradient buffer"))?;
    Ok(g.to_vec::<f64>().unwrap())
}

/// `values` as stored in `dtype`.
fn round_to(dtype: DType, values: Vec<f64>, shape: &[usize]) -> Vec<f64> {
    NDArray::from_vec(values, shape).unwrap().astype(dtype).unwrap().to_vec::<f64>().unwrap()
}

fn run_case(case: &Case) -> Outcome {
    let op = registry::get(case.op).map_err(err("registry"))?;
    let mut params: Vec<(String, String)> =
        case.attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    if op.attrs.iter().any(|a| a.name == "num_args") && !params.iter().any(|(k, _)| k == "num_args") {
        params.push(("num_args".into(), case.inputs.len().to_string()));
    }

    // the graph: one variable per input
    let vars: Vec<Symbol> = (0..case.inputs.len()).map(|i| Symbol::var(&format!("x{i}"))).collect();
    let sym = Symbol::compose_op(case.op, &vars, &[], params.clone(), Some("node"), BTreeMap::new())
        .map_err(err("compose_op"))?;
    let call = sym.entries()[0].node.op.clone().expect("an operator node");
    let (n_args, n_aux, n_out) = call.arity().map_err(err("arity"))?;
    if n_args + n_aux != case.inputs.len() {
        return Err(format!(
            "the case gives {} inputs, the operator takes {n_args} + {n_aux} aux",
            case.inputs.len()
        ));
    }
    let n_vis = call.visible_outputs().map_err(err("visible_outputs"))?;
    if sym.num_outputs() != n_vis || n_vis > n_out {
        return Err(format!(
            "the symbol has {} outputs, the operator shows {n_vis} of {n_out}",
            sym.num_outputs()
        ));
    }
    let names = |r: std::ops::Range<usize>| r.map(|i| format!("x{i}")).collect::<Vec<_>>();
    let args = sym.list_arguments().map_err(err("list_arguments"))?;
    let aux = sym.list_auxiliary_states().map_err(err("list_auxiliary_states"))?;
    if args != names(0..n_args) || aux != names(n_args..n_args + n_aux) {
        return Err(format!(
            "arguments {args:?} and aux states {aux:?} are not the variables in input order"
        ));
    }

    let r = reference(case, &params, n_args, n_vis)?;
    let differentiable: Vec<usize> = (0..n_args).filter(|&i| case.inputs[i].grad).collect();
    // the comparisons below are only worth something if the gradients are not all zero
    let nonzero =
        differentiable.iter().any(|&i| r.grads[i].as_ref().is_some_and(|g| g.iter().any(|v| *v != 0.0)));
    match call.op.gradient {
        Gradient::Zero if nonzero => return Err("a Gradient::Zero operator gave a nonzero gradient".into()),
        Gradient::Rule(_) | Gradient::Kernel { .. } if !differentiable.is_empty() && !nonzero => {
            return Err("every reference gradient is zero: choose inputs that show something".into())
        }
        _ => {}
    }
    let req_of = |i: usize, req: Req| if differentiable.contains(&i) { req } else { Req::Null };

    // grad_req write
    let reqs: Vec<Req> = (0..n_args).map(|i| req_of(i, Req::Write)).collect();
    let mut exe = bind(&sym, case, n_args, &reqs)?;
    let outs = forward(&mut exe, true)?;
    compare_snaps("write: forward(true)", &outs, &r.train)?;
    if let Some(property) = case.property {
        let inputs: Vec<NDArray> = case.inputs.iter().map(In::array).collect();
        let values: Vec<Vec<f64>> = outs.iter().map(|s| s.values.clone()).collect();
        property(&inputs, &values).map_err(|e| format!("forward(true): {e}"))?;
    }
    if !differentiable.is_empty() {
        for pass in 1..=2 {
            backward(&mut exe, &r)?;
            for &i in &differentiable {
                let want = r.grads[i].as_ref().expect("differentiable");
                compare(
                    &format!("write: gradient of input {i} after backward #{pass}"),
                    &executor_grad(&exe, i)?,
                    want,
                )?;
            }
        }
    }
    for (i, g) in exe.grad_arrays().iter().enumerate() {
        if g.is_some() != differentiable.contains(&i) {
            return Err(format!("write: argument {i} has a gradient buffer: {}", g.is_some()));
        }
    }
    let outs = forward(&mut exe, false)?;
    compare_snaps("write: forward(false)", &outs, &r.predict)?;
    // a train-mode forward and backward again after a predict-mode forward
    let outs = forward(&mut exe, true)?;
    compare_snaps("write: forward(true) after forward(false)", &outs, &r.train)?;
    if !differentiable.is_empty() {
        backward(&mut exe, &r)?;
        for &i in &differentiable {
            let want = r.grads[i].as_ref().expect("differentiable");
            compare(
                &format!("write: gradient of input {i} after a second forward(true)"),
                &executor_grad(&exe, i)?,
                want,
            )?;
        }
    }

    if differentiable.is_empty() {
        return Ok(());
    }

    // grad_req add: pre-filled buffers accumulate, twice over two backward calls
    let reqs: Vec<Req> = (0..n_args).map(|i| req_of(i, Req::Add)).collect();
    let mut exe = bind(&sym, case, n_args, &reqs)?;
    compare_snaps("add: forward(true)", &forward(&mut exe, true)?, &r.train)?;
    // what the buffers should hold, accumulated (and rounded) in their dtype
    let mut want: Vec<Vec<f64>> = (0..n_args).map(|i| vec![ADD_FILL; numel(&case.inputs[i].shape)]).collect();
    for pass in 1..=2 {
        backward(&mut exe, &r)?;
        for &i in &differentiable {
            let g = r.grads[i].as_ref().expect("differentiable");
            let sum: Vec<f64> = want[i].iter().zip(g).map(|(a, b)| a + b).collect();
            want[i] = round_to(case.inputs[i].dtype, sum, &case.inputs[i].shape);
            compare(
                &format!("add: gradient of input {i} after backward #{pass}"),
                &executor_grad(&exe, i)?,
                &want[i],
            )?;
        }
    }
    compare_snaps("add: forward(false)", &forward(&mut exe, false)?, &r.predict)?;

    // grad_req null on the first differentiable input, write on the others
    let first = differentiable[0];
    let reqs: Vec<Req> =
        (0..n_args).map(|i| if i == first { Req::Null } else { req_of(i, Req::Write) }).collect();
    let mut exe = bind(&sym, case, n_args, &reqs)?;
    compare_snaps("null: forward(true)", &forward(&mut exe, true)?, &r.train)?;
    if exe.grad_arrays()[first].is_some() {
        return Err(format!("null: argument {first} has a gradient buffer"));
    }
    if differentiable.len() >= 2 {
        backward(&mut exe, &r)?;
        for &i in &differentiable[1..] {
            let want = r.grads[i].as_ref().expect("differentiable");
            compare(
                &format!("null on input {first}: gradient of input {i}"),
                &executor_grad(&exe, i)?,
                want,
            )?;
        }
    }
    compare_snaps("null: forward(false)", &forward(&mut exe, false)?, &r.predict)?;
    Ok(())
}

fn has_gradient(name: &str) -> bool {
    let op = registry::get(name).unwrap();
    matches!(op.gradient, Gradient::Rule(_) | Gradient::Kernel { .. } | Gradient::Zero)
}

fn canonical(name: &str) -> String {
    registry::get(name).map(|op| op.name.clone()).unwrap_or_else(|_| name.to_string())
}

fn case_label(case: &Case) -> String {
    let attrs: Vec<String> = case.attrs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let shapes: Vec<String> =
        case.inputs.iter().map(|i| format!("{:?}{}", i.shape, if i.grad { "" } else { "*" })).collect();
    format!("{}({}; {})", case.op, shapes.join(", "), attrs.join(", "))
}

// ---------------------------------------------------------------------------
// The tests

#[test]
fn executor_matches_imperative_autograd_for_every_op() {
    setup();
    let known: BTreeMap<&str, &str> = KNOWN_BUGS.iter().copied().collect();
    let mut failures = Vec::new();
    let mut known_failures = BTreeSet::new();
    let mut known_passes = BTreeSet::new();
    let cases = cases();
    for case in &cases {
        let name = canonical(case.op);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(case)))
            .unwrap_or_else(|p| {
                Err(format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                ))
            });
        match (outcome, known.contains_key(name.as_str())) {
            (Ok(()), false) => {}
            (Ok(()), true) => {
                known_passes.insert(name);
            }
            (Err(e), true) => {
                eprintln!("known bug, still failing: {}: {e}", case_label(case));
                known_failures.insert(name);
            }
            (Err(e), false) => failures.push(format!("{}: {e}", case_label(case))),
        }
    }
    let fixed: Vec<&String> = known_passes.difference(&known_failures).collect();
    assert!(
        failures.is_empty() && fixed.is_empty(),
        "{} of {} cases failed:\n{}\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n"),
        if fixed.is_empty() {
            String::new()
        } else {
            format!("operators in KNOWN_BUGS whose cases all pass now (remove them from the list): {fixed:?}")
        }
    );
}

#[test]
fn every_op_with_a_gradient_has_a_case() {
    setup();
    let covered: BTreeSet<String> = cases().iter().map(|c| canonical(c.op)).collect();
    let excluded: BTreeMap<&str, &str> = EXCLUDED.iter().copied().collect();
    let mut problems = Vec::new();
    for (name, _) in EXCLUDED.iter().chain(KNOWN_BUGS) {
        if !registry::contains(name) {
            problems.push(format!("`{name}` is listed in EXCLUDED or KNOWN_BUGS but not registered"));
        } else if canonical(name) != *name {
            problems.push(format!("`{name}` is an alias; list `{}`", canonical(name)));
        }
    }
    for name in &covered {
        if !registry::contains(name) {
            problems.push(format!("a case names `{name}`, which is not registered"));
        } else if !has_gradient(name) {
            problems.push(format!("a case names `{name}`, which has no gradient"));
        }
        if excluded.contains_key(name.as_str()) {
            problems.push(format!("`{name}` has a case and is in EXCLUDED"));
        }
    }
    for (name, _) in KNOWN_BUGS {
        if !covered.contains(*name) {
            problems.push(format!("`{name}` is in KNOWN_BUGS but has no case"));
        }
    }
    let mut with_gradient = 0;
    for info in registry::list_ops() {
        if !has_gradient(&info.name) {
            continue;
        }
        with_gradient += 1;
        if !covered.contains(&info.name) && !excluded.contains_key(info.name.as_str()) {
            problems.push(format!(
                "operator `{}` has a gradient but no case in tests/every_op.rs: add one to `cases()` \
                 (or, with a reason, to EXCLUDED)",
                info.name
            ));
        }
    }
    assert!(with_gradient > 0, "no operator with a gradient is registered");
    eprintln!(
        "{with_gradient} operators with a gradient: {} with cases, {} excluded",
        covered.len(),
        EXCLUDED.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
