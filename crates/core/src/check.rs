//! The op checker: one call that tests an operator the way oxnet tests its
//! built-ins. Any author of a custom operator can use it.
//!
//! [`OpChecker::run`] checks that
//! 1. the operator runs and its outputs have the shapes and dtypes that
//!    shape/dtype inference predicts;
//! 2. the gradients from autograd match central differences computed in
//!    float64 (for every differentiable input);
//! 3. `req = add` accumulates into existing output buffers and `req = write`
//!    overwrites them, in the forward kernel and in the backward pass
//!    (`grad_req = add` accumulates over two backward passes);
//! 4. malformed calls (a missing input, an unknown attribute to an operator that declares some) give errors,
//!    not panics.
//!
//! Autograd adds up gradients with the built-in `elemwise_add`, so the
//! checker runs in a program that links the built-in operators (the
//! `oxnet-ops` crate), as here:
//!
//! ```no_run
//! use oxnet_core::{check::OpChecker, custom::FunctionOp, NDArray};
//!
//! FunctionOp::new("cube", &["x"], |ins| {
//!     let y = ins[0].to_vec::<f64>()?.iter().map(|x| x * x * x).collect();
//!     Ok(vec![NDArray::from_vec(y, ins[0].shape())?])
//! })
//! .def_grad(0, |_ans, ins, g| {
//!     let (x, g) = (ins[0].to_vec::<f64>()?, g[0].to_vec::<f64>()?);
//!     NDArray::from_vec(x.iter().zip(&g).map(|(x, g)| 3.0 * x * x * g).collect(), ins[0].shape())
//! })
//! .register();
//! let x = NDArray::from_vec(vec![0.5f64, -1.0, 2.0], &[3]).unwrap();
//! OpChecker::new("cube", &[x]).run().unwrap();
//! ```

use crate::autograd::{self, BackwardOptions};
use crate::dispatch::{arity, infer_outputs};
use crate::registry;
use crate::shape::Shape;
use crate::{AttrValue, DType, Error, NDArray, Req, Result};

/// A configurable check of one operator on sample inputs.
pub struct OpChecker {
    op: String,
    attrs: Vec<(String, AttrValue)>,
    inputs: Vec<NDArray>,
    no_grad: Vec<usize>,
    eps: f64,
    rtol: f64,
    atol: f64,
    check_grad: bool,
    check_errors: bool,
}

/// What a successful check measured.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Outputs of the forward call.
    pub outputs: Vec<NDArray>,
    /// Largest absolute difference between analytic and numeric gradients.
    pub max_grad_error: f64,
    /// Number of gradient entries compared.
    pub grad_entries: usize,
}

fn fail(op: &str, msg: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("op check of `{op}` failed: {msg}"))
}

impl OpChecker {
    /// Checks `op` on `inputs` (use float64 inputs for tight gradient checks).
    pub fn new(op: &str, inputs: &[NDArray]) -> OpChecker {
        OpChecker {
            op: op.to_string(),
            attrs: Vec::new(),
            inputs: inputs.to_vec(),
            no_grad: Vec::new(),
            eps: 1e-6,
            rtol: 1e-4,
            atol: 1e-6,
            check_grad: true,
            check_errors: true,
        }
    }

    /// Adds an attribute.
    pub fn attr(mut self, key: &str, value: impl Into<AttrValue>) -> Self {
        self.attrs.push((key.to_string(), value.into()));
        self
    }

    /// Inputs that are not differentiated (indices, labels).
    pub fn no_grad(mut self, inputs: &[usize]) -> Self {
        self.no_grad.extend_from_slice(inputs);
        self
    }

    /// The finite-difference step.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }

    /// Relative and absolute tolerances for gradient comparison.
    pub fn tol(mut self, rtol: f64, atol: f64) -> Self {
        self.rtol = rtol;
        self.atol = atol;
        self
    }

    /// Skips the gradient checks (for operators without a gradient).
    pub fn skip_grad(mut self) -> Self {
        self.check_grad = false;
        self
    }

    /// Skips the malformed-call checks (for operators taking any number of inputs).
    pub fn skip_error_checks(mut self) -> Self {
        self.check_errors = false;
        self
    }

