//! Group AdaGrad: `_contrib_group_adagrad_update` (Python
//! `mx.nd.contrib.group_adagrad_update`), AdaGrad with one history value
//! and so one effective learning rate per row of the weight.
//!
//! With `g = clip(rescale_grad*grad)` and rows along the first axis:
//! `history[r] += mean(g[r]²)` and then
//! `w[r] = w[r] - lr * g[r] / sqrt(history[r] + epsilon)`. `history` holds
//! one value per row (shape `(rows, 1)` as MXNet's optimizer makes it, or
//! `(rows,)`) and is updated in place. MXNet 1.9.1 runs this operator only
//! for row-sparse gradients, updating the rows the gradient stores; oxnet's
//! gradients are dense, which is that update with every row stored (a row
//! of zeros leaves its weights and history as they are).

use super::kernel::{floats, rescaled};
use super::{clip_attr, lr_attr, rescale_attr, update_op};
use num_traits::Zero;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{shape, Shape};
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, Error, FloatElement, NDArray, OpContext, Result};

/// Rows (the first extent; 1 for a scalar) and elements per row of `s`.
fn rows(s: &[usize]) -> (usize, usize) {
    let rows = s.first().copied().unwrap_or(1);
    let n: usize = s.iter().product();
    (rows, n.checked_div(rows).unwrap_or(0))
}

/// Weight, grad and output share one shape; the history holds one value
/// per row (`(rows, 1)` when unknown).
fn infer_shape(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    oxnet_core::op::same_shape(&Attrs::empty(), &mut ins[..2], outs)?;
    let Some(w) = outs[0].clone() else { return Ok(()) };
    let (r, _) = rows(&w);
    match &ins[2] {
        Some(h) if h.iter().product::<usize>() != r || w.first().is_some_and(|f| h.first() != Some(f)) => {
            Err(Error::Shape(format!(
                "history must hold one value per row of the weight ({r} rows), got shape {:?}",
                h.as_slice()
            )))
        }
        Some(_) => Ok(()),
        None => {
            ins[2] = Some(shape(&[r, 1]));
            Ok(())
        }
    }
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let (weight, grad, history, out) = (&ins[0], &ins[1], &ins[2], &outs[0]);
    let (r, len) = rows(weight.shape());
    if grad.shape() != weight.shape() || history.size() != r {
        return Err(Error::Shape(format!(
            "weight {:?}, grad {:?} and history {:?} do not fit (history needs one value per row)",
            weight.shape(),
            grad.shape(),
            history.shape()
        )));
    }
    if [weight, grad, out].iter().any(|x| x.shares_storage(history)) {
        return Err(Error::Invalid("state `history` shares memory with another array of the call".into()));
    }
    oxnet_core::with_float_dtype!(weight.dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let [lr, rs, cg, eps]: [C; 4] = floats(ctx.attrs, ["lr", "rescale_grad", "clip_gradient", "epsilon"])?;
        let (w, g) = (weight.to_vec::<T>()?, grad.to_vec::<T>()?);
        let mut h = history.to_vec::<T>()?;
        let mut new = Vec::with_capacity(w.len());
        let count: C = super::kernel::cst(len as f64);
        for (row, hr) in h.iter_mut().enumerate() {
            let span = row * len..(row + 1) * len;
            let gr: Vec<C> = g[span.clone()].iter().map(|x| rescaled(x.to_compute(), rs, cg)).collect();
            let ssq = gr.iter().fold(C::zero(), |acc, &x| acc + x * x);
            if len > 0 {
                *hr = T::from_compute(hr.to_compute() + ssq / count);
            }
            let denom = (hr.to_compute() + eps).sqrt();
            new.extend(w[span].iter().zip(&gr).map(|(wi, &gi)| T::from_compute(wi.to_compute() - lr * gi / denom)));
        }
        history.assign_from(&NDArray::from_vec(h, history.shape())?)?;
        store(ctx.req[0], out, &NDArray::from_vec(new, weight.shape())?)
    })
}

pub(super) fn register() {
    registry::register(
        update_op(
            "_contrib_group_adagrad_update",
            "Group AdaGrad: g = clip(rescale_grad*grad); history[r] += mean(g[r]^2) over each row r of the \
             weight (its first axis); weight[r] = weight[r] - lr*g[r]/sqrt(history[r] + epsilon). `history` \
             holds one value per row (shape (rows, 1)) and is updated in place; returns the new weight. Weight \
             decay is not supported.",
            &["weight", "grad", "history"],
            &[2],
            [
                lr_attr(),
                rescale_attr(),
                clip_attr(),
                AttrSpec::optional("epsilon", AttrKind::Float, 1e-5, "Epsilon for numerical stability."),
            ],
        )
        .infer_shape(infer_shape)
        .forward(forward),
    );
}
