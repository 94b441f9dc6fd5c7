//! `Activation` (relu, sigmoid, tanh, softrelu, softsign) and `LeakyReLU`
//! (leaky, elu, selu, gelu here; prelu and rrelu in [`super::prelu`]).

use super::{activation_grad, add, map_float, mul, prelu, scalar_op, unary};
use crate::kernels::simd_math::scalar;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, Attrs, GradCtx, NDArray, OpContext, OpDef, Result};

const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;
const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const FRAC_1_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// 1 / sqrt(2 pi).
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// `ln(1 + exp(v))` without overflow and accurate for very negative `v`
/// (f32, branch-free so that it vectorises).
#[inline(always)]
fn softrelu_f32(v: f32) -> f32 {
    let e = scalar::exp_f32(v.min(20.0));
    let u = 1.0 + e;
    // log1p(e) = log(u) * e / (u - 1), exact when u rounds to 1
    let d = u - 1.0;
    let l = if d == 0.0 { e } else { scalar::log_f32(u) * (e / d) };
    if v > 20.0 {
        v
    } else {
        l
    }
}

#[inline(always)]
fn softrelu_f64(v: f64) -> f64 {
    if v > 40.0 {
        v
    } else {
        v.exp().ln_1p()
    }
}

/// `exp(v) - 1` for `v <= 0`, accurate near 0 (f32, branch-free).
#[inline(always)]
fn expm1_f32(v: f32) -> f32 {
    let u = scalar::exp_f32(v);
    let d = u - 1.0;
    let l = scalar::log_f32(u);
    // Kahan's trick: (u - 1) * v / log(u), exact when u rounds to 1
    if d == 0.0 || l == 0.0 {
        v
    } else if u < 0.5 {
        d
    } else {
        d * (v / l)
    }
}

fn activation_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (x, out, req) = (&inputs[0], &outputs[0], ctx.req[0]);
    match ctx.attrs.str("act_type")? {
        "relu" => {
            map_float(x, out, req, |v| if v > 0.0 { v } else { 0.0 }, |v| if v > 0.0 { v } else { 0.0 })
        }
        "sigmoid" => map_float(x, out, req, scalar::sigmoid_f32, scalar::sigmoid_f64),
        "tanh" => map_float(x, out, req, scalar::tanh_f32, f64::tanh),
        "softrelu" => map_float(x, out, req, softrelu_f32, softrelu_f64),
        "softsign" => map_float(x, out, req, |v| v / (1.0 + v.abs()), |v| v / (1.0 + v.abs())),
        other => Err(oxnet_core::Error::attr("act_type", format!("unsupported activation `{other}`"))),
    }
}

/// 1 where `x > 0`, else 0 (zero gradient).
fn positive_mask(x: &NDArray) -> Result<NDArray> {
    unary("sign", &unary("relu", x)?)
}

fn activation_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let (x, y, og) = (&g.inputs[0], &g.outputs[0], &g.out_grads[0]);
    let act = g.attrs.str("act_type")?;
    if activation_grad::fused(act) {
        // relu, sigmoid, tanh: one pass from the output
        return Ok(vec![Some(activation_grad::activation_grad(act, og, y)?)]);
    }
    let dx = match act {
        "softrelu" => mul(og, &unary("sigmoid", x)?)?,
        // 1 / (1 + |x|)^2
        "softsign" => {
            let d = unary("square", &scalar_op("_plus_scalar", &unary("abs", x)?, 1.0)?)?;
            crate::util::call("elemwise_div", &[og, &d], &[])?
        }
        other => {
            return Err(oxnet_core::Error::attr("act_type", format!("unsupported activation `{other}`")))
        }
    };
    Ok(vec![Some(dx)])
}

