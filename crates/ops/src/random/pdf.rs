//! `_random_pdf_<dist>`: the density (or, with `is_log`, its logarithm) of
//! samples under distributions given by parameter arrays, differentiable
//! in the parameters and, for continuous distributions, in the samples.
//!
//! The parameters have a shape `P`; the samples `P + S` (one distribution
//! per parameter element, `S` samples of it), or for the Dirichlet
//! distribution `alpha` has `P + (K,)` and the samples `P + S + (K,)`. The
//! output has the samples' shape (without the class axis for Dirichlet).

use super::pdf_maths::{log_pdf, log_pdf_dirichlet, PdfKind};
use super::{set_shape, store_f64, values_f64};
use oxnet_core::shape::numel;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, OpDef, Result, Shape};

/// The density operators: MXNet's name suffix, parameter names, kind.
const PDFS: [(&str, &[&str], PdfKind); 8] = [
    ("uniform", &["low", "high"], PdfKind::Uniform),
    ("normal", &["mu", "sigma"], PdfKind::Normal),
    ("gamma", &["alpha", "beta"], PdfKind::Gamma),
    ("exponential", &["lam"], PdfKind::Exponential),
    ("poisson", &["lam"], PdfKind::Poisson),
    ("negative_binomial", &["k", "p"], PdfKind::NegativeBinomial),
    ("generalized_negative_binomial", &["mu", "alpha"], PdfKind::GeneralizedNegativeBinomial),
    ("dirichlet", &["alpha"], PdfKind::Dirichlet),
];

/// How samples line up with parameters.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// Number of distributions (parameter elements, or rows of `alpha`).
    dists: usize,
    /// Samples per distribution.
    per: usize,
    /// Values per sample (the classes of a Dirichlet sample, else 1).
    width: usize,
}

/// Checks the shapes and returns the layout and the output shape.
fn layout(kind: PdfKind, sample: &[usize], param: &[usize]) -> Result<(Layout, Shape)> {
    let (batch, width, out): (&[usize], usize, Shape) = if kind == PdfKind::Dirichlet {
        let (Some((&k, batch)), Some(&ks)) = (param.split_last(), sample.last()) else {
            return Err(Error::Shape("sample and alpha need a last axis holding the classes".into()));
        };
        if ks != k {
            return Err(Error::Shape(format!("sample has {ks} classes in its last axis, alpha {k}")));
        }
        (batch, k, Shape::from_slice(&sample[..sample.len() - 1]))
    } else {
        (param, 1, Shape::from_slice(sample))
    };
    if sample.len() < batch.len() + (width > 1 || kind == PdfKind::Dirichlet) as usize
        || sample[..batch.len()] != *batch
    {
        return Err(Error::Shape(format!(
            "the sample's shape {sample:?} must begin with the parameters' shape {batch:?}"
        )));
    }
    let dists = numel(batch);
    let per = if dists == 0 || width == 0 { 0 } else { numel(sample) / (dists * width) };
    Ok((Layout { dists, per, width }, out))
}

/// The densities, and with `ograd` the gradients (sample, then each
/// parameter) of `sum(ograd · output)`.
fn evaluate(
    kind: PdfKind,
    is_log: bool,
    sample: &[f64],
    params: &[Vec<f64>],
    lay: Layout,
    ograd: Option<&[f64]>,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut out = vec![0.0; lay.dists * lay.per];
    let mut grads: Vec<Vec<f64>> = Vec::new();
    if ograd.is_some() {
        grads.push(vec![0.0; sample.len()]);
        grads.extend(params.iter().map(|p| vec![0.0; p.len()]));
    }
    // d output / d log p: 1 for log densities, the density itself otherwise
    let scale = |lp: f64| if is_log { 1.0 } else { lp.exp() };
    if kind == PdfKind::Dirichlet {
        let w = lay.width;
        let alpha = &params[0];
        let (mut dx, mut da) = (vec![0.0; w], vec![0.0; w]);
        for d in 0..lay.dists {
            let a = &alpha[d * w..(d + 1) * w];
            for j in 0..lay.per {
                let o = d * lay.per + j;
                let x = &sample[o * w..(o + 1) * w];
                let lp = log_pdf_dirichlet(x, a, ograd.map(|_| (&mut dx[..], &mut da[..])));
                out[o] = if is_log { lp } else { lp.exp() };
                if let Some(g) = ograd {
                    let f = g[o] * scale(lp);
                    for i in 0..w {
                        grads[0][o * w + i] += f * dx[i];
                        grads[1][d * w + i] += f * da[i];
                    }
                }
            }
        }
        return (out, grads);
    }
    let np = params.len();
    let mut p = vec![0.0; np];
    let mut g = vec![0.0; np + 1];
    for d in 0..lay.dists {
        for (v, arr) in p.iter_mut().zip(params) {
            *v = arr[d];
        }
        for j in 0..lay.per {
            let o = d * lay.per + j;
            let lp = log_pdf(kind, sample[o], &p, ograd.map(|_| &mut g[..]));
            out[o] = if is_log { lp } else { lp.exp() };
            if let Some(og) = ograd {
                let f = og[o] * scale(lp);
                if f == 0.0 {
                    continue;
                }
                if !kind.discrete() {
                    grads[0][o] += f * g[0];
                }
                for i in 0..np {
                    grads[1 + i][d] += f * g[1 + i];
                }
            }
        }
    }
    (out, grads)
}

