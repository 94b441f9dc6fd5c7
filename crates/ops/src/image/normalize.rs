//! `_image_normalize` (`mx.nd.image.normalize`): per-channel
//! `(data - mean[c]) / std[c]` of a (C, H, W) image or an (N, C, H, W)
//! batch, C being 1 or 3, as MXNet 1.9.1 defines it.

use crate::util::parse_floats;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Result, Shape};

const OP: &str = "_image_normalize";

/// `(channel axis, channels)` of an image or batch shape.
fn channels(shape: &[usize]) -> Result<(usize, usize)> {
    let axis = match shape.len() {
        3 => 0,
        4 => 1,
        _ => {
            return Err(Error::Shape(format!(
                "{OP}: data must be (channels, height, width) or (N, channels, height, width), got {shape:?}"
            )))
        }
    };
    match shape[axis] {
        c @ (1 | 3) => Ok((axis, c)),
        c => Err(Error::Shape(format!(
            "{OP}: the channel axis of data {shape:?} must have 1 or 3 entries, got {c}"
        ))),
    }
}

/// `mean` and `std` per channel: each attribute holds 1 entry (for every
/// channel) or one per channel.
fn per_channel(attrs: &Attrs, c: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let expand = |name: &str| -> Result<Vec<f64>> {
        let v = parse_floats(name, attrs.str(name)?)?;
        match v.len() {
            1 => Ok(vec![v[0]; c]),
            n if n == c => Ok(v),
            n => Err(Error::attr(
                name,
                format!("has {n} entries; it needs 1 or as many as the data's {c} channels"),
            )),
        }
    };
    let (mean, std) = (expand("mean")?, expand("std")?);
    if let Some(s) = std.iter().find(|s| **s == 0.0) {
        return Err(Error::attr("std", format!("entries must not be {s}")));
    }
    Ok((mean, std))
}

/// `(x - mean[c]) / std[c]` along the channel axis of `x`.
fn normalize(x: &NDArray, mean: &[f64], std: &[f64]) -> Result<NDArray> {
    let (axis, c) = channels(x.shape())?;
    let mut bshape = Shape::from_elem(1, x.ndim());
    bshape[axis] = c;
    let m = NDArray::from_vec(mean.to_vec(), &bshape)?.astype(x.dtype())?.to_device(x.device())?;
    let inv: Vec<f64> = std.iter().map(|s| 1.0 / s).collect();
    let s = NDArray::from_vec(inv, &bshape)?.astype(x.dtype())?.to_device(x.device())?;
    let centred = crate::util::call("broadcast_sub", &[x, &m], &[])?;
    crate::util::call("broadcast_mul", &[&centred, &s], &[])
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Normalizes an image (C, H, W) or a batch (N, C, H, W) of float images, C being 1 or 3: \
                 output[c] = (data[c] - mean[c]) / std[c]. `mean` and `std` hold one value for every \
                 channel or one per channel.",
            )
            .attr(AttrSpec::optional(
                "mean",
                AttrKind::Str,
                AttrValue::Str("(0.0, 0.0, 0.0, 0.0)".into()),
                "Mean per channel (or one for all).",
            ))
            .attr(AttrSpec::optional(
                "std",
                AttrKind::Str,
                AttrValue::Str("(1.0, 1.0, 1.0, 1.0)".into()),
                "Standard deviation per channel (or one for all).",
            ))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                per_channel(attrs, channels(x)?.1)?;
                crate::shape_ops::set_shape(&mut outs[0], x.clone(), "the output")
            })
            .forward(|ctx, ins, outs| {
                let x = &ins[0];
                if !x.dtype().is_float() {
                    return Err(Error::DType(format!("{OP}: data must be a float array, got {}", x.dtype())));
                }
                let (mean, std) = per_channel(ctx.attrs, channels(x.shape())?.1)?;
                store(ctx.req[0], &outs[0], &normalize(x, &mean, &std)?)
            })
            .grad_rule(|g| {
                // linear: the gradient is the output gradient divided by std
                let (_, std) = per_channel(g.attrs, channels(g.inputs[0].shape())?.1)?;
                let zeros = vec![0.0; std.len()];
                Ok(vec![Some(normalize(&g.out_grads[0], &zeros, &std)?)])
            }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    fn attrs(mean: &str, std: &str) -> Vec<(&'static str, AttrValue)> {
        vec![("mean", mean.into()), ("std", std.into())]
    }

    #[test]
    fn normalizes_each_channel_of_images_and_batches() {
        let x = NDArray::from_vec((0..12).map(f64::from).collect(), &[3, 2, 2]).unwrap();
        let y = invoke1("_image_normalize", &[&x], &attrs("(0, 1, 2)", "(3, 2, 1)")).unwrap();
        let want: Vec<f64> = (0..12)
            .map(|i| (f64::from(i) - [0.0, 1.0, 2.0][i as usize / 4]) / [3.0, 2.0, 1.0][i as usize / 4])
            .collect();
        assert_eq!(y.to_vec::<f64>().unwrap(), want);
        let b = NDArray::from_vec((0..8).map(f64::from).collect(), &[2, 1, 2, 2])
            .unwrap()
            .astype(DType::F32)
            .unwrap();
        let y = invoke1("_image_normalize", &[&b], &attrs("(1.0,)", "(2.0,)")).unwrap();
        assert_eq!(y.dtype(), DType::F32);
        assert_eq!(y.to_vec::<f32>().unwrap(), (0..8).map(|i| (i as f32 - 1.0) / 2.0).collect::<Vec<_>>());
    }

    #[test]
    fn gradient_is_the_output_gradient_over_std() {
        let x = NDArray::from_vec((0..24).map(|i| f64::from(i) * 0.1).collect(), &[2, 3, 2, 2]).unwrap();
        OpChecker::new("_image_normalize", &[x])
            .attr("mean", "(0.5, 1, 2)")
            .attr("std", "(3, 2, 0.5)")
            .run()
            .unwrap();
    }

    #[test]
    fn bad_shapes_and_attributes_are_errors() {
        let x = NDArray::zeros(&[3, 2, 2], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let err = |a: &[(&str, AttrValue)], x: &NDArray| {
            invoke1("_image_normalize", &[x], a).unwrap_err().to_string()
        };
        // MXNet's defaults have 4 entries, which fit no 3-channel image
        assert!(err(&[], &x).contains("mean"), "{}", err(&[], &x));
        assert!(err(&attrs("(1, 2)", "(1,)"), &x).contains("1 or as many"));
        assert!(err(&attrs("(1,)", "(0,)"), &x).contains("std"));
        let e = err(
            &attrs("(1,)", "(1,)"),
            &NDArray::zeros(&[4, 2, 2], DType::F32, oxnet_core::Device::Cpu).unwrap(),
        );
        assert!(e.contains("_image_normalize") && e.contains("1 or 3"), "{e}");
        let e = err(
            &attrs("(1,)", "(1,)"),
            &NDArray::zeros(&[2, 2], DType::F32, oxnet_core::Device::Cpu).unwrap(),
        );
        assert!(e.contains("(channels, height, width)"), "{e}");
        let e = err(
            &attrs("(1,)", "(1,)"),
            &NDArray::zeros(&[3, 2, 2], DType::U8, oxnet_core::Device::Cpu).unwrap(),
        );
        assert!(e.contains("float"), "{e}");
    }
}
