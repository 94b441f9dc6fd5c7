//! The parametric (`prelu`) and randomized (`rrelu`) forms of `LeakyReLU`,
//! with MXNet 1.x's conventions.
//!
//! * `prelu` takes a second argument `gamma`, the learnt slopes:
//!   `x > 0 ? x : gamma·x`. Gamma is laid over the data's first two axes
//!   only, from the right: its last extent goes to axis 1 when it equals
//!   that axis's extent (or is 1), else to axis 0; a remaining extent goes to
//!   axis 0 by the same test. So a `(C,)` gamma is per channel of an NCHW
//!   input, `(1,)` is shared by every element, `(N, C)` is per sample and
//!   channel. Anything else is an error. Shape inference gives an unknown
//!   gamma the shape `(data.shape[1],)`, as MXNet does.
//! * `rrelu` draws a slope per element, uniform in `[lower_bound,
//!   upper_bound)`, in train mode, and uses the mean slope otherwise. It has
//!   a second output `mask` holding the slopes used (MXNet shows it too);
//!   the gradient is `grad · (x > 0 ? 1 : mask)`. Unlike MXNet, whose mask is
//!   left unset in predict mode, the mask then holds the mean slope, so the
//!   gradient agrees with the output.
//!
//! Both gradients are rules composed of operators, so they differentiate
//! again and trace into graphs.

use super::{add, mul, scalar_op, sub, unary};
use crate::reduce::sum_to_shape;
use crate::util::call;
use oxnet_core::shape::{numel, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::{AttrValue, Attrs, Element, Error, FloatElement, GradCtx, NDArray, OpContext, Req, Result};

/// Gamma's shape laid over `data`'s axes (extents of 1 elsewhere), by
/// MXNet's rule: gamma's extents, from the last, land on axes 1 then 0 of
/// the data where they equal the data's extent or are 1.
pub(super) fn expand_gamma(data: &[usize], gamma: &[usize]) -> Result<Shape> {
    let mut out: Shape = std::iter::repeat_n(1, data.len()).collect();
    let mut left = gamma.len();
    for i in (0..data.len().min(2)).rev() {
        if left == 0 {
            break;
        }
        let g = gamma[left - 1];
        if g == data[i] || g == 1 {
            out[i] = g;
            left -= 1;
        }
    }
    if left != 0 {
        return Err(Error::Shape(format!(
            "LeakyReLU(prelu): gamma of shape {gamma:?} cannot be laid over data of shape {data:?} \
             (gamma's extents must match axis 1, or axes 0 and 1, of the data, or be 1)"
        )));
    }
    Ok(out)
}

/// Shape inference of `prelu`: the output is the data's shape; an unknown
/// gamma becomes `(data.shape[1],)`; a known gamma must lay over the data.
pub(super) fn infer_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let Some(data) = ins[0].clone().or_else(|| outs[0].clone()) else {
        return Ok(());
    };
    for (slot, what) in [(&mut ins[0], "data"), (&mut outs[0], "output")] {
        match slot {
            Some(have) if *have != data => {
                return Err(Error::Shape(format!(
                    "LeakyReLU(prelu): {what} has shape {:?}, expected {:?}",
                    have.as_slice(),
                    data.as_slice()
                )))
            }
            _ => *slot = Some(data.clone()),
        }
    }
    match &ins[1] {
        Some(gamma) => {
            expand_gamma(&data, gamma)?;
        }
        None if data.len() >= 2 => ins[1] = Some(Shape::from_slice(&[data[1]])),
        None => {
            return Err(Error::Shape(format!(
                "LeakyReLU(prelu): cannot infer gamma's shape from data of shape {:?} (rank below 2); \
                 give gamma's shape",
                data.as_slice()
            )))
        }
    }
    Ok(())
}

/// `out = x > 0 ? x : gamma·x` with gamma indexed over axes 0 and 1.
fn prelu_kernel<T: FloatElement>(x: &[T], gamma: &[T], data: &[usize], eshape: &[usize], out: &mut [T]) {
    let d0 = data.first().copied().unwrap_or(1);
    let d1 = data.get(1).copied().unwrap_or(1);
    let inner: usize = data.iter().skip(2).product();
    let g0 = eshape.first().copied().unwrap_or(1);
    let g1 = eshape.get(1).copied().unwrap_or(1);
    if inner == 0 {
        return;
    }
    let zero = T::zero().to_compute();
    for n in 0..d0 {
        for c in 0..d1 {
            let gi = if g0 > 1 { n } else { 0 } * g1 + if g1 > 1 { c } else { 0 };
            let slope = gamma[gi].to_compute();
            let start = (n * d1 + c) * inner;
            for (o, v) in out[start..start + inner].iter_mut().zip(&x[start..start + inner]) {
                let v = v.to_compute();
                *o = T::from_compute(if v > zero { v } else { slope * v });
            }
        }
    }
}

/// The `prelu` forward kernel: inputs `data`, `gamma`.
pub(super) fn prelu_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (x, gamma, out, req) = (&inputs[0], &inputs[1], &outputs[0], ctx.req[0]);
    let eshape = expand_gamma(x.shape(), gamma.shape())?;
    if gamma.dtype() != x.dtype() {
        return Err(Error::DType(format!(
            "LeakyReLU(prelu): gamma has dtype {}, data has {}",
            gamma.dtype(),
            x.dtype()
        )));
    }
    if req == Req::Null {
        return Ok(());
    }
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let (xs, gs) = (x.as_slice::<T>()?, gamma.as_slice::<T>()?);
        if matches!(req, Req::Add) {
            let mut tmp = vec![T::zero(); xs.len()];
            prelu_kernel(xs, gs, x.shape(), &eshape, &mut tmp);
            store_slice(req, out.as_mut_slice::<T>()?, &tmp);
        } else {
            prelu_kernel(xs, gs, x.shape(), &eshape, out.as_mut_slice::<T>()?);
        }
    });
    Ok(())
}

