//! Function-style custom operators: a forward function plus one gradient
//! function per argument (the `@customop` + `def_grad(argnum)` idea).

use crate::op::OpDef;
use crate::registry::{self, Op};
use crate::{autograd, Error, NDArray, Result};
use std::sync::Arc;

type ForwardFn = Arc<dyn Fn(&[NDArray]) -> Result<Vec<NDArray>> + Send + Sync>;
/// `grad(outputs, inputs, out_grads) -> gradient of one argument`.
type GradFn = Arc<dyn Fn(&[NDArray], &[NDArray], &[NDArray]) -> Result<NDArray> + Send + Sync>;

/// A function registered as an operator, with gradients defined per argument.
///
/// ```
/// use oxnet_core::custom::FunctionOp;
/// use oxnet_core::{autograd, invoke1, NDArray, Req};
///
/// // Written here over plain slices; with the built-in operators linked
/// // (oxnet-ops), forward and gradient can call operators instead, and
/// // then differentiate to any order.
/// FunctionOp::new("cube", &["x"], |ins| {
///     let y = ins[0].to_vec::<f64>()?.iter().map(|x| x * x * x).collect();
///     Ok(vec![NDArray::from_vec(y, ins[0].shape())?])
/// })
/// .def_grad(0, |_ans, ins, g| {
///     let (x, g) = (ins[0].to_vec::<f64>()?, g[0].to_vec::<f64>()?);
///     NDArray::from_vec(x.iter().zip(&g).map(|(x, g)| 3.0 * x * x * g).collect(), ins[0].shape())
/// })
/// .register();
/// let x = NDArray::from_vec(vec![2.0f64], &[1]).unwrap();
/// x.attach_grad(Req::Write).unwrap();
/// let y = { let _r = autograd::record(); invoke1("cube", &[&x], &[]).unwrap() };
/// y.backward().unwrap();
/// assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![12.0]);
/// ```
pub struct FunctionOp {
    name: String,
    arguments: Vec<String>,
    outputs: Vec<String>,
    forward: ForwardFn,
    grads: Vec<Option<GradFn>>,
    doc: String,
}

impl FunctionOp {
    /// A function of the named arguments returning its outputs (one named
    /// `output` unless [`outputs`](Self::outputs) says otherwise).
    pub fn new(
        name: &str,
        arguments: &[&str],
        forward: impl Fn(&[NDArray]) -> Result<Vec<NDArray>> + Send + Sync + 'static,
    ) -> FunctionOp {
        FunctionOp {
            name: name.to_string(),
            arguments: arguments.iter().map(|s| s.to_string()).collect(),
            outputs: vec!["output".into()],
            forward: Arc::new(forward),
            grads: vec![None; arguments.len()],
            doc: String::new(),
        }
    }

    /// Names the outputs.
    pub fn outputs(mut self, names: &[&str]) -> Self {
        self.outputs = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Sets the documentation.
    pub fn doc(mut self, doc: &str) -> Self {
        self.doc = doc.to_string();
        self
    }

    /// Defines the gradient of argument `argnum`: `grad(outputs, inputs,
    /// out_grads)` returns it. Arguments without one get no gradient.
    pub fn def_grad(
        mut self,
        argnum: usize,
        grad: impl Fn(&[NDArray], &[NDArray], &[NDArray]) -> Result<NDArray> + Send + Sync + 'static,
    ) -> Self {
        if argnum >= self.grads.len() {
            self.grads.resize(argnum + 1, None);
        }
        self.grads[argnum] = Some(Arc::new(grad));
        self
    }

    /// Registers the function as an operator under its name.
    pub fn register(self) -> Op {
        let FunctionOp { name, arguments, outputs, forward, grads, doc } = self;
        let n_args = arguments.len();
        let n_out = outputs.len();
        let fname = name.clone();
        let arg_refs: Vec<&str> = arguments.iter().map(String::as_str).collect();
        let out_refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
        let def = OpDef::new(&name)
            .doc(if doc.is_empty() { "A function-style custom operator." } else { &doc })
            .arguments(&arg_refs)
            .outputs(&out_refs)
            .forward_dynamic(move |_ctx, inputs| {
                let was = autograd::set_recording(false);
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| forward(inputs)));
                autograd::set_recording(was);
                let outs = match result {
                    Ok(r) => r?,
                    Err(p) => return Err(Error::Panic(crate::dispatch::panic_message(p.as_ref()))),
                };
                if outs.len() != n_out {
                    return Err(Error::Invalid(format!(
                        "`{fname}` returned {} outputs, declared {n_out}",
                        outs.len()
                    )));
                }
                Ok(outs)
            })
            .grad_rule(move |g| {
                let mut result = Vec::with_capacity(n_args);
                for i in 0..n_args {
                    match (grads.get(i).cloned().flatten(), g.needs_grad[i]) {
                        (Some(f), true) => {
                            let d = f(g.outputs, g.inputs, g.out_grads)?;
                            if d.shape() != g.inputs[i].shape() {
                                return Err(Error::Shape(format!(
                                    "the gradient of argument {i} has shape {:?}, the argument has {:?}",
                                    d.shape(),
                                    g.inputs[i].shape()
                                )));
                            }
                            result.push(Some(d));
                        }
                        _ => result.push(None),
                    }
                }
                Ok(result)
            });
        registry::register(def)
    }
}
