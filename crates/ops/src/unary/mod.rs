//! Built-in operators: element-wise functions of one array.
//!
//! `negative, abs, sign, exp, log, log1p, expm1, sqrt, rsqrt, square,
//! reciprocal, sin, cos, tanh, sigmoid, relu, softrelu, erf, gelu, clip`,
//! plus `zeros_like`, `ones_like`, `identity` (alias `_copy`) and
//! `BlockGrad` (alias `stop_gradient`); trigonometric, hyperbolic and
//! other maths in [`maths`]; `floor`, `ceil`, `round`, `rint`, `fix` and
//! `trunc` in [`rounding`].
//!
//! Kernels go through the small framework in [`kernel`]: each operator
//! states its per-element function ([`funcs`]) and the framework handles
//! dtypes, requests and parallelism. Gradients are rules composed of
//! operator calls, so they can be differentiated again; sigmoid, tanh, relu,
//! gelu and clip use fused hidden helpers (`_backward_sigmoid`, ...) whose
//! own gradients are again composed of operators.

pub(crate) mod funcs;
mod hard_sigmoid;
pub(crate) mod kernel;
mod maths;
#[cfg(test)]
mod maths_tests;
mod rounding;
#[cfg(test)]
mod rounding_tests;
mod special;
#[cfg(test)]
mod special_tests;
#[cfg(test)]
mod tests;

use self::funcs::*;
use self::kernel::{binary_forward, unary_forward, BinaryFn, UnaryFn};
use crate::util::call;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Device, Element, Error, GradCtx, NDArray, OpContext,
    OpDef, Req, Result,
};

/// The one input, one output and request of a unary kernel call.
fn unary_args<'a>(
    ctx: &OpContext,
    ins: &'a [NDArray],
    outs: &'a [NDArray],
) -> Result<(&'a NDArray, &'a NDArray, Req)> {
    match (ins, outs, ctx.req) {
        ([x], [y], [r]) => Ok((x, y, *r)),
        _ => Err(Error::Invalid(format!(
            "`{}` takes one input and one output, got {} and {}",
            ctx.op_name,
            ins.len(),
            outs.len()
        ))),
    }
}

/// An operator computing `k` element-wise (no attributes).
fn unary_op<K: UnaryFn + Copy + 'static>(name: &str, doc: &str, k: K) -> OpDef {
    OpDef::new(name).doc(doc).inplace(&[(0, 0)]).forward(move |ctx, ins, outs| {
        let (x, y, req) = unary_args(ctx, ins, outs)?;
        unary_forward(&k, ctx.op_name, req, x, y)
    })
}

/// A hidden two-input helper `name(out_grad, second)` computing `k`.
fn backward_op<K: BinaryFn + 'static>(
    name: &str,
    doc: &str,
    second: &str,
    make: impl Fn(&Attrs) -> Result<K> + Send + Sync + 'static,
) -> OpDef {
    OpDef::new(name).doc(doc).arguments(&["out_grad", second]).forward(move |ctx, ins, outs| {
        match (ins, outs, ctx.req) {
            ([g, s], [o], [r]) => binary_forward(&make(ctx.attrs)?, ctx.op_name, *r, g, s, o),
            _ => Err(Error::Invalid(format!("`{}` takes two inputs and one output", ctx.op_name))),
        }
    })
}

/// A gradient rule for a one-input operator: `f(out_grad, input, output)`
/// gives the input's gradient.
fn rule(
    f: impl Fn(&NDArray, &NDArray, &NDArray, &Attrs) -> Result<NDArray> + Send + Sync + 'static,
) -> impl Fn(&GradCtx) -> Result<Vec<Option<NDArray>>> + Send + Sync + 'static {
    move |g: &GradCtx| {
        if !g.needs_grad.first().copied().unwrap_or(false) {
            return Ok(vec![None]);
        }
        match (g.out_grads, g.inputs, g.outputs) {
            ([og], [x], [y]) => Ok(vec![Some(f(og, x, y, g.attrs)?)]),
            _ => Err(Error::Autograd("a unary gradient rule expects one input and one output".into())),
        }
    }
}

fn op1(name: &str, x: &NDArray) -> Result<NDArray> {
    call(name, &[x], &[])
}

fn op2(name: &str, a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call(name, &[a, b], &[])
}

fn mul(a: &NDArray, b: &NDArray) -> Result<NDArray> {
    op2("elemwise_mul", a, b)
}

fn with_scalar(name: &str, x: &NDArray, s: f64) -> Result<NDArray> {
    call(name, &[x], &[("scalar", AttrValue::Float(s))])
}

fn clip_attrs(attrs: &Attrs) -> Result<Clip> {
    Ok(Clip::new(attrs.float("a_min")?, attrs.float("a_max")?))
}