    fn attr_refs(&self) -> Vec<(&str, AttrValue)> {
        self.attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect()
    }

    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        let refs: Vec<&NDArray> = inputs.iter().collect();
        crate::invoke(&self.op, &refs, &self.attr_refs())
    }

    /// Runs every check; the error says which one failed and by how much.
    pub fn run(&self) -> Result<CheckReport> {
        let op = registry::get(&self.op)?;
        let attrs = op.parse_attrs(&self.attr_refs())?;
        let outputs = self.forward(&self.inputs)?;

        // 1. inference agrees with the real outputs
        let (_, _, n_out) = arity(&op, &attrs)?;
        let shapes: Vec<Shape> = self.inputs.iter().map(|x| Shape::from_slice(x.shape())).collect();
        let dtypes: Vec<DType> = self.inputs.iter().map(|x| x.dtype()).collect();
        if outputs.len() != n_out {
            return Err(fail(&self.op, format!("{} outputs, {} declared", outputs.len(), n_out)));
        }
        // operators with data-dependent output shapes have no inference to compare
        let inferred = if op.forward_dynamic.is_some() {
            None
        } else {
            Some(infer_outputs(&op, &attrs, &shapes, &dtypes, n_out)?)
        };
        for (i, o) in outputs.iter().enumerate() {
            let Some((inf_shapes, inf_dtypes)) = &inferred else { break };
            if o.shape() != inf_shapes[i].as_slice() || o.dtype() != inf_dtypes[i] {
                return Err(fail(
                    &self.op,
                    format!(
                        "output {i} is {:?} {}, inference said {:?} {}",
                        o.shape(),
                        o.dtype(),
                        inf_shapes[i].as_slice(),
                        inf_dtypes[i]
                    ),
                ));
            }
        }

        // 2. forward requests: write overwrites garbage, add accumulates
        let refs: Vec<&NDArray> = self.inputs.iter().collect();
        let garbage: Vec<NDArray> = outputs
            .iter()
            .map(|o| NDArray::full(o.shape(), 7.0, o.dtype(), o.device()))
            .collect::<Result<_>>()?;
        crate::invoke_into(&op, &refs, &attrs, &garbage, &vec![Req::Write; n_out])?;
        for (i, (g, o)) in garbage.iter().zip(&outputs).enumerate() {
            compare(
                &self.op,
                &format!("output {i} with req=write"),
                &g.to_vec::<f64>()?,
                &o.to_vec::<f64>()?,
                1e-6,
                1e-6,
            )?;
        }
        if outputs.iter().all(|o| o.dtype() != DType::Bool) {
            let acc: Vec<NDArray> = outputs
                .iter()
                .map(|o| NDArray::full(o.shape(), 1.0, o.dtype(), o.device()))
                .collect::<Result<_>>()?;
            crate::invoke_into(&op, &refs, &attrs, &acc, &vec![Req::Add; n_out])?;
            for (i, (a, o)) in acc.iter().zip(&outputs).enumerate() {
                let want: Vec<f64> = o.to_vec::<f64>()?.iter().map(|v| v + 1.0).collect();
                let got: Vec<f64> = a.to_vec::<f64>()?;
                compare(&self.op, &format!("output {i} with req=add"), &got, &want, 1e-3, 1e-3)?;
            }
        }

        // 3. gradients against central differences
        let (max_grad_error, grad_entries) =
            if self.check_grad { self.check_gradients(&outputs)? } else { (0.0, 0) };

        // 4. malformed calls are errors
        if self.check_errors {
            let mut fewer = refs.clone();
            if fewer.pop().is_some() && crate::invoke(&self.op, &fewer, &self.attr_refs()).is_ok() {
                return Err(fail(&self.op, "calling with one input missing did not fail"));
            }
            let mut bad = self.attr_refs();
            bad.push(("no_such_attribute_xyz", AttrValue::Int(1)));
            // (an operator without attributes keeps any, as in MXNet)
            if !op.allow_extra_attrs && !op.attrs.is_empty() && crate::invoke(&self.op, &refs, &bad).is_ok() {
                return Err(fail(&self.op, "an unknown attribute was accepted"));
            }
        }
        Ok(CheckReport { outputs, max_grad_error, grad_entries })
    }

    fn check_gradients(&self, outputs: &[NDArray]) -> Result<(f64, usize)> {
        let diff: Vec<usize> = (0..self.inputs.len())
            .filter(|i| !self.no_grad.contains(i) && self.inputs[*i].dtype().is_float())
            .collect();
        if diff.is_empty() {
            return Ok((0.0, 0));
        }
        // fixed random projection of the outputs: loss = sum_k <w_k, y_k>
        let weights: Vec<NDArray> = outputs
            .iter()
            .map(|o| NDArray::random_uniform(0.5, 1.5, o.shape(), o.dtype()))
            .collect::<Result<_>>()?;
        let float_out: Vec<bool> = outputs.iter().map(|o| o.dtype().is_float()).collect();
        let loss = |inputs: &[NDArray]| -> Result<f64> {
            let _p = autograd::pause();
            let _t = autograd::train_mode();
            let outs = self.forward(inputs)?;
            let mut total = 0.0;
            for ((o, w), f) in outs.iter().zip(&weights).zip(&float_out) {
                if *f {
                    total +=
                        o.to_vec::<f64>()?.iter().zip(w.to_vec::<f64>()?).map(|(a, b)| a * b).sum::<f64>();
                }
            }
            Ok(total)
        };

        // analytic, via autograd; twice with grad_req=add to check accumulation
        let inputs: Vec<NDArray> = self.inputs.iter().map(|x| x.copy()).collect::<Result<_>>()?;
        for &i in &diff {
            inputs[i].attach_grad(Req::Add)?;
        }
        let mut firsts: Vec<NDArray> = Vec::new();
        for pass in 0..2 {
            let outs = {
                let _r = autograd::record();
                self.forward(&inputs)?
            };
            let heads: Vec<&NDArray> =
                outs.iter().zip(&float_out).filter(|(_, f)| **f).map(|(o, _)| o).collect();
            let hg: Vec<Option<&NDArray>> =
                weights.iter().zip(&float_out).filter(|(_, f)| **f).map(|(w, _)| Some(w)).collect();
            if heads.is_empty() {
                return Ok((0.0, 0));
            }
            autograd::backward(
                &heads,
                &hg,
                BackwardOptions { retain_graph: pass == 0, ..Default::default() },
            )?;
            if pass == 0 {
                // keep the first pass's gradients
                for &i in &diff {
                    let g = inputs[i].grad().expect("attached");
                    firsts.push(g.copy()?);
                }
            }
        }

        let mut max_err = 0.0f64;
        let mut count = 0usize;
        for (k, &i) in diff.iter().enumerate() {
            let analytic = firsts[k].to_vec::<f64>()?;
            let twice = inputs[i].grad().expect("attached").to_vec::<f64>()?;
            let doubled: Vec<f64> = analytic.iter().map(|v| 2.0 * v).collect();
            compare(
                &self.op,
                &format!("gradient of input {i} with grad_req=add over two passes"),
                &twice,
                &doubled,
                1e-5,
                1e-7,
            )?;

            let base = self.inputs[i].to_vec::<f64>()?;
            let mut numeric = vec![0.0; base.len()];
            for j in 0..base.len() {
                let probe = |delta: f64| -> Result<f64> {
                    let mut v = base.clone();
                    v[j] += delta;
                    let mut trial = self.inputs.clone();
                    trial[i] =
                        NDArray::from_vec(v, self.inputs[i].shape())?.astype(self.inputs[i].dtype())?;
                    loss(&trial)
                };
                numeric[j] = (probe(self.eps)? - probe(-self.eps)?) / (2.0 * self.eps);
            }
            let err = compare(
                &self.op,
                &format!("gradient of input {i} against central differences"),
                &analytic,
                &numeric,
                self.rtol,
                self.atol,
            )?;
            max_err = max_err.max(err);
            count += base.len();
        }
        Ok((max_err, count))
    }
}

/// Compares element-wise with `|got - want| <= atol + rtol * |want|`;
/// returns the largest absolute difference.
pub fn compare(op: &str, what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) -> Result<f64> {
    if got.len() != want.len() {
        return Err(fail(op, format!("{what}: {} values, expected {}", got.len(), want.len())));
    }
    let mut max_err = 0.0f64;
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        let within = err <= atol + rtol * w.abs() || g == w;
        if w.is_nan() != g.is_nan() || (!w.is_nan() && !within) {
            return Err(fail(op, format!("{what}: element {j} is {g}, expected {w} (|diff| {err:.3e})")));
        }
        if err.is_finite() {
            max_err = max_err.max(err);
        }
    }
    Ok(max_err)
}

/// Asserts two arrays are element-wise close (numpy's `allclose`), with a
/// message giving the first differing element.
pub fn assert_close(got: &NDArray, want: &NDArray, rtol: f64, atol: f64) -> Result<()> {
    if got.shape() != want.shape() {
        return Err(Error::Shape(format!("shapes differ: {:?} vs {:?}", got.shape(), want.shape())));
    }
    compare("assert_close", "values", &got.to_vec::<f64>()?, &want.to_vec::<f64>()?, rtol, atol).map(|_| ())
}
