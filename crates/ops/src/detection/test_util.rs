//! Helpers of this folder's tests: arrays, attributes, and the check of
//! the calls MXNet 1.9.1 computed ([`super::mx_values`],
//! [`super::mx_values_f16`]).

use super::mx_values::{F32, F64};
use super::mx_values_f16::F16;
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::compare;
use oxnet_core::{invoke, AttrValue, DType, NDArray, Req};

/// One operator call with MXNet's visible outputs and, for `box_nms`,
/// the gradient of its input for the head gradient [`head`].
pub(super) struct MxCase {
    pub key: &'static str,
    pub op: &'static str,
    pub attrs: &'static [(&'static str, &'static str)],
    /// Shape and values of each input.
    pub inputs: &'static [(&'static [usize], &'static [f64])],
    /// Shape and values of each visible output.
    pub outs: &'static [(&'static [usize], &'static [f64])],
    /// The gradient of input 0 (empty: not computed).
    pub grad: &'static [f64],
}

/// The head gradient of an output of `n` elements.
pub(super) fn head(n: usize) -> Vec<f64> {
    (0..n).map(|j| (j * 13 % 29) as f64 / 8.0 - 1.5).collect()
}

pub(super) fn arr(v: &[f64], shape: &[usize], dtype: DType) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap().astype(dtype).unwrap()
}

pub(super) fn raw<'a>(attrs: &[(&'a str, &'a str)]) -> Vec<(&'a str, AttrValue)> {
    attrs.iter().map(|(k, v)| (*k, AttrValue::from(*v))).collect()
}

/// Calls `op` and returns the error's text (the call must fail).
pub(super) fn err(op: &str, inputs: &[&NDArray], attrs: &[(&str, &str)]) -> String {
    match invoke(op, inputs, &raw(attrs)) {
        Ok(_) => panic!("{op} with {attrs:?} should fail"),
        Err(e) => e.to_string(),
    }
}

/// The values of `op`'s outputs on `inputs`.
pub(super) fn values(op: &str, inputs: &[&NDArray], attrs: &[(&str, &str)]) -> Vec<Vec<f64>> {
    let outs = invoke(op, inputs, &raw(attrs)).unwrap_or_else(|e| panic!("{op}: {e}"));
    outs.iter().map(|o| o.to_vec::<f64>().unwrap()).collect()
}

fn check_case(c: &MxCase, dtype: DType, tol: f64) {
    let inputs: Vec<NDArray> = c.inputs.iter().map(|(s, v)| arr(v, s, dtype)).collect();
    let with_grad = !c.grad.is_empty();
    if with_grad {
        inputs[0].attach_grad(Req::Write).unwrap();
    }
    let refs: Vec<&NDArray> = inputs.iter().collect();
    let outs = {
        let _r = with_grad.then(autograd::record);
        invoke(c.op, &refs, &raw(c.attrs)).unwrap_or_else(|e| panic!("{}: {e}", c.key))
    };
    assert!(outs.len() >= c.outs.len(), "{}: {} outputs", c.key, outs.len());
    for (i, (o, (shape, want))) in outs.iter().zip(c.outs).enumerate() {
        assert_eq!((o.shape(), o.dtype()), (*shape, dtype), "{}: output {i}", c.key);
        compare(c.key, &format!("output {i}"), &o.to_vec::<f64>().unwrap(), want, tol, tol).unwrap();
    }
    if with_grad {
        let dy = arr(&head(outs[0].size()), outs[0].shape(), dtype);
        autograd::backward(&[&outs[0]], &[Some(&dy)], BackwardOptions::default()).unwrap();
        let g = inputs[0].grad().unwrap().to_vec::<f64>().unwrap();
        compare(c.key, "gradient", &g, c.grad, tol, tol).unwrap();
    }
}

/// Checks every float32, float64 and float16 call MXNet computed whose
/// operator is one of `ops` (the float16 values exactly); returns how many
/// ran.
pub(super) fn check_mx_cases(ops: &[&str]) -> usize {
    let mut n = 0;
    for (cases, dtype, tol) in [(F32, DType::F32, 1e-7), (F64, DType::F64, 1e-13), (F16, DType::F16, 0.0)] {
        for c in cases.iter().filter(|c| ops.contains(&c.op)) {
            check_case(c, dtype, tol);
            n += 1;
        }
    }
    n
}
