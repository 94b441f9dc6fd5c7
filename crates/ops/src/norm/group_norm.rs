//! `GroupNorm`: the channels (axis 1) of each sample split into
//! `num_groups` groups, each group's elements normalised together,
//! `out = gamma[group] · (data - mean) / sqrt(var + eps) + beta[group]`.
//!
//! As in MXNet 1.9.1, gamma and beta hold one value per *group* (shape
//! `(num_groups,)`, not per channel), the data has at least 3 axes
//! `(batch, channel, ...)` with the channels divisible by `num_groups`;
//! `eps` defaults to 1e-5; with `output_mean_var` the mean and the
//! standard deviation `sqrt(var + eps)` of every (sample, group) are also
//! returned, shape `(batch, num_groups)`, and take no head gradient. Data,
//! gamma and beta share one dtype (float16, float32 or float64).

use super::lanes::{Affine, Lanes};
use super::shared::{self, backward_dtype};
use crate::conv::geometry::fmt_tuple;
use crate::conv::merge_shape;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, BackwardDeps, DType, Error, OpDef, Result};

const OP: &str = "GroupNorm";

/// The parsed attributes.
#[derive(Debug, Clone, Copy)]
struct GnParams {
    num_groups: usize,
    eps: f64,
}

/// Reads and validates the attributes.
fn parse(attrs: &Attrs) -> Result<GnParams> {
    let g = attrs.int("num_groups")?;
    if g < 1 {
        return Err(Error::attr("num_groups", format!("{OP}: must be at least 1, got {g}")));
    }
    Ok(GnParams { num_groups: g as usize, eps: attrs.float("eps")? })
}

/// The parameters the call prepared, else read from the attributes.
fn params(attrs: &Attrs) -> Result<GnParams> {
    match attrs.prepared::<GnParams>() {
        Some(p) => Ok(*p),
        None => parse(attrs),
    }
}

/// Checks that `shape` (0: unknown extent) suits `p`: at least 3 axes and
/// the channels (when known) divisible by the groups.
fn check_data(p: &GnParams, shape: &[usize]) -> Result<()> {
    if shape.len() < 3 {
        return Err(Error::Shape(format!(
            "{OP}: data must have at least 3 axes (batch, channel, ...), got shape {}",
            fmt_tuple(shape)
        )));
    }
    if !shape[1].is_multiple_of(p.num_groups) {
        return Err(Error::attr(
            "num_groups",
            format!(
                "{OP}: the {} channels of data of shape {} are not divisible by num_groups={}",
                shape[1],
                fmt_tuple(shape),
                p.num_groups
            ),
        ));
    }
    Ok(())
}

/// The lane view: one lane per (sample, group).
fn lanes(p: &GnParams, shape: &[usize]) -> Result<Lanes> {
    check_data(p, shape)?;
    let outer = shape[0] * p.num_groups;
    Ok(Lanes { outer, n: shape.iter().product::<usize>() / outer.max(1), inner: 1 })
}

