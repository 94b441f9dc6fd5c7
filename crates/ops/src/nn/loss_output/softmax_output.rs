//! `SoftmaxOutput` (alias `Softmax`): softmax forward; the backward pass
//! gives the gradient of cross-entropy against the label,
//! `(softmax - one_hot(label)) * grad_scale`, normalized, whatever the head
//! gradient.

use super::super::softmax::{softmax_kernel, Kind};
use super::{
    class_of, label_drops_last_axis, label_drops_last_axis_partial, needed, store_f64, uniform_float_dtype,
    zero_label_grad,
};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{is_known, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Element, Error, NDArray, OpContext, OpDef,
    Result,
};

const OP: &str = "SoftmaxOutput";

/// How the data splits into softmax groups: `(outer, n, inner)` with the
/// softmax over `n` (stride `inner`).
fn groups(attrs: &Attrs, shape: &[usize]) -> Result<(usize, usize, usize)> {
    if shape.is_empty() {
        return Err(Error::Shape(format!("{OP}: data must have at least one axis, got a scalar")));
    }
    let size: usize = shape.iter().product();
    if attrs.bool("multi_output")? {
        if shape.len() < 2 {
            return Err(Error::Shape(format!(
                "{OP}: multi_output needs data of at least 2 axes (batch, classes, ...), got {shape:?}"
            )));
        }
        Ok((shape[0], shape[1], shape[2..].iter().product()))
    } else if attrs.bool("preserve_shape")? {
        let last = shape[shape.len() - 1];
        Ok((size.checked_div(last).unwrap_or(0), last, 1))
    } else {
        let n = shape[0];
        Ok((n, size.checked_div(n).unwrap_or(0), 1))
    }
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (data, out) = (&inputs[0], &outputs[0]);
    let dims = groups(ctx.attrs, data.shape())?;
    oxnet_core::with_float_dtype!(data.dtype(), T => {
        let x = data.as_slice::<T>()?;
        let mut y = vec![T::zero(); x.len()];
        if !x.is_empty() {
            softmax_kernel::<T>(x, &mut y, dims, 1.0, Kind::Softmax);
        }
        store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    });
    Ok(())
}

/// The parameters the backward pass reads.
struct Params {
    grad_scale: f64,
    ignore_label: f64,
    use_ignore: bool,
    normalization: String,
    out_grad: bool,
    smooth_alpha: f64,
}

impl Params {
    fn new(attrs: &Attrs) -> Result<Params> {
        Ok(Params {
            grad_scale: attrs.float("grad_scale")?,
            ignore_label: attrs.float("ignore_label")?,
            use_ignore: attrs.bool("use_ignore")?,
            normalization: attrs.str("normalization")?.to_string(),
            out_grad: attrs.bool("out_grad")?,
            smooth_alpha: attrs.float("smooth_alpha")?,
        })
    }

    /// The number the gradient is divided by: under 'batch' `batch`, under
    /// 'valid' the labels that are not `ignore_label` (at least 1).
    fn count(&self, labels: &[f64], batch: usize) -> f64 {
        match self.normalization.as_str() {
            "batch" => batch as f64,
            "valid" => {
                let ignore = class_of(self.ignore_label);
                labels.iter().filter(|&&l| class_of(l) != ignore).count().max(1) as f64
            }
            _ => 1.0,
        }
    }

    fn ignored(&self, label: f64) -> bool {
        self.use_ignore && class_of(label) == class_of(self.ignore_label)
    }
}