/// Computes a helper's gradient towards its second input from
/// (incoming gradient, out_grad, second input).
type SecondInputGrad = fn(&NDArray, &NDArray, &NDArray) -> Result<NDArray>;

/// Gradient rule of a `_backward_*(out_grad, z)` helper `h(g, z) = g * d(z)`:
/// the gradient towards `out_grad` is the helper itself applied to the
/// incoming gradient; `dz` (if given) computes the one towards `z` from
/// (incoming, out_grad, z).
fn helper_rule(
    name: &'static str,
    float_attrs: &'static [&'static str],
    dz: Option<SecondInputGrad>,
) -> impl Fn(&GradCtx) -> Result<Vec<Option<NDArray>>> + Send + Sync + 'static {
    move |c: &GradCtx| {
        let ([og], [g, z]) = (c.out_grads, c.inputs) else {
            return Err(Error::Autograd(format!("`{name}` expects two inputs and one output")));
        };
        let needs = |i: usize| c.needs_grad.get(i).copied().unwrap_or(false);
        let dg = if needs(0) {
            let attrs = float_attrs
                .iter()
                .map(|k| Ok((*k, AttrValue::Float(c.attrs.float(k)?))))
                .collect::<Result<Vec<_>>>()?;
            Some(call(name, &[og, z], &attrs)?)
        } else {
            None
        };
        let dzv = match (dz, needs(1)) {
            (Some(f), true) => Some(f(og, g, z)?),
            _ => None,
        };
        Ok(vec![dg, dzv])
    }
}

/// Calls the fused helper `name` (kernel `k`) on `(g, z)`. Outside
/// recording (a first-order backward pass) the kernel runs directly into a
/// fresh array, skipping the dispatcher's look-up, inference and checks;
/// while recording (`create_graph`), or for anything unusual (strided
/// arrays, other devices, mismatched arrays), it goes through the dispatcher
/// so that the call is recorded and checked as usual.
fn fused<K: BinaryFn>(
    name: &str,
    k: &K,
    g: &NDArray,
    z: &NDArray,
    attrs: &[(&str, AttrValue)],
) -> Result<NDArray> {
    let direct = !oxnet_core::dispatch::calls_are_observed()
        && g.device().is_host()
        && z.device().is_host()
        && g.dtype() == z.dtype()
        && g.shape() == z.shape()
        && g.is_contiguous()
        && z.is_contiguous();
    if direct {
        let out = NDArray::empty(g.shape(), g.dtype(), Device::Cpu)?;
        binary_forward(k, name, Req::Write, g, z, &out).map_err(|e| e.in_op(name))?;
        return Ok(out);
    }
    call(name, &[g, z], attrs)
}

