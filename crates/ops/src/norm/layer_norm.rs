//! `LayerNorm`: `out = gamma · (data - mean) / sqrt(var + eps) + beta`,
//! the mean and (biased) variance taken along `axis` for every position of
//! the other axes, gamma and beta indexed along `axis`.
//!
//! As in MXNet 1.9.1: `axis` defaults to -1 and `eps` to 1e-5; with
//! `output_mean_var` the mean and the standard deviation `sqrt(var + eps)`
//! are also returned, each of the data's shape with `axis` of extent 1,
//! and take no head gradient. Data, gamma and beta share one dtype
//! (float16, float32 or float64).

use super::lanes::{Affine, Lanes};
use super::shared::{self, backward_dtype};
use crate::conv::geometry::fmt_tuple;
use crate::conv::merge_shape;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, BackwardDeps, DType, Error, OpDef, Result};

const OP: &str = "LayerNorm";

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct LnParams {
    axis: i64,
    eps: f64,
}

/// The parameters the call prepared, else read from the attributes.
fn params(attrs: &Attrs) -> Result<LnParams> {
    match attrs.prepared::<LnParams>() {
        Some(p) => Ok(*p),
        None => Ok(LnParams { axis: attrs.int("axis")?, eps: attrs.float("eps")? }),
    }
}

/// `axis` as an index into a shape of rank `ndim`, or an error naming it
/// and the shape.
fn axis_of(axis: i64, shape: &[usize]) -> Result<usize> {
    let rank = shape.len() as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if a < 0 || a >= rank {
        return Err(Error::attr(
            "axis",
            format!("{OP}: axis {axis} is out of range for data of shape {}", fmt_tuple(shape)),
        ));
    }
    Ok(a as usize)
}

/// The lane view of data of shape `shape`: normalised along `axis`.
fn lanes(p: &LnParams, shape: &[usize]) -> Result<Lanes> {
    let a = axis_of(p.axis, shape)?;
    Ok(Lanes { outer: shape[..a].iter().product(), n: shape[a], inner: shape[a + 1..].iter().product() })
}

/// Gamma and beta are `(data.shape[axis],)`; the output has the data's
/// shape; mean and std the data's with `axis` of extent 1. Partial shapes
/// (0 unknown) are understood; the data's shape may come from the output's.
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = params(attrs)?;
    let data = match (&ins[0], &outs[0]) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => return Ok(()),
    };
    let a = axis_of(p.axis, &data)?;
    let context = || format!("data of shape {} with axis={}", fmt_tuple(&data), p.axis);
    merge_shape(&mut ins[0], &data, &format!("{OP}: data"), context)?;
    merge_shape(&mut ins[1], &[data[a]], &format!("{OP}: gamma"), context)?;
    merge_shape(&mut ins[2], &[data[a]], &format!("{OP}: beta"), context)?;
    merge_shape(&mut outs[0], &data, &format!("{OP}: the output"), context)?;
    let mut reduced = data.to_vec();
    reduced[a] = 1;
    for slot in outs.iter_mut().skip(1) {
        merge_shape(slot, &reduced, &format!("{OP}: mean/std"), context)?;
    }
    Ok(())
}

/// Data, gamma, beta and the outputs share one dtype: float16, 32 or 64.
fn infer_type(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    shared::infer_type_same(OP, &[DType::F16, DType::F32, DType::F64], ins, outs)
}