/// Gamma and beta are `(num_groups,)`; the output has the data's shape;
/// mean and std are `(batch, num_groups)`. Partial shapes (0 unknown) are
/// understood; the data's shape may come from the output's.
fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = params(attrs)?;
    let g = p.num_groups;
    let context = || format!("num_groups={g}");
    merge_shape(&mut ins[1], &[g], &format!("{OP}: gamma"), context)?;
    merge_shape(&mut ins[2], &[g], &format!("{OP}: beta"), context)?;
    let data = match (&ins[0], &outs[0]) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => return Ok(()),
    };
    check_data(&p, &data)?;
    let context = || format!("data of shape {} with num_groups={g}", fmt_tuple(&data));
    merge_shape(&mut ins[0], &data, &format!("{OP}: data"), context)?;
    merge_shape(&mut outs[0], &data, &format!("{OP}: the output"), context)?;
    for slot in outs.iter_mut().skip(1) {
        merge_shape(slot, &[data[0], g], &format!("{OP}: mean/std"), context)?;
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
                "Group normalization: the channels (axis 1) of each sample split into num_groups \
                 groups, out = gamma[group] · (data - mean) / sqrt(var + eps) + beta[group] with \
                 the mean and (biased) variance of each (sample, group). As in MXNet 1.9.1 gamma \
                 and beta have shape (num_groups,). With output_mean_var the mean and the \
                 standard deviation sqrt(var + eps) are also returned, shape (batch, num_groups).",
            )
            .attr(AttrSpec::optional("num_groups", AttrKind::Int, 1i64, "Number of groups."))
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
            .prepare(|attrs| Ok(std::sync::Arc::new(parse(attrs)?)))
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape)
            .infer_type(infer_type)
            .forward(|ctx, inputs, outputs| {
                let p = params(ctx.attrs)?;
                let l = lanes(&p, inputs[0].shape())?;
                let affine = Affine::PerBlock(p.num_groups);
                oxnet_core::with_float_dtype!(inputs[0].dtype(), T => {
                    shared::forward::<T>(OP, ctx, inputs, outputs, l, affine, p.eps)
                })
            })
            .backward(
                |_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] },
                |ctx, args, grads| {
                    let p = params(ctx.attrs)?;
                    let dt = backward_dtype(OP, args)?;
                    let shape = args.inputs[0].as_ref().map(|x| x.shape().to_vec()).unwrap_or_default();
                    let l = lanes(&p, &shape)?;
                    let affine = Affine::PerBlock(p.num_groups);
                    oxnet_core::with_float_dtype!(dt, T => {
                        shared::backward::<T>(OP, ctx, args, grads, l, affine, p.eps)
                    })
                },
            ),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::{compare, OpChecker};
    use oxnet_core::shape::Shape;
    use oxnet_core::{autograd, invoke, registry, DType, Device, NDArray, Req};

    fn arr(v: Vec<f32>, shape: &[usize]) -> NDArray {
        NDArray::from_vec(v, shape).unwrap()
    }

    /// MXNet 1.9.1's values for x = arange(24).reshape(2, 4, 3) ** 1.5 / 10 - 1,
    /// gamma = 0.5 · (1..=G), beta = 0.1 · (0..G) - 0.1, eps = 1e-3, head
    /// gradient arange(24) % 5: (G, [y, mean, std, dx, dgamma, dbeta]).
    #[rustfmt::skip]
    const WANT: [(usize, [&[f64]; 6]); 2] = [
        (2, [
            &[-0.69696057, -0.56996983, -0.33777654, -0.037097365, 0.31896535, 0.722839, -1.4022814, -0.88979244,
              -0.33925718, 0.24685659, 0.86650693, 1.5179683, -0.81426615, -0.54241014, -0.2598865, 0.032916255,
              0.33564934, 0.6479969, -1.4390712, -0.88285971, -0.31181172, 0.27369711, 0.8733173, 1.4867257],
            &[-0.52991802, 1.5158377, 4.5502024, 8.3059454],
            &[0.39372951, 0.74602985, 0.97532308, 1.1599095],
            &[-1.6520357, -0.4809359, 0.60830903, 1.6442673, 2.6371331, -2.7567379, -1.6477904, -0.11338341,
              1.4354244, 2.9976985, -2.1294782, -0.54246986, -0.35729927, 0.29134274, 0.94532073, -0.95881218,
              -0.29472458, 0.37417251, 0.43554303, 1.4070238, -1.9292603, -0.95202017, 0.027994037, 1.0107187],
            &[-1.0892382, -3.0623868],
            &[22., 24.],
        ]),
        (4, [
            &[-0.62601113, -0.21382266, 0.53983349, -1.1883689, -0.050911516, 1.2392801, -1.706221, 0.056382455,
              1.9498385, -2.2207408, 0.15927324, 2.6614699, -0.70685232, -0.10783494, 0.51468772, -1.2157826,
              -0.012735529, 1.2285191, -1.7258052, 0.083907723, 1.9418935, -2.2364669, 0.18146656, 2.6550004],
            &[-0.87238574, -0.18745025, 0.86148715, 2.1701882, 3.6941528, 5.4062514, 7.2876449, 9.3242455],
            &[0.12130377, 0.24650136, 0.32536989, 0.38846633, 0.44263735, 0.4908579, 0.53474361, 0.57528889],
            &[-0.75157285, 0.72929585, 0.022278786, -3.3517985, 6.5018263, -3.1500292, -0.099953175, 0.10891423,
              -0.0089607239, 4.5128908, -8.7069359, 4.1940517, -0.013110399, 0.014414665, -0.0013052225,
              -0.019190311, 0.021139512, -0.0019505024, -2.3347511, 4.6380773, -2.3033352, -0.023785591,
              0.026263816, -0.0024781227],
            &[4.7747717, -1.3244503, -1.2571502, -1.1650131],
            &[12., 10., 13., 11.],
        ]),
    ];

    #[test]
    fn values_and_gradients_match_mxnet() {
        for (g_count, want) in WANT {
            let x = arr((0..24).map(|i| (i as f32).powf(1.5) / 10.0 - 1.0).collect(), &[2, 4, 3]);
            let g = arr((1..=g_count).map(|i| i as f32 * 0.5).collect(), &[g_count]);
            let b = arr((0..g_count).map(|i| i as f32 * 0.1 - 0.1).collect(), &[g_count]);
            for a in [&x, &g, &b] {
                a.attach_grad(Req::Write).unwrap();
            }
            let attrs = [
                ("num_groups", (g_count as i64).into()),
                ("eps", 1e-3.into()),
                ("output_mean_var", true.into()),
            ];
            let outs = {
                let _r = autograd::record();
                invoke("GroupNorm", &[&x, &g, &b], &attrs).unwrap()
            };
            assert_eq!(outs[1].shape(), &[2, g_count]);
            let head = arr((0..24).map(|i| (i % 5) as f32).collect(), &[2, 4, 3]);
            autograd::backward(&[&outs[0]], &[Some(&head)], Default::default()).unwrap();
            for (what, got, want, tol) in [
                ("y", &outs[0], want[0], 1e-5),
                ("mean", &outs[1], want[1], 1e-5),
                ("std", &outs[2], want[2], 1e-5),
                ("dx", &x.grad().unwrap(), want[3], 1e-4),
                ("dgamma", &g.grad().unwrap(), want[4], 1e-4),
                ("dbeta", &b.grad().unwrap(), want[5], 1e-5),
            ] {
                let got = got.to_vec::<f64>().unwrap();
                compare("GroupNorm", &format!("{what} (num_groups={g_count})"), &got, want, tol, tol)
                    .unwrap();
            }
        }
    }

    #[test]
    fn gradients_match_central_differences() {
        for (shape, groups) in [(vec![2usize, 4, 3], 2i64), (vec![3, 6, 2, 2], 3), (vec![2, 3, 5], 1)] {
            let x = NDArray::random_uniform(-1.0, 1.0, &shape, DType::F64).unwrap();
            let g = NDArray::random_uniform(0.5, 1.5, &[groups as usize], DType::F64).unwrap();
            let b = NDArray::random_uniform(-1.0, 1.0, &[groups as usize], DType::F64).unwrap();
            OpChecker::new("GroupNorm", &[x.clone(), g.clone(), b.clone()])
                .attr("num_groups", groups)
                .run()
                .unwrap();
            OpChecker::new("GroupNorm", &[x, g, b])
                .attr("num_groups", groups)
                .attr("output_mean_var", true)
                .skip_grad()
                .run()
                .unwrap();
        }
    }

    #[test]
    fn shape_inference_and_errors() {
        let op = registry::get("GroupNorm").unwrap();
        let attrs = op.parse_attrs(&[("num_groups", 2.into()), ("output_mean_var", true.into())]).unwrap();
        let mut ins = vec![Some(Shape::from_slice(&[2, 4, 3, 5])), None, None];
        let mut outs = vec![None, None, None];
        (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1].as_deref(), Some(&[2][..]));
        assert_eq!(outs[1].as_deref(), Some(&[2, 2][..]));
        // channels not divisible by the groups
        let mut ins = vec![Some(Shape::from_slice(&[2, 5, 3])), None, None];
        let e = (op.infer_shape)(&attrs, &mut ins, &mut [None, None, None]).unwrap_err().to_string();
        assert!(e.contains("num_groups=2") && e.contains("(2, 5, 3)") && e.contains("GroupNorm"), "{e}");
        // gamma per channel rather than per group
        let x = NDArray::ones(&[2, 4, 3], DType::F32, Device::Cpu).unwrap();
        let g4 = NDArray::ones(&[4], DType::F32, Device::Cpu).unwrap();
        let e = invoke("GroupNorm", &[&x, &g4, &g4], &[("num_groups", 2.into())]).unwrap_err().to_string();
        assert!(e.contains("gamma") && e.contains("(4,)") && e.contains("(2,)"), "{e}");
        // too few axes, no groups
        let flat = NDArray::ones(&[2, 4], DType::F32, Device::Cpu).unwrap();
        let g1 = NDArray::ones(&[1], DType::F32, Device::Cpu).unwrap();
        let e = invoke("GroupNorm", &[&flat, &g1, &g1], &[]).unwrap_err().to_string();
        assert!(e.contains("at least 3 axes") && e.contains("(2, 4)"), "{e}");
        let e = invoke("GroupNorm", &[&x, &g1, &g1], &[("num_groups", 0.into())]).unwrap_err().to_string();
        assert!(e.contains("num_groups"), "{e}");
    }
}