fn register_pdf(suffix: &'static str, params: &'static [&'static str], kind: PdfKind) {
    let name: &'static str = Box::leak(format!("_random_pdf_{suffix}").into_boxed_str());
    let backward: &'static str = Box::leak(format!("_backward_pdf_{suffix}").into_boxed_str());
    let mut args = vec!["sample"];
    args.extend_from_slice(params);
    let is_log = || AttrSpec::optional("is_log", AttrKind::Bool, false, "Return the log of the density.");
    registry::register(
        OpDef::new(name)
            .doc(&format!(
                "The density (or with `is_log` its logarithm) of `sample` under the {suffix} \
                 distribution with parameters {}: the parameters have a shape P, the samples P \
                 followed by further axes{}. Differentiable in the parameters{}.",
                params.join(", "),
                if kind == PdfKind::Dirichlet { " and the class axis (alpha: P + (K,))" } else { "" },
                if kind.discrete() { "" } else { " and the samples" }
            ))
            .alias(&format!("random_pdf_{suffix}"))
            .arguments(&args)
            .attr(is_log())
            .infer_shape(move |_attrs, ins, outs| {
                let Some(param) = ins[1..].iter().flatten().next().cloned() else { return Ok(()) };
                for (i, slot) in ins[1..].iter_mut().enumerate() {
                    set_shape(slot, param.clone(), &format!("parameter `{}`", params[i]))?;
                }
                let Some(sample) = ins[0].clone() else { return Ok(()) };
                let (_, out) = layout(kind, &sample, &param)?;
                set_shape(&mut outs[0], out, "the output")
            })
            .forward(move |ctx, inputs, outputs| {
                let (lay, _) = layout(kind, inputs[0].shape(), inputs[1].shape())?;
                let sample = values_f64(&inputs[0])?;
                let ps = inputs[1..].iter().map(values_f64).collect::<Result<Vec<_>>>()?;
                let (out, _) = evaluate(kind, ctx.attrs.bool("is_log")?, &sample, &ps, lay, None);
                store_f64(&outputs[0], ctx.req[0], &out)
            })
            .grad_rule(move |g| {
                let mut inputs = vec![&g.out_grads[0]];
                inputs.extend(g.inputs.iter());
                let grads = oxnet_core::invoke(
                    backward,
                    &inputs,
                    &[("is_log", AttrValue::Bool(g.attrs.bool("is_log")?))],
                )?;
                Ok(grads
                    .into_iter()
                    .enumerate()
                    .map(|(i, d)| (g.needs_grad[i] && !(i == 0 && kind.discrete())).then_some(d))
                    .collect())
            }),
    );
    let mut bargs = vec!["ograd"];
    bargs.extend_from_slice(&args);
    let bouts: Vec<String> = args.iter().map(|a| format!("{a}_grad")).collect();
    let bouts: Vec<&'static str> = bouts.into_iter().map(|s| &*Box::leak(s.into_boxed_str())).collect();
    registry::register(
        OpDef::new(backward)
            .doc(&format!("Gradient of {name}: the gradients of the sample and each parameter."))
            .arguments(&bargs)
            .outputs(&bouts)
            .attr(is_log())
            .infer_shape(|_attrs, ins, outs| {
                for (slot, given) in outs.iter_mut().zip(ins[1..].iter()) {
                    if let Some(s) = given {
                        set_shape(slot, s.clone(), "a gradient")?;
                    }
                }
                Ok(())
            })
            .forward(move |ctx, inputs, outputs| {
                let (lay, _) = layout(kind, inputs[1].shape(), inputs[2].shape())?;
                let og = values_f64(&inputs[0])?;
                let sample = values_f64(&inputs[1])?;
                let ps = inputs[2..].iter().map(values_f64).collect::<Result<Vec<_>>>()?;
                let (_, grads) = evaluate(kind, ctx.attrs.bool("is_log")?, &sample, &ps, lay, Some(&og));
                for (i, (out, grad)) in outputs.iter().zip(&grads).enumerate() {
                    store_f64(out, ctx.req[i], grad)?;
                }
                Ok(())
            }),
    );
}

/// Registers `_random_pdf_<dist>` and their gradient operators.
pub(super) fn register() {
    for (suffix, params, kind) in PDFS {
        register_pdf(suffix, params, kind);
    }
}
