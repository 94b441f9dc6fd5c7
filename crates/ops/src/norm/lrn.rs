//! `LRN`: local response normalization across channels,
//! `out = data · (knorm + alpha/nsize · Σ data²)^(-beta)`, the sum running
//! over the `nsize` channels centred on each one (clipped at the ends).

use super::params::ChannelView;
use crate::conv::geometry::fmt_tuple;
use oxnet_core::attrs::Attrs;
use oxnet_core::store::store_slice;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, FloatElement, NDArray, OpContext, OpDef,
    Result,
};

/// The parsed attributes.
struct LrnParams {
    alpha: f64,
    beta: f64,
    knorm: f64,
    nsize: usize,
}

fn params(attrs: &Attrs) -> Result<LrnParams> {
    let nsize = attrs.int("nsize")?;
    if nsize < 1 {
        return Err(Error::attr("nsize", format!("LRN: must be at least 1, got {nsize}")));
    }
    Ok(LrnParams {
        alpha: attrs.float("alpha")?,
        beta: attrs.float("beta")?,
        knorm: attrs.float("knorm")?,
        nsize: nsize as usize,
    })
}

/// The channel view of `shape` (channels on axis 1), or an error.
fn view(shape: &[usize]) -> Result<ChannelView> {
    if shape.len() < 3 {
        return Err(Error::Shape(format!(
            "LRN: data must have at least 3 axes (batch, channel, ...), got shape {}",
            fmt_tuple(shape)
        )));
    }
    ChannelView::new(shape, 1)
}

/// `knorm + alpha/nsize · Σ x²` over each element's channel window.
fn scales(p: &LrnParams, x: &[f64], v: &ChannelView) -> Vec<f64> {
    let half = p.nsize / 2;
    let (c, inner) = (v.channels, v.inner);
    let mut s = vec![0.0; x.len()];
    for n in 0..v.outer {
        for ch in 0..c {
            let (lo, hi) = (ch.saturating_sub(half), (ch + half + 1).min(c));
            for i in 0..inner {
                let sum: f64 = (lo..hi).map(|k| x[(n * c + k) * inner + i].powi(2)).sum();
                s[(n * c + ch) * inner + i] = p.knorm + p.alpha / p.nsize as f64 * sum;
            }
        }
    }
    s
}

fn to_f64<T: FloatElement>(a: &NDArray) -> Result<Vec<f64>> {
    Ok(a.as_slice::<T>()?.iter().map(|v| v.to_f64()).collect())
}

fn forward_typed<T: FloatElement>(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = params(ctx.attrs)?;
    let v = view(inputs[0].shape())?;
    let x = to_f64::<T>(&inputs[0])?;
    let s = scales(&p, &x, &v);
    let y: Vec<T> = x.iter().zip(&s).map(|(x, s)| T::from_f64(x * s.powf(-p.beta))).collect();
    store_slice(ctx.req[0], outputs[0].as_mut_slice::<T>()?, &y);
    Ok(())
}

fn backward_typed<T: FloatElement>(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = params(ctx.attrs)?;
    let missing = || Error::Autograd("LRN: the backward kernel lacks a saved array".into());
    let data = args.inputs[0].as_ref().ok_or_else(missing)?;
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let v = view(data.shape())?;
    let x = to_f64::<T>(data)?;
    let g = dy.to_vec::<f64>()?;
    let s = scales(&p, &x, &v);
    // t[c] = g[c] · x[c] · s[c]^(-beta-1), summed back over each window
    let t: Vec<f64> = (0..x.len()).map(|i| g[i] * x[i] * s[i].powf(-p.beta - 1.0)).collect();
    let half = p.nsize / 2;
    let (c, inner) = (v.channels, v.inner);
    let coef = 2.0 * p.alpha * p.beta / p.nsize as f64;
    let mut dx = vec![T::zero(); x.len()];
    for n in 0..v.outer {
        for ch in 0..c {
            let (lo, hi) = (ch.saturating_sub(half), (ch + half + 1).min(c));
            for i in 0..inner {
                let j = (n * c + ch) * inner + i;
                let cross: f64 = (lo..hi).map(|k| t[(n * c + k) * inner + i]).sum();
                dx[j] = T::from_f64(g[j] * s[j].powf(-p.beta) - coef * x[j] * cross);
            }
        }
    }
    store_slice(ctx.req[0], grads[0].as_mut_slice::<T>()?, &dx);
    Ok(())
}

