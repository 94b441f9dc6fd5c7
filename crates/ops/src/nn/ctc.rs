//! `CTCLoss` (aliases `ctc_loss`, `_contrib_CTCLoss`, `_contrib_ctc_loss`):
//! connectionist temporal classification loss (Graves et al., 2006), as
//! MXNet defines it.
//!
//! `data` is `(sequence_length, batch, alphabet)` unnormalized activations
//! (a softmax over the alphabet is applied inside), `label` is
//! `(batch, label_length)` class ids, padded; the output is the negative log
//! probability of each example's label sequence, `(batch,)`. The blank is
//! class 0 (`blank_label='first'`, labels padded with 0) or the last class
//! (`'last'`, padded with -1). `data_lengths` and `label_lengths` (when
//! `use_data_lengths` / `use_label_lengths`) give each example's lengths;
//! otherwise every sequence has the full length and a label ends at its
//! first padding value.
//!
//! The forward and backward variables (α, β) are computed in log space in
//! f64. The gradient with respect to `data` (`_backward_ctc_loss`, which
//! the gradient rule scales by the output gradient) is
//! `softmax(data) - exp(log Σ_{s: l'_s = k} α_t(s) β_t(s) - log p - log y_t(k))`,
//! zero past an example's length. An example whose label cannot fit its
//! sequence (too short for the labels and the blanks their repeats need)
//! has an infinite loss and a zero gradient.

use super::mul;
use crate::util::{call, call_parsed};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Element, Error, GradCtx, NDArray, OpDef, Result};

/// `log(exp(a) + exp(b))`, exact at -inf.
fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// The inputs' layout as the attributes describe it.
struct Layout {
    use_data_lengths: bool,
    use_label_lengths: bool,
    blank_first: bool,
}

impl Layout {
    fn of(attrs: &Attrs) -> Result<Layout> {
        Ok(Layout {
            use_data_lengths: attrs.bool("use_data_lengths")?,
            use_label_lengths: attrs.bool("use_label_lengths")?,
            blank_first: attrs.str("blank_label")? == "first",
        })
    }

    fn arguments(&self) -> Vec<String> {
        let mut names = vec!["data".to_string(), "label".to_string()];
        if self.use_data_lengths {
            names.push("data_lengths".into());
        }
        if self.use_label_lengths {
            names.push("label_lengths".into());
        }
        names
    }
}

/// One example: its length and its label sequence (without padding).
struct Example {
    length: usize,
    labels: Vec<usize>,
}

/// Reads and checks each example's sequence length and labels.
fn examples(name: &str, layout: &Layout, inputs: &[NDArray]) -> Result<Vec<Example>> {
    let (data, label) = (&inputs[0], &inputs[1]);
    let (t_max, batch, alphabet) = (data.shape()[0], data.shape()[1], data.shape()[2]);
    let label_len = label.shape()[1];
    let mut next = 2;
    let mut lengths_of = |what: &str, limit: usize| -> Result<Vec<usize>> {
        let values = inputs[next].to_vec::<f64>()?;
        next += 1;
        values
            .iter()
            .enumerate()
            .map(|(b, &v)| {
                if v.fract() == 0.0 && v >= 0.0 && v <= limit as f64 {
                    Ok(v as usize)
                } else {
                    Err(Error::Invalid(format!(
                        "{name}: {what} of example {b} is {v}; it must be a whole number in [0, {limit}]"
                    )))
                }
            })
            .collect()
    };
    let data_lengths = if layout.use_data_lengths { Some(lengths_of("data_lengths", t_max)?) } else { None };
    let label_lengths =
        if layout.use_label_lengths { Some(lengths_of("label_lengths", label_len)?) } else { None };
    let blank = if layout.blank_first { 0 } else { alphabet - 1 };
    let padding = if layout.blank_first { 0.0 } else { -1.0 };
    let values = label.to_vec::<f64>()?;
    (0..batch)
        .map(|b| {
            let row = &values[b * label_len..(b + 1) * label_len];
            let n = match &label_lengths {
                Some(l) => l[b],
                None => row.iter().position(|&v| v == padding).unwrap_or(label_len),
            };
            let labels = row[..n]
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    // As MXNet, a label equal to the blank is taken as given (the
                    // recursion then treats that position as a blank).
                    let ok = v.fract() == 0.0 && v >= 0.0 && v < alphabet as f64;
                    if ok {
                        Ok(v as usize)
                    } else {
                        Err(Error::Invalid(format!(
                            "{name}: label {i} of example {b} is {v}; labels must be class ids in [0, {alphabet}) \
                             (the blank is {blank}, blank_label='{}')",
                            if layout.blank_first { "first" } else { "last" }
                        )))
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Example { length: data_lengths.as_ref().map_or(t_max, |l| l[b]), labels })
        })
        .collect()
}