fn leaky_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (x, out, req) = (&inputs[0], &outputs[0], ctx.req[0]);
    let slope = ctx.attrs.float("slope")?;
    let s32 = slope as f32;
    match ctx.attrs.str("act_type")? {
        "prelu" => prelu::prelu_forward(ctx, inputs, outputs),
        "rrelu" => prelu::rrelu_forward(ctx, inputs, outputs),
        "leaky" => map_float(
            x,
            out,
            req,
            move |v| if v > 0.0 { v } else { s32 * v },
            move |v| if v > 0.0 { v } else { slope * v },
        ),
        "elu" => map_float(
            x,
            out,
            req,
            move |v| {
                if v > 0.0 {
                    v
                } else {
                    s32 * expm1_f32(v.min(0.0))
                }
            },
            move |v| if v > 0.0 { v } else { slope * v.exp_m1() },
        ),
        "selu" => {
            let (l32, a32) = (SELU_LAMBDA as f32, SELU_ALPHA as f32);
            map_float(
                x,
                out,
                req,
                move |v| l32 * if v > 0.0 { v } else { a32 * expm1_f32(v.min(0.0)) },
                move |v| SELU_LAMBDA * if v > 0.0 { v } else { SELU_ALPHA * v.exp_m1() },
            )
        }
        "gelu" => map_float(
            x,
            out,
            req,
            move |v| 0.5 * v * (1.0 + scalar::erf_f32(v * FRAC_1_SQRT_2 as f32)),
            move |v| 0.5 * v * (1.0 + scalar::erf_f64(v * FRAC_1_SQRT_2)),
        ),
        other => Err(oxnet_core::Error::attr("act_type", format!("unsupported activation `{other}`"))),
    }
}

fn leaky_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    match g.attrs.str("act_type")? {
        "prelu" => return prelu::prelu_grad(g),
        "rrelu" => return prelu::rrelu_grad(g),
        _ => {}
    }
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let (x, y, og) = (&g.inputs[0], &g.outputs[0], &g.out_grads[0]);
    let slope = g.attrs.float("slope")?;
    // factor = mask·pos + (1 - mask)·neg, with mask = (x > 0)
    let blend = |pos: f64, neg: &NDArray| -> Result<NDArray> {
        let mask = positive_mask(x)?;
        let keep_neg = scalar_op("_rminus_scalar", &mask, 1.0)?;
        add(&scalar_op("_mul_scalar", &mask, pos)?, &mul(&keep_neg, neg)?)
    };
    let factor = match g.attrs.str("act_type")? {
        // 1 above 0, slope below: mask·(1 - slope) + slope
        "leaky" => {
            scalar_op("_plus_scalar", &scalar_op("_mul_scalar", &positive_mask(x)?, 1.0 - slope)?, slope)?
        }
        // below 0: slope·exp(x) = y + slope
        "elu" => blend(1.0, &scalar_op("_plus_scalar", y, slope)?)?,
        // below 0: λα·exp(x) = y + λα
        "selu" => blend(SELU_LAMBDA, &scalar_op("_plus_scalar", y, SELU_LAMBDA * SELU_ALPHA)?)?,
        // Φ(x) + x·φ(x)
        "gelu" => {
            let cdf = scalar_op(
                "_mul_scalar",
                &scalar_op(
                    "_plus_scalar",
                    &unary("erf", &scalar_op("_mul_scalar", x, FRAC_1_SQRT_2)?)?,
                    1.0,
                )?,
                0.5,
            )?;
            let pdf = scalar_op(
                "_mul_scalar",
                &unary("exp", &scalar_op("_mul_scalar", &unary("square", x)?, -0.5)?)?,
                FRAC_1_SQRT_2PI,
            )?;
            add(&cdf, &mul(x, &pdf)?)?
        }
        other => {
            return Err(oxnet_core::Error::attr("act_type", format!("unsupported activation `{other}`")))
        }
    };
    Ok(vec![Some(mul(og, &factor)?)])
}

/// LeakyReLU's arguments: `data`, plus `gamma` for prelu (as MXNet lists them).
fn leaky_arguments(attrs: &Attrs) -> Result<Vec<String>> {
    Ok(match attrs.str("act_type")? {
        "prelu" => vec!["data".into(), "gamma".into()],
        _ => vec!["data".into()],
    })
}

/// LeakyReLU's outputs: `output`, plus `mask` (the slopes drawn) for rrelu.
fn leaky_outputs(attrs: &Attrs) -> Result<Vec<String>> {
    Ok(match attrs.str("act_type")? {
        "rrelu" => vec!["output".into(), "mask".into()],
        _ => vec!["output".into()],
    })
}