/// `(softmax - target)` for class-id labels, groups `(outer, n, inner)`;
/// `smooth` spreads `smooth_alpha` over the other classes.
fn class_grad(
    p: &Params,
    out: &[f64],
    labels: &[f64],
    dims: (usize, usize, usize),
    smooth: bool,
) -> Result<Vec<f64>> {
    let (outer, n, inner) = dims;
    let mut g = out.to_vec();
    let off = if smooth && n > 1 { p.smooth_alpha / (n - 1) as f64 } else { 0.0 };
    let on = if smooth { 1.0 - p.smooth_alpha } else { 1.0 };
    for o in 0..outer {
        for j in 0..inner {
            let label = labels[o * inner + j];
            let at = |c: usize| o * n * inner + c * inner + j;
            if p.ignored(label) {
                (0..n).for_each(|c| g[at(c)] = 0.0);
                continue;
            }
            let k = class_of(label);
            if k < 0 || k >= n as i64 {
                return Err(Error::Invalid(format!(
                    "{OP}: label {label} (at {}) is outside the {n} classes [0, {n}); use_ignore=True with \
                     ignore_label={label} would skip it",
                    o * inner + j
                )));
            }
            for c in 0..n {
                if c as i64 == k {
                    g[at(c)] -= on;
                } else if smooth {
                    g[at(c)] -= off;
                }
            }
        }
    }
    Ok(g)
}

fn backward(ctx: &OpContext, args: &BackwardArgs, in_grads: &[NDArray]) -> Result<()> {
    zero_label_grad(OP, ctx.req[1], &in_grads[1])?;
    if ctx.req[0] == oxnet_core::Req::Null {
        return Ok(());
    }
    let p = Params::new(ctx.attrs)?;
    let out_arr = needed(OP, "output", args.outputs[0].as_ref())?;
    let label_arr = needed(OP, "label", args.inputs[1].as_ref())?;
    let out = out_arr.to_vec::<f64>()?;
    let labels = label_arr.to_vec::<f64>()?;
    let shape = out_arr.shape();
    let mut grad = if label_arr.shape() == shape {
        // probabilities as labels: no normalization
        out.iter().zip(&labels).map(|(o, l)| (o - l) * p.grad_scale).collect::<Vec<_>>()
    } else if ctx.attrs.bool("multi_output")? {
        let dims = groups(ctx.attrs, shape)?;
        let (outer, _, inner) = dims;
        if labels.len() != outer * inner {
            return Err(Error::Shape(format!(
                "{OP}: label has {} elements, multi_output data of shape {shape:?} needs {}",
                labels.len(),
                outer * inner
            )));
        }
        let mut g = class_grad(&p, &out, &labels, dims, false)?;
        // MXNet also divides by the spatial size unless normalization is 'valid'
        let spatial = if p.normalization == "valid" { 1.0 } else { inner as f64 };
        let scale = p.grad_scale / spatial / p.count(&labels, outer);
        g.iter_mut().for_each(|v| *v *= scale);
        g
    } else {
        let dims = groups(ctx.attrs, shape)?;
        if labels.len() < dims.0 {
            return Err(Error::Shape(format!(
                "{OP}: label has {} elements, data of shape {shape:?} needs {}",
                labels.len(),
                dims.0
            )));
        }
        let mut g = class_grad(&p, &out, &labels[..dims.0], dims, p.smooth_alpha != 0.0)?;
        let scale = p.grad_scale / p.count(&labels, labels.len());
        g.iter_mut().for_each(|v| *v *= scale);
        g
    };
    if p.out_grad {
        // MXNet multiplies by the forward output here (its backward node is
        // handed the output in the head gradient's place)
        grad.iter_mut().zip(&out).for_each(|(g, o)| *g *= o);
    }
    store_f64(OP, ctx.req[0], &in_grads[0], &grad)
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    if !attrs.bool("multi_output")? {
        return label_drops_last_axis(OP, true, ins, outs);
    }
    let Some(d) = ins[0].clone() else { return Ok(()) };
    if d.len() < 2 {
        return Err(Error::Shape(format!(
            "{OP}: multi_output needs data of at least 2 axes (batch, classes, ...), got {:?}",
            d.as_slice()
        )));
    }
    let size: usize = d.iter().product();
    let spatial = if d[0] * d[1] == 0 { 0 } else { size / d[0] / d[1] };
    let flat = Shape::from_slice(&[d[0], spatial]);
    let mut rest = vec![d[0]];
    rest.extend_from_slice(&d[2..]);
    let rest = Shape::from_slice(&rest);
    let mut one = d.to_vec();
    one[1] = 1;
    let one = Shape::from_slice(&one);
    match &ins[1] {
        None => ins[1] = Some(flat),
        Some(l) if *l == d || *l == flat || *l == rest || *l == one => {}
        Some(l) => {
            return Err(Error::Shape(format!(
                "{OP}: label has shape {:?}, multi_output data of shape {:?} needs {:?} or {:?}",
                l.as_slice(),
                d.as_slice(),
                flat.as_slice(),
                rest.as_slice()
            )))
        }
    }
    outs[0] = Some(d);
    Ok(())
}

