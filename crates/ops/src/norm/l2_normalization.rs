//! `L2Normalization`: `out = data / sqrt(Σ data² + eps)`, the sum taken
//! per `mode`:
//! - `instance` (the default): over all axes but the first, per sample;
//! - `channel`: over axis 1, per (sample, spatial position);
//! - `spatial`: over the axes after 1, per (sample, channel).
//!
//! As in MXNet 1.9.1: `eps` defaults to 1e-10; `channel` and `spatial`
//! need at least 3 axes; one output is shown (MXNet's hidden norm output
//! is not kept: the backward kernel recomputes the norms); float16, 32 and
//! 64 data.

use super::lanes::{for_block_runs, Lanes};
use super::shared::{backward_dtype, write_with};
use crate::conv::geometry::fmt_tuple;
use oxnet_core::attrs::Attrs;
use oxnet_core::op::{same_dtype, same_shape_partial};
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardDeps, DType, Error, FloatElement, OpDef, Req, Result,
};

const OP: &str = "L2Normalization";

/// The lane view of data of shape `shape` under `mode`, or an error.
fn lanes(mode: &str, shape: &[usize]) -> Result<Lanes> {
    if shape.is_empty() {
        return Err(Error::Shape(format!("{OP}: data must have at least 1 axis, got shape ()")));
    }
    if mode != "instance" && shape.len() < 3 {
        return Err(Error::Shape(format!(
            "{OP}: mode={mode} needs data with at least 3 axes, got shape {}",
            fmt_tuple(shape)
        )));
    }
    let rest: usize = shape[1..].iter().product();
    Ok(match mode {
        "instance" => Lanes { outer: shape[0], n: rest, inner: 1 },
        "channel" => Lanes { outer: shape[0], n: shape[1], inner: shape[2..].iter().product() },
        "spatial" => Lanes { outer: shape[0] * shape[1], n: shape[2..].iter().product(), inner: 1 },
        other => return Err(Error::attr("mode", format!("{OP}: unknown mode `{other}`"))),
    })
}

/// `1 / sqrt(Σ x² + eps)` of each lane of one block (`inner` long).
fn inverse_norms<T: FloatElement>(xb: &[T], inner: usize, eps: f64) -> Vec<f64> {
    let mut s = vec![0.0; inner];
    for row in xb.chunks_exact(inner) {
        s.iter_mut().zip(row).for_each(|(a, v)| *a += v.to_f64().powi(2));
    }
    s.iter().map(|v| 1.0 / (v + eps).sqrt()).collect()
}

/// `y = x / sqrt(Σ x² + eps)` per lane.
fn forward_typed<T: FloatElement>(l: Lanes, eps: f64, x: &[T], y: &mut [T]) {
    let block = l.block();
    for_block_runs(
        l,
        y,
        block,
        || (),
        |first, run, _| {
            for (b, yb) in run.chunks_exact_mut(block).enumerate() {
                let xb = &x[(first + b) * block..][..block];
                let inv: Vec<T::Compute> =
                    inverse_norms(xb, l.inner, eps).iter().map(|&v| T::from_f64(v).to_compute()).collect();
                for (yr, xr) in yb.chunks_exact_mut(l.inner).zip(xb.chunks_exact(l.inner)) {
                    for ((o, v), r) in yr.iter_mut().zip(xr).zip(&inv) {
                        *o = T::from_compute(v.to_compute() * *r);
                    }
                }
            }
        },
    );
}

/// `dx = dy / r - x · Σ(dy · x) / r³` per lane, `r` its norm.
fn backward_typed<T: FloatElement>(l: Lanes, eps: f64, x: &[T], dy: &[T], dx: &mut [T]) {
    let block = l.block();
    let inner = l.inner;
    for_block_runs(
        l,
        dx,
        block,
        || (),
        |first, run, _| {
            for (b, db) in run.chunks_exact_mut(block).enumerate() {
                let start = (first + b) * block;
                let (xb, gb) = (&x[start..][..block], &dy[start..][..block]);
                let inv = inverse_norms(xb, inner, eps);
                let mut dot = vec![0.0; inner];
                for (xr, gr) in xb.chunks_exact(inner).zip(gb.chunks_exact(inner)) {
                    for i in 0..inner {
                        dot[i] += xr[i].to_f64() * gr[i].to_f64();
                    }
                }
                let coef: Vec<f64> = dot.iter().zip(&inv).map(|(d, r)| d * r * r * r).collect();
                for ((dr, xr), gr) in
                    db.chunks_exact_mut(inner).zip(xb.chunks_exact(inner)).zip(gb.chunks_exact(inner))
                {
                    for i in 0..inner {
                        dr[i] = T::from_f64(gr[i].to_f64() * inv[i] - xr[i].to_f64() * coef[i]);
                    }
                }
            }
        },
    );
}

