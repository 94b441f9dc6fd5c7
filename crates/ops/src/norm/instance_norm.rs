//! `InstanceNorm`: every (sample, channel) slice of data
//! `(batch, channel, spatial...)` normalised on its own over its spatial
//! elements, `out = gamma[c] · (data - mean) / sqrt(var + eps) + beta[c]`.
//!
//! As in MXNet 1.9.1: `eps` defaults to 1e-3, gamma and beta are
//! `(channel,)`, the data needs at least 3 axes, and the operator shows one
//! output (MXNet's mean and variance outputs are hidden; here they are not
//! kept: the backward kernel recomputes them). MXNet runs it on float32
//! only; oxnet also on float64 (not float16).

use super::lanes::{Affine, Lanes};
use super::shared::{self, backward_dtype};
use crate::conv::geometry::fmt_tuple;
use crate::conv::merge_shape;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, BackwardDeps, DType, Error, OpDef, Result};

const OP: &str = "InstanceNorm";

/// Checks that data of shape `shape` has at least 3 axes.
fn check_data(shape: &[usize]) -> Result<()> {
    if shape.len() < 3 {
        return Err(Error::Shape(format!(
            "{OP}: data must have at least 3 axes (batch, channel, spatial...), got shape {}",
            fmt_tuple(shape)
        )));
    }
    Ok(())
}

/// The lane view: one lane per (sample, channel), gamma per channel.
fn lanes(shape: &[usize]) -> Result<(Lanes, Affine)> {
    check_data(shape)?;
    let outer = shape[0] * shape[1];
    Ok((Lanes { outer, n: shape[2..].iter().product(), inner: 1 }, Affine::PerBlock(shape[1])))
}

/// Gamma and beta are `(channel,)`; the output has the data's shape.
/// Partial shapes (0 unknown) are understood; the data's shape may come
/// from the output's.
fn infer_shape(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let data = match (&ins[0], &outs[0]) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => return Ok(()),
    };
    check_data(&data)?;
    let context = || format!("data of shape {}", fmt_tuple(&data));
    merge_shape(&mut ins[0], &data, &format!("{OP}: data"), context)?;
    merge_shape(&mut ins[1], &[data[1]], &format!("{OP}: gamma"), context)?;
    merge_shape(&mut ins[2], &[data[1]], &format!("{OP}: beta"), context)?;
    merge_shape(&mut outs[0], &data, &format!("{OP}: the output"), context)
}

/// Data, gamma, beta and the output share one dtype: float32 or 64.
fn infer_type(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    shared::infer_type_same(OP, &[DType::F32, DType::F64], ins, outs)
}

/// The `eps` attribute.
fn eps(attrs: &Attrs) -> Result<f64> {
    attrs.float("eps")
}