/// Log-softmax over the alphabet of `data[t][b]` for `t < length`.
fn log_probs(data: &[f64], b: usize, length: usize, batch: usize, alphabet: usize) -> Vec<f64> {
    let mut out = vec![0.0; length * alphabet];
    for t in 0..length {
        let row = &data[(t * batch + b) * alphabet..(t * batch + b + 1) * alphabet];
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        let log_sum = max + sum.ln();
        for (o, v) in out[t * alphabet..(t + 1) * alphabet].iter_mut().zip(row) {
            *o = v - log_sum;
        }
    }
    out
}

/// The CTC variables of one example: `log p(label | data)` and, with
/// `want_grad`, the gradient of `-log p` with respect to the activations
/// (`length x alphabet`).
fn example_loss(
    logp: &[f64],
    ex: &Example,
    alphabet: usize,
    blank: usize,
    want_grad: bool,
) -> (f64, Vec<f64>) {
    let t_len = ex.length;
    // the label with blanks around and between its classes
    let mut ext = vec![blank; 2 * ex.labels.len() + 1];
    for (i, &l) in ex.labels.iter().enumerate() {
        ext[2 * i + 1] = l;
    }
    let s_len = ext.len();
    if t_len == 0 {
        // an empty sequence emits only the empty label
        let lp = if ex.labels.is_empty() { 0.0 } else { f64::NEG_INFINITY };
        return (lp, Vec::new());
    }
    let lp = |t: usize, s: usize| logp[t * alphabet + ext[s]];
    // may s take from s - 2 (skipping a blank between two different classes)?
    let skips = |s: usize| s >= 2 && ext[s] != blank && ext[s] != ext[s - 2];
    let ninf = f64::NEG_INFINITY;
    let mut alpha = vec![ninf; t_len * s_len];
    alpha[0] = lp(0, 0);
    if s_len > 1 {
        alpha[1] = lp(0, 1);
    }
    for t in 1..t_len {
        for s in 0..s_len {
            let prev = &alpha[(t - 1) * s_len..t * s_len];
            let mut a = prev[s];
            if s >= 1 {
                a = log_add(a, prev[s - 1]);
            }
            if skips(s) {
                a = log_add(a, prev[s - 2]);
            }
            alpha[t * s_len + s] = if a == ninf { ninf } else { a + lp(t, s) };
        }
    }
    let last = &alpha[(t_len - 1) * s_len..];
    let log_p = if s_len > 1 { log_add(last[s_len - 1], last[s_len - 2]) } else { last[0] };
    if !want_grad || log_p == ninf {
        return (log_p, vec![0.0; if want_grad { t_len * alphabet } else { 0 }]);
    }
    let mut beta = vec![ninf; t_len * s_len];
    beta[(t_len - 1) * s_len + s_len - 1] = lp(t_len - 1, s_len - 1);
    if s_len > 1 {
        beta[(t_len - 1) * s_len + s_len - 2] = lp(t_len - 1, s_len - 2);
    }
    for t in (0..t_len - 1).rev() {
        for s in 0..s_len {
            let next = &beta[(t + 1) * s_len..(t + 2) * s_len];
            let mut v = next[s];
            if s + 1 < s_len {
                v = log_add(v, next[s + 1]);
            }
            if s + 2 < s_len && skips(s + 2) {
                v = log_add(v, next[s + 2]);
            }
            beta[t * s_len + s] = if v == ninf { ninf } else { v + lp(t, s) };
        }
    }
    let mut grad = vec![0.0; t_len * alphabet];
    let mut through = vec![ninf; alphabet];
    for t in 0..t_len {
        through.iter_mut().for_each(|v| *v = ninf);
        for s in 0..s_len {
            let ab = alpha[t * s_len + s] + beta[t * s_len + s];
            through[ext[s]] = log_add(through[ext[s]], ab);
        }
        for k in 0..alphabet {
            let y = logp[t * alphabet + k];
            let occupancy = if through[k] == ninf { 0.0 } else { (through[k] - log_p - y).exp() };
            grad[t * alphabet + k] = y.exp() - occupancy;
        }
    }
    (log_p, grad)
}