pub(super) fn register() {
    registry::register(
        OpDef::new("LRN")
            .doc(
                "Local response normalization across channels (axis 1): out = data · (knorm + \
                 alpha/nsize · sum of data² over the nsize channels centred on each one)^(-beta).",
            )
            .attr(AttrSpec::optional("alpha", AttrKind::Float, 1e-4, "Scale of the sum of squares."))
            .attr(AttrSpec::optional("beta", AttrKind::Float, 0.75, "Exponent."))
            .attr(AttrSpec::optional("knorm", AttrKind::Float, 2.0, "Offset."))
            .attr(AttrSpec::required("nsize", AttrKind::Int, "Number of channels in each window."))
            .prepare(|attrs| {
                params(attrs)?;
                Ok(std::sync::Arc::new(()))
            })
            .forward(|ctx, inputs, outputs| {
                oxnet_core::with_float_dtype!(inputs[0].dtype(), T => forward_typed::<T>(ctx, inputs, outputs))
            })
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0], outputs: vec![] },
                |ctx, args, grads| {
                    let dt = args.inputs[0].as_ref().map(|x| x.dtype()).ok_or_else(|| {
                        Error::Autograd("LRN: the backward kernel lacks the data".into())
                    })?;
                    oxnet_core::with_float_dtype!(dt, T => backward_typed::<T>(ctx, args, grads))
                },
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::{autograd, invoke1, DType, NDArray, Req};

    #[test]
    fn values_and_gradient_match_mxnet() {
        let x = NDArray::from_vec((0..10).map(|i| i as f32 / 3.0 - 1.0).collect::<Vec<_>>(), &[1, 5, 1, 2])
            .unwrap();
        x.attach_grad(Req::Write).unwrap();
        let attrs = [("nsize", 3.into()), ("alpha", 0.3.into()), ("beta", 0.6.into()), ("knorm", 1.5.into())];
        let y = {
            let _r = autograd::record();
            invoke1("LRN", &[&x], &attrs).unwrap()
        };
        #[rustfmt::skip]
        let want = [-0.75114655, -0.51362407, -0.24935183, 0.0, 0.24935183, 0.48112202, 0.6827727, 0.84891504,
                    1.1419898, 1.289646];
        compare("LRN", "y", &y.to_vec::<f64>().unwrap(), &want, 1e-5, 1e-6).unwrap();
        let head =
            NDArray::from_vec((0..10).map(|i| (i % 4) as f32).collect::<Vec<_>>(), &[1, 5, 1, 2]).unwrap();
        autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
        #[rustfmt::skip]
        let want = [-0.03689041, 0.74383104, 1.4838141, 2.272297, -0.01662063, 0.60333115, 1.2787931, 1.5740454,
                    -0.14458716, 0.20784965];
        compare("LRN", "dx", &x.grad().unwrap().to_vec::<f64>().unwrap(), &want, 1e-5, 1e-6).unwrap();
    }

    #[test]
    fn gradient_matches_central_differences_and_errors() {
        let x = NDArray::random_uniform(-1.0, 1.0, &[2, 4, 3], DType::F64).unwrap();
        OpChecker::new("LRN", &[x.clone()]).attr("nsize", 3).attr("alpha", 0.5).run().unwrap();
        let e = invoke1("LRN", &[&x], &[("nsize", 0.into())]).unwrap_err().to_string();
        assert!(e.contains("nsize"), "{e}");
        let flat = NDArray::zeros(&[2, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let e = invoke1("LRN", &[&flat], &[("nsize", 3.into())]).unwrap_err().to_string();
        assert!(e.contains("LRN") && e.contains("(2, 3)"), "{e}");
    }
}