/// Registers the operator.
pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Instance normalization: each (sample, channel) slice of data (batch, channel, \
                 spatial...) normalised over its spatial elements, out = gamma[c] · (data - mean) \
                 / sqrt(var + eps) + beta[c], gamma and beta of shape (channel,).",
            )
            .attr(AttrSpec::optional("eps", AttrKind::Float, 1e-3, "Added to the variance."))
            .arguments(&["data", "gamma", "beta"])
            .outputs(&["output"])
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(infer_type)
            .forward(|ctx, inputs, outputs| {
                let (l, affine) = lanes(inputs[0].shape())?;
                let e = eps(ctx.attrs)?;
                oxnet_core::with_float_dtype!(inputs[0].dtype(), T => {
                    shared::forward::<T>(OP, ctx, inputs, outputs, l, affine, e)
                })
            })
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] },
                |ctx, args, grads| {
                    let dt = backward_dtype(OP, args)?;
                    let shape = args.inputs[0].as_ref().map(|x| x.shape().to_vec()).unwrap_or_default();
                    let (l, affine) = lanes(&shape)?;
                    let e = eps(ctx.attrs)?;
                    oxnet_core::with_float_dtype!(dt, T => {
                        shared::backward::<T>(OP, ctx, args, grads, l, affine, e)
                    })
                },
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::shape::Shape;
    use oxnet_core::{autograd, invoke, invoke1, registry, DType, Device, NDArray, Req};

    fn arr(v: Vec<f32>, shape: &[usize]) -> NDArray {
        NDArray::from_vec(v, shape).unwrap()
    }

    /// MXNet 1.9.1's values for x = arange(N).reshape(shape) ** 1.5 / 10 - 1,
    /// gamma = 0.5 · (1..=C), beta = 0.1 · (0..C) - 0.1, eps = 0.01, head
    /// gradient arange(N) % 5: (shape, [y, dx, dgamma, dbeta]).
    #[rustfmt::skip]
    const WANT: [(&[usize], [&[f64]; 4]); 2] = [
        (&[2, 4, 3], [
            &[-0.51434422, -0.18965925, 0.40400329, -1.109068, -0.0475141, 1.1565821, -1.634017, 0.058126077,
              1.8758909, -2.1516321, 0.16043475, 2.5911963, -0.69337684, -0.10766096, 0.50103825, -1.1936927,
              -0.012504134, 1.2061977, -1.6977334, 0.084155142, 1.9135743, -2.203999, 0.18171354, 2.6222856],
            &[-1.5995632, 0.35645318, 1.2431097, -2.398952, 6.0991945, -3.7002425, -0.43521404, 0.096367836,
              0.33884621, 4.7941246, -8.4514647, 3.6573391, -0.060763597, 0.013475895, 0.047287941, -0.090187907,
              0.020008564, 0.070179224, -2.1725192, 4.5678835, -2.3953629, -0.11365747, 0.025228024, 0.088429928],
            &[4.2255278, -1.1173689, -1.2977813, -1.0945237],
            &[12., 10., 13., 11.],
        ]),
        (&[2, 3, 2, 2], [
            &[-0.60910183, -0.38345057, 0.029136144, 0.56341624, -1.258968, -0.47378573, 0.39441419, 1.3383396,
              -1.8402982, -0.59370649, 0.72421324, 2.109791, -0.75384581, -0.32896227, 0.11259361, 0.57021475,
              -1.3154067, -0.45546734, 0.43015072, 1.3407247, -1.8803952, -0.58089149, 0.74993163, 2.1113567],
            &[-1.1273062, 0.12862182, 0.55563998, 0.44304442, 4.0282011, -4.8950663, -1.3733442, 2.2402096,
              -1.1969676, 4.2546272, -4.3996058, 1.3419452, -0.79972529, 0.39101231, 1.5970343, -1.1883216,
              -0.062341928, 0.0057723522, 0.033774376, 0.022794008, -0.068957806, 0.0063788891, 0.037414789,
              0.025164366],
            &[1.6417329, 2.4622309, 0.044742346],
            &[15., 17., 14.],
        ]),
    ];

    #[test]
    fn values_and_gradients_match_mxnet() {
        for (shape, want) in WANT {
            let c = shape[1];
            let x = arr((0..24).map(|i| (i as f32).powf(1.5) / 10.0 - 1.0).collect(), shape);
            let g = arr((1..=c).map(|i| i as f32 * 0.5).collect(), &[c]);
            let b = arr((0..c).map(|i| i as f32 * 0.1 - 0.1).collect(), &[c]);
            for a in [&x, &g, &b] {
                a.attach_grad(Req::Write).unwrap();
            }
            let y = {
                let _r = autograd::record();
                invoke("InstanceNorm", &[&x, &g, &b], &[("eps", 0.01.into())]).unwrap()
            };
            assert_eq!(y.len(), 1);
            let head = arr((0..24).map(|i| (i % 5) as f32).collect(), shape);
            autograd::backward(&[&y[0]], &[Some(&head)], Default::default()).unwrap();
            for (what, got, want, tol) in [
                ("y", &y[0], want[0], 1e-5),
                ("dx", &x.grad().unwrap(), want[1], 1e-4),
                ("dgamma", &g.grad().unwrap(), want[2], 1e-4),
                ("dbeta", &b.grad().unwrap(), want[3], 1e-5),
            ] {
                let got = got.to_vec::<f64>().unwrap();
                compare("InstanceNorm", &format!("{what} {shape:?}"), &got, want, tol, tol).unwrap();
            }
        }
    }

    #[test]
    fn gradients_match_central_differences() {
        for shape in [vec![2usize, 3, 4], vec![2, 2, 3, 2]] {
            let x = NDArray::random_uniform(-1.0, 1.0, &shape, DType::F64).unwrap();
            let g = NDArray::random_uniform(0.5, 1.5, &shape[1..2], DType::F64).unwrap();
            let b = NDArray::random_uniform(-1.0, 1.0, &shape[1..2], DType::F64).unwrap();
            OpChecker::new("InstanceNorm", &[x, g, b]).run().unwrap();
        }
    }

    #[test]
    fn shape_inference_and_errors() {
        let op = registry::get("InstanceNorm").unwrap();
        let attrs = op.parse_attrs(&[]).unwrap();
        let mut ins = vec![Some(Shape::from_slice(&[2, 4, 3])), None, None];
        let mut outs = vec![None];
        (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[2].as_deref(), Some(&[4][..]));
        let x = NDArray::ones(&[2, 4, 3], DType::F32, Device::Cpu).unwrap();
        let g3 = NDArray::ones(&[3], DType::F32, Device::Cpu).unwrap();
        let e = invoke1("InstanceNorm", &[&x, &g3, &g3], &[]).unwrap_err().to_string();
        assert!(e.contains("InstanceNorm: gamma has shape (3,)") && e.contains("(2, 4, 3)"), "{e}");
        let flat = NDArray::ones(&[2, 4], DType::F32, Device::Cpu).unwrap();
        let g4 = NDArray::ones(&[4], DType::F32, Device::Cpu).unwrap();
        let e = invoke1("InstanceNorm", &[&flat, &g4, &g4], &[]).unwrap_err().to_string();
        assert!(e.contains("at least 3 axes"), "{e}");
        let h = x.astype(DType::F16).unwrap();
        let g4h = g4.astype(DType::F16).unwrap();
        let e = invoke1("InstanceNorm", &[&h, &g4h, &g4h], &[]).unwrap_err().to_string();
        assert!(e.contains("float16"), "{e}");
    }
}