/// Loss of every example and, with `want_grad`, the gradient of each
/// example's loss with respect to `data` (`(T, N, C)` order, zero past
/// each example's length).
fn losses(name: &str, attrs: &Attrs, inputs: &[NDArray], want_grad: bool) -> Result<(Vec<f64>, Vec<f64>)> {
    let layout = Layout::of(attrs)?;
    let exs = examples(name, &layout, inputs)?;
    let data = inputs[0].to_vec::<f64>()?;
    let (t_max, batch, alphabet) = (inputs[0].shape()[0], inputs[0].shape()[1], inputs[0].shape()[2]);
    let blank = if layout.blank_first { 0 } else { alphabet - 1 };
    let mut loss = vec![0.0; batch];
    let mut grad = if want_grad { vec![0.0; data.len()] } else { Vec::new() };
    for (b, ex) in exs.iter().enumerate() {
        let logp = log_probs(&data, b, ex.length, batch, alphabet);
        let (log_p, g) = example_loss(&logp, ex, alphabet, blank, want_grad);
        loss[b] = -log_p;
        if want_grad {
            for t in 0..ex.length.min(t_max) {
                let dst = (t * batch + b) * alphabet;
                grad[dst..dst + alphabet].copy_from_slice(&g[t * alphabet..(t + 1) * alphabet]);
            }
        }
    }
    Ok((loss, grad))
}

/// Stores f64 values into `out` (of a float dtype) under `req`.
fn store(out: &NDArray, req: oxnet_core::Req, values: &[f64]) -> Result<()> {
    oxnet_core::with_float_dtype!(out.dtype(), T => {
        let converted: Vec<T> = values.iter().map(|&v| T::from_f64(v)).collect();
        store_slice(req, out.as_mut_slice::<T>()?, &converted);
    });
    Ok(())
}

fn infer_shape(
    name: &'static str,
) -> impl Fn(&Attrs, &mut [Option<Shape>], &mut [Option<Shape>]) -> Result<()> {
    move |attrs, ins, outs| {
        let layout = Layout::of(attrs)?;
        let Some(d) = ins[0].clone() else { return Ok(()) };
        if d.len() != 3 || d[2] < 2 {
            return Err(Error::Shape(format!(
                "{name}: data must be (sequence_length, batch, alphabet) with an alphabet of at least 2 \
                 (the blank and one class), got shape {:?}",
                d.as_slice()
            )));
        }
        let batch = d[1];
        if let Some(l) = &ins[1] {
            if l.len() != 2 || l[0] != batch {
                return Err(Error::Shape(format!(
                    "{name}: label must be (batch, label_length) = ({batch}, ...), got shape {:?}",
                    l.as_slice()
                )));
            }
        }
        let lengths = Shape::from_slice(&[batch]);
        let mut slot = 2;
        for (used, what) in
            [(layout.use_data_lengths, "data_lengths"), (layout.use_label_lengths, "label_lengths")]
        {
            if used {
                match &ins[slot] {
                    Some(s) if *s != lengths => {
                        return Err(Error::Shape(format!(
                            "{name}: {what} must have shape ({batch},), got {:?}",
                            s.as_slice()
                        )))
                    }
                    _ => ins[slot] = Some(lengths.clone()),
                }
                slot += 1;
            }
        }
        if name == BACKWARD {
            outs[0] = Some(d);
        } else {
            outs[0] = Some(lengths);
        }
        Ok(())
    }
}