fn leaky_infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    match attrs.str("act_type")? {
        "prelu" => prelu::infer_shape(ins, outs),
        _ => oxnet_core::op::same_shape(attrs, ins, outs),
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new("Activation")
            .inplace(&[(0, 0)])
            .doc("Element-wise activation: act_type relu, sigmoid, tanh, softrelu (log(1+exp(x))) or softsign (x/(1+|x|)).")
            .attr(AttrSpec::required(
                "act_type",
                AttrKind::Choice(vec!["relu", "sigmoid", "tanh", "softrelu", "softsign"]),
                "The activation function.",
            ))
            .forward(activation_forward)
            .grad_rule(activation_grad),
    );
    registry::register(
        OpDef::new("LeakyReLU")
            .doc(
                "Leaky rectifiers: `leaky` (x > 0 ? x : slope·x), `elu` (x > 0 ? x : slope·(exp(x) - 1)), \
                 `selu` (scaled elu with the fixed SELU constants), `gelu` (x·Φ(x)), `prelu` \
                 (x > 0 ? x : gamma·x with a learnt second argument `gamma` laid over axis 1, or \
                 axes 0 and 1, of the data; an unknown gamma is inferred as (data.shape[1],)) and \
                 `rrelu` (a slope drawn uniformly in [lower_bound, upper_bound) per element in \
                 train mode, their mean otherwise; a second output `mask` holds the slopes).",
            )
            .arguments_fn(leaky_arguments)
            .outputs_fn(leaky_outputs)
            // as MXNet: a prelu's own gamma variable starts at 0.25
            .input_var_attrs(|_, input| match input {
                "gamma" => vec![("__init__".into(), r#"["Constant", {"value": 0.25}]"#.into())],
                _ => Vec::new(),
            })
            .arity_fn(|attrs| {
                Ok(match attrs.str("act_type")? {
                    "prelu" => [2, 0, 1],
                    "rrelu" => [1, 0, 2],
                    _ => [1, 0, 1],
                })
            })
            .infer_shape(leaky_infer_shape)
            .resource(oxnet_core::Resource::Random)
            .attr(AttrSpec::optional(
                "act_type",
                AttrKind::Choice(vec!["elu", "gelu", "leaky", "prelu", "rrelu", "selu"]),
                "leaky",
                "The activation function.",
            ))
            .attr(AttrSpec::optional("slope", AttrKind::Float, 0.25, "Slope of leaky, alpha of elu."))
            .attr(AttrSpec::optional(
                "lower_bound",
                AttrKind::Float,
                0.125,
                "Lower bound of rrelu's random slope.",
            ))
            .attr(AttrSpec::optional(
                "upper_bound",
                AttrKind::Float,
                0.334,
                "Upper bound of rrelu's random slope.",
            ))
            .forward(leaky_forward)
            .grad_rule(leaky_grad),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::check::{assert_close, compare, OpChecker};
    use oxnet_core::{invoke1, AttrValue, DType};

    type RefFn = Box<dyn Fn(f64) -> f64>;

    fn sample() -> NDArray {
        // away from 0, where relu and leaky have kinks
        NDArray::from_vec(vec![-2.5f64, -1.2, -0.4, -0.05, 0.07, 0.3, 1.1, 3.0], &[2, 4]).unwrap()
    }

    fn erf_ref(x: f64) -> f64 {
        // Abramowitz-Stegun 7.1.26 is too coarse; integrate the series instead
        let mut sum = 0.0;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 || n < 5.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
            if n > 200.0 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn activation_values() {
        let x = sample();
        let xv = x.to_vec::<f64>().unwrap();
        let cases: Vec<(&str, RefFn)> = vec![
            ("relu", Box::new(|v: f64| if v > 0.0 { v } else { 0.0 })),
            ("sigmoid", Box::new(|v: f64| 1.0 / (1.0 + (-v).exp()))),
            ("tanh", Box::new(|v: f64| ((v).exp() - (-v).exp()) / ((v).exp() + (-v).exp()))),
            ("softrelu", Box::new(|v: f64| (1.0 + v.exp()).ln())),
            ("softsign", Box::new(|v: f64| v / (1.0 + v.abs()))),
        ];
        for (act, f) in cases {
            let want: Vec<f64> = xv.iter().map(|v| f(*v)).collect();
            let y = invoke1("Activation", &[&x], &[("act_type", act.into())]).unwrap();
            compare(act, "f64", &y.to_vec().unwrap(), &want, 1e-12, 1e-15).unwrap();
            let y = invoke1("Activation", &[&x.astype(DType::F32).unwrap()], &[("act_type", act.into())])
                .unwrap();
            compare(act, "f32", &y.to_vec().unwrap(), &want, 1e-6, 1e-7).unwrap();
            let y = invoke1("Activation", &[&x.astype(DType::F16).unwrap()], &[("act_type", act.into())])
                .unwrap();
            assert_eq!(y.dtype(), DType::F16);
            compare(act, "f16", &y.to_vec().unwrap(), &want, 2e-3, 2e-3).unwrap();
            OpChecker::new("Activation", std::slice::from_ref(&x)).attr("act_type", act).run().unwrap();
        }
        // softrelu stays accurate far from 0
        let x = NDArray::from_vec(vec![-30.0f32, -14.0, 30.0, 100.0], &[4]).unwrap();
        let y = invoke1("Activation", &[&x], &[("act_type", "softrelu".into())])
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let want = [(-30f64).exp(), (-14f64).exp().ln_1p(), 30.0, 100.0];
        compare("softrelu", "tails", &y, &want, 1e-6, 0.0).unwrap();
    }

    #[test]
    fn leaky_values() {
        let x = sample();
        let xv = x.to_vec::<f64>().unwrap();
        let (l, a) = (SELU_LAMBDA, SELU_ALPHA);
        let cases: Vec<(&str, f64, RefFn)> = vec![
            ("leaky", 0.25, Box::new(|v: f64| if v > 0.0 { v } else { 0.25 * v })),
            ("leaky", 0.1, Box::new(|v: f64| if v > 0.0 { v } else { 0.1 * v })),
            ("elu", 0.7, Box::new(|v: f64| if v > 0.0 { v } else { 0.7 * (v.exp() - 1.0) })),
            ("selu", 0.25, Box::new(move |v: f64| l * if v > 0.0 { v } else { a * (v.exp() - 1.0) })),
            ("gelu", 0.25, Box::new(|v: f64| 0.5 * v * (1.0 + erf_ref(v / 2f64.sqrt())))),
        ];
        for (act, slope, f) in cases {
            let want: Vec<f64> = xv.iter().map(|v| f(*v)).collect();
            let attrs = [("act_type", AttrValue::from(act)), ("slope", slope.into())];
            let y = invoke1("LeakyReLU", &[&x], &attrs).unwrap();
            compare(act, "f64", &y.to_vec().unwrap(), &want, 1e-12, 1e-15).unwrap();
            let y = invoke1("LeakyReLU", &[&x.astype(DType::F32).unwrap()], &attrs).unwrap();
            compare(act, "f32", &y.to_vec().unwrap(), &want, 1e-6, 1e-7).unwrap();
            let y = invoke1("LeakyReLU", &[&x.astype(DType::BF16).unwrap()], &attrs).unwrap();
            assert_eq!(y.dtype(), DType::BF16);
            compare(act, "bf16", &y.to_vec().unwrap(), &want, 2e-2, 2e-2).unwrap();
            OpChecker::new("LeakyReLU", std::slice::from_ref(&x))
                .attr("act_type", act)
                .attr("slope", slope)
                .run()
                .unwrap();
        }
        // default is leaky with slope 0.25
        let y = invoke1("LeakyReLU", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(y[0], -2.5 * 0.25);
        // elu near 0 keeps relative accuracy in f32
        let t = NDArray::from_vec(vec![-1e-4f32], &[1]).unwrap();
        let y = invoke1("LeakyReLU", &[&t], &[("act_type", "elu".into()), ("slope", 1.0.into())])
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert!(((y[0] - (-1e-4f64).exp_m1()) / 1e-4).abs() < 1e-6, "{}", y[0]);
    }

    #[test]
    fn errors_and_dtypes() {
        let x = sample();
        assert!(invoke1("Activation", &[&x], &[]).unwrap_err().to_string().contains("act_type"));
        let e = invoke1("Activation", &[&x], &[("act_type", "swish".into())]).unwrap_err().to_string();
        assert!(e.contains("act_type") && e.contains("relu"), "{e}");
        let e = invoke1("LeakyReLU", &[&x], &[("act_type", "prelu".into())]).unwrap_err().to_string();
        assert!(e.contains("LeakyReLU"), "{e}");
        let i = NDArray::from_vec(vec![1i32, -2], &[2]).unwrap();
        let e = invoke1("Activation", &[&i], &[("act_type", "relu".into())]).unwrap_err().to_string();
        assert!(e.contains("int32"), "{e}");
        // req=add and in-place through invoke_into
        let op = registry::get("Activation").unwrap();
        let attrs = op.parse_attrs(&[("act_type", "tanh".into())]).unwrap();
        let x32 = x.astype(DType::F32).unwrap();
        let want = invoke1("Activation", &[&x32], &[("act_type", "tanh".into())]).unwrap();
        oxnet_core::invoke_into(
            &op,
            &[&x32],
            &attrs,
            std::slice::from_ref(&x32),
            &[oxnet_core::Req::Inplace],
        )
        .unwrap();
        assert_close(&x32, &want, 0.0, 0.0).unwrap();
    }
}