/// Registers this module's operators.
pub(crate) fn register() {
    maths::register();
    rounding::register();
    hard_sigmoid::register();
    special::register();
    let reg = |def: OpDef| {
        registry::register(def);
    };

    reg(unary_op("negative", "Numerical negative: -x, element-wise.", Negative)
        .grad_rule(rule(|g, _, _, _| op1("negative", g))));
    reg(unary_op("abs", "Absolute value |x|, element-wise.", Abs)
        .grad_rule(rule(|g, x, _, _| mul(g, &op1("sign", x)?))));
    reg(unary_op("sign", "Sign of x (-1, 0 or 1), element-wise.", Sign).zero_grad());
    reg(OpDef::new("logical_not")
        .doc("Logical not: 1 where x is 0, else 0, element-wise, in the input's dtype (zero gradient).")
        .forward(|ctx, ins, outs| match (ins, outs) {
            ([x], [out]) => {
                let y = with_scalar("_equal_scalar", x, 0.0)?;
                oxnet_core::store::store(ctx.req[0], out, &y)
            }
            _ => Err(Error::Invalid("logical_not takes one input and one output".into())),
        })
        .zero_grad());
    reg(unary_op("exp", "Exponential e^x, element-wise.", Exp).grad_rule(rule(|g, _, y, _| mul(g, y))));
    reg(unary_op("log", "Natural logarithm, element-wise.", Log)
        .grad_rule(rule(|g, x, _, _| op2("elemwise_div", g, x))));
    reg(unary_op("log1p", "log(1 + x), element-wise, accurate for small x.", Log1p)
        .grad_rule(rule(|g, x, _, _| op2("elemwise_div", g, &with_scalar("_plus_scalar", x, 1.0)?))));
    reg(unary_op("expm1", "exp(x) - 1, element-wise, accurate for small x.", Expm1)
        .grad_rule(rule(|g, _, y, _| mul(g, &with_scalar("_plus_scalar", y, 1.0)?))));
    reg(unary_op("sqrt", "Square root, element-wise.", Sqrt)
        .grad_rule(rule(|g, _, y, _| op2("elemwise_div", &with_scalar("_mul_scalar", g, 0.5)?, y))));
    reg(unary_op("rsqrt", "Reciprocal square root 1/sqrt(x), element-wise.", Rsqrt).grad_rule(rule(
        |g, x, y, _| with_scalar("_mul_scalar", &op2("elemwise_div", &mul(g, y)?, x)?, -0.5),
    )));
    reg(unary_op("square", "x * x, element-wise.", Square)
        .grad_rule(rule(|g, x, _, _| mul(g, &with_scalar("_mul_scalar", x, 2.0)?))));
    reg(unary_op("reciprocal", "1 / x, element-wise.", Reciprocal)
        .grad_rule(rule(|g, _, y, _| op1("negative", &mul(g, &op1("square", y)?)?))));
    reg(unary_op("sin", "Sine, element-wise.", Sin).grad_rule(rule(|g, x, _, _| mul(g, &op1("cos", x)?))));
    reg(unary_op("cos", "Cosine, element-wise.", Cos)
        .grad_rule(rule(|g, x, _, _| op1("negative", &mul(g, &op1("sin", x)?)?))));
    reg(unary_op("tanh", "Hyperbolic tangent, element-wise.", Tanh)
        .grad_rule(rule(|g, _, y, _| fused("_backward_tanh", &TanhBackward, g, y, &[]))));
    reg(unary_op("sigmoid", "Logistic sigmoid 1 / (1 + exp(-x)), element-wise.", Sigmoid)
        .grad_rule(rule(|g, _, y, _| fused("_backward_sigmoid", &SigmoidBackward, g, y, &[]))));
    reg(unary_op("relu", "Rectified linear unit max(x, 0), element-wise.", Relu)
        .grad_rule(rule(|g, _, y, _| fused("_backward_relu", &ReluBackward, g, y, &[]))));
    reg(unary_op("softrelu", "Softplus log(1 + exp(x)), element-wise.", Softrelu)
        .grad_rule(rule(|g, x, _, _| mul(g, &op1("sigmoid", x)?))));
    reg(unary_op("softsign", "Softsign x / (1 + |x|), element-wise.", Softsign).grad_rule(rule(
        |g, x, _, _| {
            let denom = with_scalar("_plus_scalar", &op1("abs", x)?, 1.0)?;
            op2("elemwise_div", g, &op1("square", &denom)?)
        },
    )));
    reg(unary_op("erf", "Gauss error function, element-wise.", Erf).grad_rule(rule(|g, x, _, _| {
        let e = op1("exp", &op1("negative", &op1("square", x)?)?)?;
        mul(g, &with_scalar("_mul_scalar", &e, std::f64::consts::FRAC_2_SQRT_PI)?)
    })));
    reg(unary_op("gelu", "Gaussian error linear unit 0.5 * x * (1 + erf(x / sqrt(2))), element-wise.", Gelu)
        .grad_rule(rule(|g, x, _, _| fused("_backward_gelu", &GeluBackward, g, x, &[]))));
    reg(OpDef::new("clip")
        .doc("Clips values to [a_min, a_max], element-wise (values above a_max become a_max, then values below a_min become a_min).")
        .attr(AttrSpec::required("a_min", AttrKind::Float, "Minimum value."))
        .attr(AttrSpec::required("a_max", AttrKind::Float, "Maximum value."))
        .forward(|ctx, ins, outs| {
            let (x, y, req) = unary_args(ctx, ins, outs)?;
            unary_forward(&clip_attrs(ctx.attrs)?, ctx.op_name, req, x, y)
        })
        .grad_rule(rule(|g, x, _, attrs| {
            let k = ClipBackward(clip_attrs(attrs)?);
            let bounds = [("a_min", AttrValue::Float(k.0.lo)), ("a_max", AttrValue::Float(k.0.hi))];
            fused("_backward_clip", &k, g, x, &bounds)
        })));

    // Copies and constants (every dtype).
    reg(OpDef::new("identity")
        .alias("_copy")
        .doc("Returns a copy of the input.")
        .inplace(&[(0, 0)])
        .forward(copy_kernel)
        .grad_rule(rule(|g, _, _, _| Ok(g.clone()))));
    reg(OpDef::new("_identity_with_attr_like_rhs")
        .doc("Returns a copy of `lhs`, which must have the shape of `rhs`: a shape constraint that lets graph inference learn either one from the other. The gradient flows to `lhs` only.")
        .arguments(&["lhs", "rhs"])
        .forward(|ctx, ins, outs| copy_kernel(ctx, &ins[..1], outs))
        .grad_rule(|g| {
            let rhs = if g.needs_grad[1] { Some(crate::util::call("zeros_like", &[&g.inputs[1]], &[])?) } else { None };
            Ok(vec![Some(g.out_grads[0].clone()), rhs])
        }));
    reg(OpDef::new("BlockGrad")
        .alias("stop_gradient")
        .doc("Returns a copy of the input and stops gradients from flowing through it (zero gradient).")
        .inplace(&[(0, 0)])
        .forward(copy_kernel)
        .zero_grad());
    reg(OpDef::new("zeros_like")
        .doc("An array of zeros with the shape and dtype of the input.")
        .forward(|ctx, ins, outs| fill_kernel(ctx, ins, outs, false))
        .zero_grad());
    reg(OpDef::new("ones_like")
        .doc("An array of ones with the shape and dtype of the input.")
        .forward(|ctx, ins, outs| fill_kernel(ctx, ins, outs, true))
        .zero_grad());

    // Fused gradient helpers.
    reg(backward_op(
        "_backward_sigmoid",
        "Sigmoid gradient out_grad * y * (1 - y) from the output y.",
        "output",
        |_| Ok(SigmoidBackward),
    )
    .grad_rule(helper_rule(
        "_backward_sigmoid",
        &[],
        Some(|h, g, y| {
            mul(&mul(h, g)?, &with_scalar("_rminus_scalar", &with_scalar("_mul_scalar", y, 2.0)?, 1.0)?)
        }),
    )));
    reg(backward_op(
        "_backward_tanh",
        "Tanh gradient out_grad * (1 - y^2) from the output y.",
        "output",
        |_| Ok(TanhBackward),
    )
    .grad_rule(helper_rule(
        "_backward_tanh",
        &[],
        Some(|h, g, y| with_scalar("_mul_scalar", &mul(&mul(h, g)?, y)?, -2.0)),
    )));
    reg(backward_op(
        "_backward_relu",
        "ReLU gradient out_grad * (y > 0) from the output y.",
        "output",
        |_| Ok(ReluBackward),
    )
    .grad_rule(helper_rule("_backward_relu", &[], None)));
    reg(backward_op("_backward_gelu", "GELU gradient out_grad * gelu'(x) from the input x.", "data", |_| {
        Ok(GeluBackward)
    })
    .grad_rule(helper_rule(
        "_backward_gelu",
        &[],
        Some(|h, g, x| {
            // gelu''(x) = phi(x) * (2 - x^2), phi the standard normal density
            let x2 = op1("square", x)?;
            let phi = with_scalar(
                "_mul_scalar",
                &op1("exp", &with_scalar("_mul_scalar", &x2, -0.5)?)?,
                FRAC_1_SQRT_2PI,
            )?;
            mul(&mul(h, g)?, &mul(&phi, &with_scalar("_rminus_scalar", &x2, 2.0)?)?)
        }),
    )));
    reg(backward_op(
        "_backward_clip",
        "Clip gradient out_grad * (a_min < x < a_max) from the input x.",
        "data",
        |a| Ok(ClipBackward(clip_attrs(a)?)),
    )
    .attr(AttrSpec::required("a_min", AttrKind::Float, "Minimum value."))
    .attr(AttrSpec::required("a_max", AttrKind::Float, "Maximum value."))
    .grad_rule(helper_rule("_backward_clip", &["a_min", "a_max"], None)));
}