/// 1 where `x > 0`, else 0 (its own gradient is zero).
fn positive_mask(x: &NDArray) -> Result<NDArray> {
    unary("sign", &unary("relu", x)?)
}

/// Reshapes through the `reshape` operator (differentiable), skipping
/// equal shapes.
fn reshape_to(a: &NDArray, shape: &[usize]) -> Result<NDArray> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    if numel(shape) == 0 {
        return NDArray::zeros(shape, a.dtype(), a.device());
    }
    let spec = AttrValue::Ints(shape.iter().map(|&d| d as i64).collect());
    call("reshape", &[a], &[("shape", spec)])
}

/// The `prelu` gradient: `grad·(x > 0 ? 1 : gamma)` for the data and the sum
/// of `grad·min(x, 0)` over the axes gamma is shared along for gamma.
pub(super) fn prelu_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let (x, gamma, og) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let eshape = expand_gamma(x.shape(), gamma.shape())?;
    let mask = positive_mask(x)?;
    let dx = if g.needs_grad[0] {
        let neg = scalar_op("_rminus_scalar", &mask, 1.0)?;
        let slopes = add(&mask, &mul(&neg, &reshape_to(gamma, &eshape)?)?)?;
        Some(mul(og, &slopes)?)
    } else {
        None
    };
    let dgamma = if g.needs_grad[1] {
        // min(x, 0) = x - relu(x)
        let negative_part = sub(x, &unary("relu", x)?)?;
        let per_elem = mul(og, &negative_part)?;
        let summed = if x.size() == 0 {
            NDArray::zeros(&eshape, og.dtype(), og.device())?
        } else {
            sum_to_shape(&per_elem, &eshape)?
        };
        Some(reshape_to(&summed, gamma.shape())?)
    } else {
        None
    };
    Ok(vec![dx, dgamma])
}

/// rrelu's `(lower_bound, upper_bound)`.
fn bounds(attrs: &Attrs) -> Result<(f64, f64)> {
    Ok((attrs.float("lower_bound")?, attrs.float("upper_bound")?))
}

/// The `rrelu` forward kernel: outputs `output` and `mask` (the slopes).
pub(super) fn rrelu_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (x, out, mask_out) = (&inputs[0], &outputs[0], &outputs[1]);
    let (lo, hi) = bounds(ctx.attrs)?;
    let n = x.size();
    let slopes: Vec<f64> = if ctx.is_train {
        ctx.with_rng(|rng| oxnet_core::random::uniform_vec(rng, n, lo, hi))
    } else {
        vec![(lo + hi) / 2.0; n]
    };
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let mask: Vec<T> = slopes.iter().map(|&s| T::from_f64(s)).collect();
        if ctx.req[0] != Req::Null {
            let zero = T::zero().to_compute();
            let y: Vec<T> = x
                .as_slice::<T>()?
                .iter()
                .zip(&mask)
                .map(|(&v, &m)| {
                    let v = v.to_compute();
                    T::from_compute(if v > zero { v } else { m.to_compute() * v })
                })
                .collect();
            store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
        }
        store_slice(ctx.req[1], mask_out.as_mut_slice::<T>()?, &mask);
    });
    Ok(())
}

/// The `rrelu` gradient: `grad·(x > 0 ? 1 : mask)`; none for the mask.
pub(super) fn rrelu_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let (x, slopes, og) = (&g.inputs[0], &g.outputs[1], &g.out_grads[0]);
    let pos = positive_mask(x)?;
    // pos + (1 - pos)·slopes = slopes + pos·(1 - slopes)
    let one_minus = scalar_op("_rminus_scalar", slopes, 1.0)?;
    let factor = add(slopes, &mul(&pos, &one_minus)?)?;
    Ok(vec![Some(mul(og, &factor)?)])
}

#[cfg(test)]
mod tests {
    use super::expand_gamma;

    #[test]
    fn gamma_layout_follows_mxnet() {
        let e = |d: &[usize], g: &[usize]| expand_gamma(d, g).map(|s| s.to_vec());
        assert_eq!(e(&[2, 3, 4], &[3]).unwrap(), vec![1, 3, 1]);
        assert_eq!(e(&[2, 3, 4], &[1]).unwrap(), vec![1, 1, 1]);
        assert_eq!(e(&[2, 3, 4], &[2]).unwrap(), vec![2, 1, 1]);
        assert_eq!(e(&[2, 3, 4], &[2, 3]).unwrap(), vec![2, 3, 1]);
        assert_eq!(e(&[2, 3, 4], &[2, 1]).unwrap(), vec![2, 1, 1]);
        assert_eq!(e(&[5], &[5]).unwrap(), vec![5]);
        assert_eq!(e(&[5], &[]).unwrap(), vec![1]);
        assert!(e(&[2, 3, 4], &[4]).is_err());
        assert!(e(&[2, 3, 4], &[2, 3, 4]).is_err());
        assert!(e(&[5], &[1, 1]).is_err());
    }
}