/// The output has the data's dtype, which must be a float one.
fn infer_type(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    same_dtype(attrs, ins, outs)?;
    match ins[0] {
        Some(dt) if !dt.is_float() => {
            Err(Error::DType(format!("{OP}: data must be a float array, got {dt}")))
        }
        _ => Ok(()),
    }
}

/// The output has the data's shape (either fills the other), which must
/// suit `mode`.
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    same_shape_partial(attrs, ins, outs)?;
    if let Some(s) = ins[0].as_ref().or(outs[0].as_ref()) {
        lanes(attrs.str("mode")?, s)?;
    }
    Ok(())
}

/// Registers the operator.
pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "L2 normalization: out = data / sqrt(sum of data² + eps), the sum over all axes \
                 but the first per sample (mode=instance), over axis 1 per (sample, position) \
                 (mode=channel), or over the axes after 1 per (sample, channel) (mode=spatial).",
            )
            .attr(AttrSpec::optional("eps", AttrKind::Float, 1e-10, "Added to the sum of squares."))
            .attr(AttrSpec::optional(
                "mode",
                AttrKind::Choice(vec!["channel", "instance", "spatial"]),
                "instance",
                "The axes the norm is taken over.",
            ))
            .arguments(&["data"])
            .outputs(&["output"])
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(infer_type)
            .forward(|ctx, inputs, outputs| {
                let l = lanes(ctx.attrs.str("mode")?, inputs[0].shape())?;
                let eps = ctx.attrs.float("eps")?;
                oxnet_core::with_float_dtype!(inputs[0].dtype(), T => {
                    let x = inputs[0].as_slice::<T>()?;
                    write_with::<T, _>(ctx.req[0], &outputs[0], x.len(), |y| forward_typed(l, eps, x, y))
                })
            })
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0], outputs: vec![] },
                |ctx, args, grads| {
                    if ctx.req[0] == Req::Null {
                        return Ok(());
                    }
                    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
                    let data = args.inputs[0].as_ref().ok_or_else(missing)?;
                    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
                    let dy = if dy.is_contiguous() { dy.clone() } else { dy.copy()? };
                    let l = lanes(ctx.attrs.str("mode")?, data.shape())?;
                    let eps = ctx.attrs.float("eps")?;
                    oxnet_core::with_float_dtype!(backward_dtype(OP, args)?, T => {
                        let (x, g) = (data.as_slice::<T>()?, dy.as_slice::<T>()?);
                        write_with::<T, _>(ctx.req[0], &grads[0], x.len(), |dx| backward_typed(l, eps, x, g, dx))
                    })
                },
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::{autograd, invoke1, DType, Device, NDArray, Req};

    fn arr(v: Vec<f32>, shape: &[usize]) -> NDArray {
        NDArray::from_vec(v, shape).unwrap()
    }

    /// MXNet 1.9.1's values for x = arange(24).reshape(2, 3, 4) ** 1.5 / 10 - 1,
    /// eps = 0.5, head gradient arange(24) % 5: (mode, [y, dx]).
    #[rustfmt::skip]
    const WANT: [(&str, [&[f64]; 2]); 3] = [
        ("instance", [
            &[-0.22233774, -0.20010395, -0.15945113, -0.10680766, -0.044467546, 0.026243411, 0.10443067,
              0.18943751, 0.28075513, 0.37797415, 0.48075593, 0.5888142, 0.13431567, 0.1568778, 0.18032528,
              0.20462586, 0.22975057, 0.25567323, 0.28236997, 0.30981898, 0.33800021, 0.36689505, 0.39648628,
              0.42675796],
            &[0.1190858, 0.32951498, 0.53007871, 0.72422022, 0.91316807, -0.014056174, 0.16640386, 0.34321129,
              0.51663858, 0.68690503, -0.2574966, -0.09303569, 0.046643559, 0.082731321, 0.11856564, -0.05857626,
              -0.023222063, 0.01190371, 0.046807896, 0.081496738, -0.096756041, -0.062481083, -0.028405476,
              0.0054753474],
        ]),
        ("channel", [
            &[-0.56482607, -0.43842846, -0.29498982, -0.16506076, -0.11296521, 0.057499405, 0.19320016,
              0.29275709, 0.71322942, 0.8281427, 0.88941419, 0.90995461, 0.31145769, 0.33036312, 0.3468073,
              0.36123052, 0.53275681, 0.53841275, 0.54306287, 0.54693025, 0.78377128, 0.77263063, 0.76253498,
              0.75336522],
            &[0.53846502, 1.1009942, 0.77451944, 1.0875348, 2.3669972, -0.08050593, 0.44286394, 0.58658183,
              1.014536, 0.78907377, 0.14515963, 0.030850101, 0.16180584, 0.1847119, 0.19842774, -0.12067522,
              0.037915297, 0.042165544, 0.043669757, 0.11772101, -0.089363307, -0.10704073, -0.11971584,
              -0.026350217],
        ]),
        ("spatial", [
            &[-0.57212168, -0.51490951, -0.41030124, -0.27483854, -0.16327251, 0.09635853, 0.38344046,
              0.69556206, 0.30924493, 0.41632935, 0.52954096, 0.64856452, 0.39109853, 0.45679468, 0.5250687,
              0.5958268, 0.42316306, 0.47090834, 0.52007937, 0.57063597, 0.44038045, 0.47802752, 0.51658195,
              0.55602294],
            &[-0.70702714, -0.064202771, 0.63719368, 1.3767198, 3.4149311, -0.088219114, 0.46531144, 0.99591744,
              0.48919833, 0.64908677, -0.42038703, -0.26997676, 0.04171421, 0.13098694, 0.21890149, -0.31392294,
              -0.094328724, -0.035449974, 0.022846935, 0.080578379, -0.077611849, -0.028812997, 0.019825947,
              0.068308644],
        ]),
    ];

    #[test]
    fn values_and_gradients_match_mxnet() {
        for (mode, want) in WANT {
            let x = arr((0..24).map(|i| (i as f32).powf(1.5) / 10.0 - 1.0).collect(), &[2, 3, 4]);
            x.attach_grad(Req::Write).unwrap();
            let y = {
                let _r = autograd::record();
                invoke1("L2Normalization", &[&x], &[("mode", mode.into()), ("eps", 0.5.into())]).unwrap()
            };
            let head = arr((0..24).map(|i| (i % 5) as f32).collect(), &[2, 3, 4]);
            autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
            compare("L2Normalization", mode, &y.to_vec::<f64>().unwrap(), want[0], 1e-5, 1e-6).unwrap();
            let dx = x.grad().unwrap().to_vec::<f64>().unwrap();
            compare("L2Normalization", &format!("dx {mode}"), &dx, want[1], 1e-4, 1e-5).unwrap();
        }
        // the default eps, and one-axis data (each element its own instance)
        let y = invoke1("L2Normalization", &[&arr(vec![1., -2., 0., 0.], &[2, 2])], &[]).unwrap();
        compare(
            "L2Normalization",
            "default",
            &y.to_vec::<f64>().unwrap(),
            &[0.44721359, -0.89442718, 0., 0.],
            1e-6,
            1e-7,
        )
        .unwrap();
        let y = invoke1("L2Normalization", &[&arr(vec![3., -4.], &[2])], &[]).unwrap();
        compare("L2Normalization", "1-d", &y.to_vec::<f64>().unwrap(), &[1., -1.], 1e-6, 1e-7).unwrap();
    }

    #[test]
    fn gradients_match_central_differences_and_errors() {
        let x = NDArray::random_uniform(-1.0, 1.0, &[2, 3, 2, 2], DType::F64).unwrap();
        for mode in ["instance", "channel", "spatial"] {
            OpChecker::new("L2Normalization", std::slice::from_ref(&x)).attr("mode", mode).run().unwrap();
        }
        let e = invoke1("L2Normalization", &[&x], &[("mode", "foo".into())]).unwrap_err().to_string();
        assert!(e.contains("mode") && e.contains("foo"), "{e}");
        let flat = NDArray::ones(&[2, 3], DType::F32, Device::Cpu).unwrap();
        let e = invoke1("L2Normalization", &[&flat], &[("mode", "spatial".into())]).unwrap_err().to_string();
        assert!(e.contains("mode=spatial") && e.contains("(2, 3)"), "{e}");
        let ints = flat.astype(DType::I32).unwrap();
        assert!(invoke1("L2Normalization", &[&ints], &[]).is_err());
    }
}