const FORWARD: &str = "CTCLoss";
const BACKWARD: &str = "_backward_ctc_loss";

fn attrs_specs(op: OpDef) -> OpDef {
    op.attr(AttrSpec::optional(
        "use_data_lengths",
        AttrKind::Bool,
        false,
        "Whether `data_lengths` gives each example's sequence length (else every one is sequence_length).",
    ))
    .attr(AttrSpec::optional(
        "use_label_lengths",
        AttrKind::Bool,
        false,
        "Whether `label_lengths` gives each example's label length (else a label ends at its first padding value).",
    ))
    .attr(AttrSpec::optional(
        "blank_label",
        AttrKind::Choice(vec!["first", "last"]),
        "first",
        "The blank class: 0 (`first`; labels padded with 0) or alphabet-1 (`last`; padded with -1).",
    ))
    .arguments_fn(|attrs| Ok(Layout::of(attrs)?.arguments()))
    .infer_type(|_, ins, outs| {
        outs[0] = ins[0];
        Ok(())
    })
}

fn grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let mut grads = vec![None; g.inputs.len()];
    if !g.needs_grad[0] {
        return Ok(grads);
    }
    let refs: Vec<&NDArray> = g.inputs.iter().collect();
    // the backward operator has the same attribute specs (attrs_specs)
    let per_example = call_parsed(BACKWARD, &refs, g.attrs)?;
    // d(loss_b)/d(data[t][b]) times the gradient flowing into loss_b
    let batch = g.inputs[0].shape()[1];
    let og = call("reshape", &[&g.out_grads[0]], &[("shape", AttrValue::Ints(vec![1, batch as i64, 1]))])?;
    grads[0] = Some(mul(&per_example, &og)?);
    Ok(grads)
}

pub(super) fn register() {
    registry::register(
        attrs_specs(OpDef::new(FORWARD))
            .alias("ctc_loss")
            .alias("_contrib_CTCLoss")
            .alias("_contrib_ctc_loss")
            .doc(
                "Connectionist temporal classification loss: data (sequence_length, batch, alphabet) \
                 of unnormalized activations, label (batch, label_length) of padded class ids; the \
                 output (batch,) is each example's negative log probability of its label. The \
                 blank is class 0 (blank_label='first', padding 0) or the last class ('last', \
                 padding -1). Differentiable with respect to data; an example whose label cannot \
                 fit its sequence gets an infinite loss and a zero gradient.",
            )
            .infer_shape(infer_shape(FORWARD))
            .forward(|ctx, inputs, outputs| {
                let (loss, _) = losses(FORWARD, ctx.attrs, inputs, false)?;
                store(&outputs[0], ctx.req[0], &loss)
            })
            .grad_rule(grad),
    );
    registry::register(
        attrs_specs(OpDef::new(BACKWARD))
            .doc(
                "The gradient of each example's CTCLoss with respect to data, (sequence_length, \
                 batch, alphabet): softmax(data) minus the label's occupancy of each class, zero \
                 past an example's length. Used by CTCLoss's gradient; not differentiable.",
            )
            .infer_shape(infer_shape(BACKWARD))
            .forward(|ctx, inputs, outputs| {
                let (_, grad) = losses(BACKWARD, ctx.attrs, inputs, true)?;
                store(&outputs[0], ctx.req[0], &grad)
            }),
    );
}