/// Registers the operator.
pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Layer normalization: out = gamma · (data - mean) / sqrt(var + eps) + beta, the \
                 mean and (biased) variance taken along `axis` (default -1) for every position \
                 of the other axes; gamma and beta have shape (data.shape[axis],). With \
                 output_mean_var the mean and the standard deviation sqrt(var + eps) are also \
                 returned, with the data's shape and extent 1 along axis.",
            )
            .attr(AttrSpec::optional("axis", AttrKind::Int, -1i64, "The axis to normalise along."))
            .attr(AttrSpec::optional("eps", AttrKind::Float, 1e-5, "Added to the variance."))
            .attr(AttrSpec::optional(
                "output_mean_var",
                AttrKind::Bool,
                false,
                "Also output the mean and the standard deviation.",
            ))
            .arguments(&["data", "gamma", "beta"])
            .outputs_fn(|attrs| {
                Ok(if attrs.bool("output_mean_var")? {
                    vec!["output".into(), "mean".into(), "std".into()]
                } else {
                    vec!["output".into()]
                })
            })
            .arity_fn(|attrs| Ok([3, 0, if attrs.bool("output_mean_var")? { 3 } else { 1 }]))
            .prepare(|attrs| {
                Ok(std::sync::Arc::new(LnParams { axis: attrs.int("axis")?, eps: attrs.float("eps")? }))
            })
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(infer_type)
            .forward(|ctx, inputs, outputs| {
                let p = params(ctx.attrs)?;
                let l = lanes(&p, inputs[0].shape())?;
                oxnet_core::with_float_dtype!(inputs[0].dtype(), T => {
                    shared::forward::<T>(OP, ctx, inputs, outputs, l, Affine::PerPosition, p.eps)
                })
            })
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] },
                |ctx, args, grads| {
                    let p = params(ctx.attrs)?;
                    let dt = backward_dtype(OP, args)?;
                    let shape = args.inputs[0].as_ref().map(|x| x.shape().to_vec()).unwrap_or_default();
                    let l = lanes(&p, &shape)?;
                    oxnet_core::with_float_dtype!(dt, T => {
                        shared::backward::<T>(OP, ctx, args, grads, l, Affine::PerPosition, p.eps)
                    })
                },
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::shape::Shape;
    use oxnet_core::{autograd, invoke, registry, DType, NDArray, Req};

    fn arr(v: Vec<f32>, shape: &[usize]) -> NDArray {
        NDArray::from_vec(v, shape).unwrap()
    }

    fn close(what: &str, got: &NDArray, want: &[f64], tol: f64) {
        compare("LayerNorm", what, &got.to_vec::<f64>().unwrap(), want, tol, tol).unwrap();
    }

    /// MXNet 1.9.1's values for x = arange(24).reshape(2, 3, 4) ** 1.5 / 10 - 1,
    /// gamma = 0.5 · (1..=C), beta = 0.1 · (0..C) - 0.1, eps = 1e-3, head
    /// gradient arange(24) % 5: (y, mean, std, dx, dgamma, dbeta) per axis.
    #[rustfmt::skip]
    const WANT: [(i64, [&[f64]; 6]); 2] = [
        (-1, [
            &[-0.66334587, -0.62730354, 0.52868623, 3.136409, -0.74749446, -0.4873414, 0.70854843, 2.9532628,
              -0.75754315, -0.47017717, 0.73461455, 2.9243739, -0.76153457, -0.46330941, 0.7452808, 2.9123843,
              -0.76367974, -0.45960602, 0.7510891, 2.9058149, -0.76501942, -0.45728859, 0.75474375, 2.9016657],
            &[-0.77438551, 0.30993843, 1.9433267, 3.9729834, 6.331985, 8.9792519],
            &[0.2002451, 0.39377823, 0.5175212, 0.61679429, 0.70213455, 0.77815759],
            &[0.23034191, -0.41151762, -0.72829223, 0.9094677, 3.2156174, -3.6708951, -1.8602653, 2.3155432,
              -1.441818, 3.8496904, -3.3923063, 0.98443323, -2.5026493, 0.7858786, 5.6974955, -3.9807246,
              0.66154623, -0.66060627, -0.66180396, 0.66085911, 0.61472702, -0.61169374, -0.61355793, 0.61052108],
            &[-13.098712, -5.2744412, 4.873199, 17.984192],
            &[10., 11., 12., 13.],
        ]),
        (1, [
            &[-0.64454049, -0.66344976, -0.67337412, -0.67981213, -0.23566449, -0.17564644, -0.14262351,
              -0.12057442, 2.0871181, 2.0538189, 2.0340576, 2.0202978, -0.69905668, -0.69987112, -0.70059121,
              -0.70123261, -0.051328987, -0.048276845, -0.045568809, -0.043149669, 1.9741632, 1.9720278,
              1.9701265, 1.9684222],
            &[0.020913893, 0.30601135, 0.63827139, 1.0066428, 5.5003982, 6.1066356, 6.7313294, 7.3739319],
            &[0.93740857, 1.0702031, 1.1819758, 1.2823358, 1.9559721, 2.0166156, 2.0754626, 2.1326663],
            &[-1.0789437, 0.9879992, -0.13496742, -0.14814389, 1.6651324, -1.6278039, 0.23015283, 0.25805274,
              -0.58618903, 0.63980436, -0.095185369, -0.10990886, -0.084693342, -0.087433755, -0.089483857,
              -0.30750334, 0.15948887, 0.16510077, 0.16939791, 0.58368528, -0.074795604, -0.07766708,
              -0.079913765, -0.27618182],
            &[-17.699451, -1.7836181, 17.942984],
            &[15., 17., 14.],
        ]),
    ];

    #[test]
    fn values_and_gradients_match_mxnet() {
        for (axis, want) in WANT {
            let c = if axis == -1 { 4 } else { 3 };
            let x = arr((0..24).map(|i| (i as f32).powf(1.5) / 10.0 - 1.0).collect(), &[2, 3, 4]);
            let g = arr((1..=c).map(|i| i as f32 * 0.5).collect(), &[c]);
            let b = arr((0..c).map(|i| i as f32 * 0.1 - 0.1).collect(), &[c]);
            for a in [&x, &g, &b] {
                a.attach_grad(Req::Write).unwrap();
            }
            let attrs = [("axis", axis.into()), ("eps", 1e-3.into()), ("output_mean_var", true.into())];
            let outs = {
                let _r = autograd::record();
                invoke("LayerNorm", &[&x, &g, &b], &attrs).unwrap()
            };
            assert_eq!(outs.len(), 3);
            let mut reduced = [2, 3, 4];
            reduced[if axis == -1 { 2 } else { 1 }] = 1;
            assert_eq!(outs[1].shape(), &reduced[..]);
            let head = arr((0..24).map(|i| (i % 5) as f32).collect(), &[2, 3, 4]);
            autograd::backward(&[&outs[0]], &[Some(&head)], Default::default()).unwrap();
            for (what, got, want, tol) in [
                ("y", &outs[0], want[0], 1e-5),
                ("mean", &outs[1], want[1], 1e-5),
                ("std", &outs[2], want[2], 1e-5),
                ("dx", &x.grad().unwrap(), want[3], 1e-4),
                ("dgamma", &g.grad().unwrap(), want[4], 1e-4),
                ("dbeta", &b.grad().unwrap(), want[5], 1e-5),
            ] {
                close(&format!("{what} (axis {axis})"), got, want, tol);
            }
        }
    }

    #[test]
    fn gradients_match_central_differences() {
        let x = NDArray::random_uniform(-1.0, 1.0, &[3, 4, 5], DType::F64).unwrap();
        for (axis, c) in [(-1i64, 5), (1, 4), (0, 3), (-3, 3)] {
            let g = NDArray::random_uniform(0.5, 1.5, &[c], DType::F64).unwrap();
            let b = NDArray::random_uniform(-1.0, 1.0, &[c], DType::F64).unwrap();
            OpChecker::new("LayerNorm", &[x.clone(), g.clone(), b.clone()]).attr("axis", axis).run().unwrap();
            // with the mean and std outputs (which take no head gradient)
            OpChecker::new("LayerNorm", &[x.clone(), g, b])
                .attr("axis", axis)
                .attr("output_mean_var", true)
                .skip_grad()
                .run()
                .unwrap();
        }
        // float16 runs and keeps its dtype
        let h = NDArray::random_uniform(-1.0, 1.0, &[2, 8], DType::F16).unwrap();
        let gh = NDArray::ones(&[8], DType::F16, oxnet_core::Device::Cpu).unwrap();
        let bh = NDArray::zeros(&[8], DType::F16, oxnet_core::Device::Cpu).unwrap();
        let y = oxnet_core::invoke1("LayerNorm", &[&h, &gh, &bh], &[]).unwrap();
        assert_eq!(y.dtype(), DType::F16);
    }

    #[test]
    fn large_inputs_take_the_parallel_path() {
        // 64 rows of 1024 and 64·1024 lanes across axis 1: against f64 on one thread
        for (shape, axis) in [(vec![64usize, 1024], -1i64), (vec![8, 16, 1024], 1)] {
            let x = NDArray::random_uniform(-2.0, 3.0, &shape, DType::F32).unwrap();
            let c = shape[if axis == -1 { shape.len() - 1 } else { 1 }];
            let g = NDArray::random_uniform(0.5, 1.5, &[c], DType::F32).unwrap();
            let b = NDArray::random_uniform(-1.0, 1.0, &[c], DType::F32).unwrap();
            let attrs = [("axis", axis.into())];
            let y = oxnet_core::invoke1("LayerNorm", &[&x, &g, &b], &attrs).unwrap();
            let x64 = x.astype(DType::F64).unwrap();
            let (g64, b64) = (g.astype(DType::F64).unwrap(), b.astype(DType::F64).unwrap());
            let want = oxnet_core::parallel::on_this_thread(|| {
                oxnet_core::invoke1("LayerNorm", &[&x64, &g64, &b64], &attrs).unwrap()
            });
            compare(
                "LayerNorm",
                "parallel",
                &y.to_vec::<f64>().unwrap(),
                &want.to_vec::<f64>().unwrap(),
                1e-4,
                1e-4,
            )
            .unwrap();
        }
    }

    #[test]
    fn shape_inference_fills_gamma_and_beta() {
        let op = registry::get("LayerNorm").unwrap();
        let attrs = op.parse_attrs(&[("output_mean_var", true.into())]).unwrap();
        let mut ins = vec![Some(Shape::from_slice(&[2, 3, 4])), None, None];
        let mut outs = vec![None, None, None];
        (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1].as_deref(), Some(&[4][..]));
        assert_eq!(ins[2].as_deref(), Some(&[4][..]));
        assert_eq!(outs[0].as_deref(), Some(&[2, 3, 4][..]));
        assert_eq!(outs[2].as_deref(), Some(&[2, 3, 1][..]));
        // from the output back to the data
        let attrs = op.parse_attrs(&[("axis", 0.into())]).unwrap();
        let mut ins = vec![None, None, None];
        let mut outs = vec![Some(Shape::from_slice(&[5, 2]))];
        (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[0].as_deref(), Some(&[5, 2][..]));
        assert_eq!(ins[1].as_deref(), Some(&[5][..]));
        // a wrong gamma is an error naming it, the data's shape and the axis
        let mut ins = vec![Some(Shape::from_slice(&[2, 3, 4])), Some(Shape::from_slice(&[3])), None];
        let e = (op.infer_shape)(&attrs, &mut ins, &mut [None]).unwrap_err().to_string();
        assert!(
            e.contains("LayerNorm: gamma has shape (3,)") && e.contains("(2, 3, 4)") && e.contains("(2,)"),
            "{e}"
        );
    }

    #[test]
    fn empty_data_gives_empty_results() {
        let attrs = [("output_mean_var", true.into())];
        for (shape, c) in [([2usize, 0], 0usize), ([0, 3], 3)] {
            let x = NDArray::zeros(&shape, DType::F32, oxnet_core::Device::Cpu).unwrap();
            let g = NDArray::ones(&[c], DType::F32, oxnet_core::Device::Cpu).unwrap();
            let outs = invoke("LayerNorm", &[&x, &g, &g], &attrs).unwrap();
            assert_eq!(outs[0].shape(), &shape);
            assert_eq!(outs[1].shape(), &[shape[0], 1]);
        }
    }

    #[test]
    fn bad_calls_are_errors() {
        let x = NDArray::ones(&[2, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let g3 = NDArray::ones(&[3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let g2 = NDArray::ones(&[2], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let e = invoke("LayerNorm", &[&x, &g2, &g3], &[]).unwrap_err().to_string();
        assert!(e.contains("gamma") && e.contains("(2,)") && e.contains("(3,)"), "{e}");
        let e = invoke("LayerNorm", &[&x, &g3, &g3], &[("axis", 2.into())]).unwrap_err().to_string();
        assert!(e.contains("axis") && e.contains("(2, 3)"), "{e}");
        let g64 = g3.astype(DType::F64).unwrap();
        let e = invoke("LayerNorm", &[&x, &g64, &g3], &[]).unwrap_err().to_string();
        assert!(e.contains("gamma") && e.contains("float64"), "{e}");
        let xi = x.astype(DType::I32).unwrap();
        let gi = g3.astype(DType::I32).unwrap();
        assert!(invoke("LayerNorm", &[&xi, &gi, &gi], &[]).is_err());
    }
}