/// Forward of `identity`/`BlockGrad`: copies under the request (any dtype).
fn copy_kernel(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (x, y, req) = unary_args(ctx, ins, outs)?;
    match req {
        Req::Null => Ok(()),
        Req::Write | Req::Inplace => {
            if x.shares_storage(y) && x.offset() == y.offset() {
                Ok(())
            } else {
                y.assign_from(x)
            }
        }
        Req::Add => {
            oxnet_core::with_dtype!(x.dtype(), T => {
                let src = x.as_slice::<T>()?.to_vec();
                kernel::add_into(y.as_mut_slice::<T>()?, &src);
            });
            Ok(())
        }
    }
}

/// Forward of `zeros_like`/`ones_like` (any dtype).
fn fill_kernel(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray], one: bool) -> Result<()> {
    let (_, y, req) = unary_args(ctx, ins, outs)?;
    match req {
        Req::Null => Ok(()),
        Req::Write | Req::Inplace => y.fill(if one { 1.0 } else { 0.0 }),
        Req::Add if !one => Ok(()),
        Req::Add => {
            oxnet_core::with_dtype!(y.dtype(), T => {
                for v in y.as_mut_slice::<T>()? {
                    *v = v.add(T::one());
                }
            });
            Ok(())
        }
    }
}