/// Graph inference over partial shapes: without multi_output, data of known
/// rank gives the label its shape (as MXNet); with it, data must be complete.
fn infer_shape_partial(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    if !attrs.bool("multi_output")? {
        return label_drops_last_axis_partial(OP, true, ins, outs);
    }
    match &ins[0] {
        Some(d) if is_known(d) => infer_shape(attrs, ins, outs),
        _ => Ok(()),
    }
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .alias("Softmax")
            .doc(
                "Softmax as a network head: the forward pass is the softmax of each instance \
                 (the data viewed as (batch, rest); along axis 1 with multi_output, the last \
                 axis with preserve_shape). The backward pass ignores the head gradient and \
                 gives data the gradient of cross-entropy, (softmax - one_hot(label)) * \
                 grad_scale, with `label` holding class ids of shape data.shape[:-1] (with \
                 multi_output (batch, spatial...)), or probabilities of data's own shape. \
                 use_ignore zeroes instances labelled ignore_label; normalization divides by \
                 the batch size ('batch') or the number of labels that are not ignore_label \
                 ('valid'); smooth_alpha smooths the one-hot target; out_grad multiplies the \
                 gradient by the output, as MXNet does. The label takes no gradient. A class id \
                 outside [0, classes) that is not ignored is an error of the backward pass (MXNet \
                 silently subtracts nothing for it).",
            )
            .arguments(&["data", "label"])
            .attr(AttrSpec::optional(
                "grad_scale",
                AttrKind::Float,
                1.0,
                "Scales the gradient by a float factor.",
            ))
            .attr(AttrSpec::optional(
                "ignore_label",
                AttrKind::Float,
                -1.0,
                "Instances labelled this are ignored in the backward pass when use_ignore is true.",
            ))
            .attr(AttrSpec::optional(
                "multi_output",
                AttrKind::Bool,
                false,
                "Compute the softmax along axis 1 (labels of shape (batch, spatial...)).",
            ))
            .attr(AttrSpec::optional(
                "use_ignore",
                AttrKind::Bool,
                false,
                "Instances labelled ignore_label give no gradient.",
            ))
            .attr(AttrSpec::optional(
                "preserve_shape",
                AttrKind::Bool,
                false,
                "Compute the softmax along the last axis.",
            ))
            .attr(AttrSpec::optional(
                "normalization",
                AttrKind::Choice(vec!["null", "batch", "valid"]),
                "null",
                "Normalizes the gradient.",
            ))
            .attr(AttrSpec::optional(
                "out_grad",
                AttrKind::Bool,
                false,
                "Multiplies the gradient by the output element-wise.",
            ))
            .attr(AttrSpec::optional(
                "smooth_alpha",
                AttrKind::Float,
                0.0,
                "Label smoothing: this much of the target moves from the label to the other classes.",
            ))
            .prepare(|attrs| {
                let a = attrs.float("smooth_alpha")?;
                if !(0.0..=1.0).contains(&a) {
                    return Err(Error::attr("smooth_alpha", format!("must lie in [0, 1], got {a}")));
                }
                Ok(std::sync::Arc::new(()))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape_partial)
            .infer_type(uniform_float_dtype(OP))
            .forward(forward)
            .backward(|_| BackwardDeps { inputs: vec![1], outputs: vec![0], ..Default::default() }, backward),
    );
}
