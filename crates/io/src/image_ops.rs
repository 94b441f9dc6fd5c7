//! `_image_resize` (`mx.nd.image.resize`, used by
//! `gluon.data.vision.transforms.Resize`): an image (H, W, C) or a batch
//! (N, H, W, C), uint8, float32 or float64 (computed in float32), resized with OpenCV's rules
//! ([`crate::resize`]), as MXNet 1.9.1 defines the operator: `size` (w, h),
//! or one number for both sides, or with `keep_ratio` for the shorter side.

use crate::resize::{resize_pixels, Interp, Sample};
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, Attrs, DType, Error, NDArray, OpDef, Result, Shape};

const OP: &str = "_image_resize";

/// (height, width, channels) of one image of `shape`, and whether it is a batch.
fn layout(shape: &[usize]) -> Result<((usize, usize, usize), bool)> {
    match *shape {
        [h, w, c] => Ok(((h, w, c), false)),
        [_, h, w, c] => Ok(((h, w, c), true)),
        _ => Err(Error::Shape(format!(
            "{OP}: data must be (height, width, channels) or (N, height, width, channels), got {shape:?}"
        ))),
    }
}

/// The output (height, width) for an input of `h × w`.
fn new_size(attrs: &Attrs, h: usize, w: usize) -> Result<(usize, usize)> {
    let size = attrs.ints("size")?;
    let positive = |v: i64| {
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| Error::attr("size", format!("must be positive, got {v}")))
    };
    match size {
        [s] => {
            let s = positive(*s)?;
            if !attrs.bool("keep_ratio")? {
                Ok((s, s))
            } else if h > w {
                Ok((h * s / w, s))
            } else {
                Ok((s, w * s / h))
            }
        }
        [sw, sh] => Ok((positive(*sh)?, positive(*sw)?)),
        other => Err(Error::attr("size", format!("needs 1 or 2 values (width, height), got {other:?}"))),
    }
}

fn out_shape(attrs: &Attrs, x: &[usize]) -> Result<Shape> {
    let ((h, w, c), batch) = layout(x)?;
    let (nh, nw) = new_size(attrs, h, w)?;
    let mut s: Shape = [nh, nw, c].into_iter().collect();
    if batch {
        s.insert(0, x[0]);
    }
    Ok(s)
}

fn resize_all<T: Sample + oxnet_core::Element>(x: &NDArray, attrs: &Attrs) -> Result<NDArray> {
    let ((h, w, c), batch) = layout(x.shape())?;
    let (nh, nw) = new_size(attrs, h, w)?;
    let interp = Interp::from_code(attrs.int("interp")?, (h, w), (nh, nw))?;
    let data = x.to_vec::<T>()?;
    let images = if batch { x.shape()[0] } else { 1 };
    let mut out = Vec::with_capacity(images * nh * nw * c);
    for img in data.chunks(h * w * c.max(1)).take(images) {
        out.extend(resize_pixels(img, (h, w, c), (nh, nw), interp)?);
    }
    NDArray::from_vec(out, &out_shape(attrs, x.shape())?)
}

fn register() {
    registry::register(
        OpDef::new(OP)
            .alias("_npx__image_resize")
            .doc("Resizes an image (H, W, C) or a batch (N, H, W, C), uint8, float32 or float64, with OpenCV's interpolation `interp` to `size` (width, height), or to `size` × `size`, or with `keep_ratio` so that the shorter side is `size`.")
            .attr(AttrSpec::optional("size", AttrKind::Ints, Vec::<i64>::new(), "the output (width, height), or one size for both"))
            .attr(AttrSpec::optional("keep_ratio", AttrKind::Bool, false, "with one size: resize the shorter side to it, keeping the aspect ratio"))
            .attr(AttrSpec::optional("interp", AttrKind::Int, 1i64, "OpenCV's interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto"))
            .infer_shape(|attrs, ins, outs| {
                if let Some(x) = &ins[0] {
                    outs[0] = Some(out_shape(attrs, x)?);
                }
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let x = &ins[0];
                let y = match x.dtype() {
                    DType::U8 => resize_all::<u8>(x, ctx.attrs)?,
                    DType::F32 => resize_all::<f32>(x, ctx.attrs)?,
                    // computed in float32 (OpenCV computes float64 images in double)
                    DType::F64 => resize_all::<f32>(&x.astype(DType::F32)?, ctx.attrs)?.astype(DType::F64)?,
                    other => {
                        return Err(Error::DType(format!("{OP}: data must be uint8, float32 or float64, got {other}")))
                    }
                };
                store(ctx.req[0], &outs[0], &y)
            }),
    );
}

oxnet_core::register_operators!(register);

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    #[test]
    fn sizes_follow_mxnets_rules() {
        let x = NDArray::zeros(&[4, 6, 3], DType::U8, Default::default()).unwrap();
        let shape = |a: &[(&str, AttrValue)]| invoke1("_image_resize", &[&x], a).unwrap().shape().to_vec();
        assert_eq!(shape(&[("size", AttrValue::Ints(vec![5, 2]))]), vec![2, 5, 3]);
        assert_eq!(shape(&[("size", AttrValue::Ints(vec![3]))]), vec![3, 3, 3]);
        assert_eq!(shape(&[("size", AttrValue::Ints(vec![2])), ("keep_ratio", true.into())]), vec![2, 3, 3]);
        let b = NDArray::ones(&[2, 4, 6, 1], DType::F32, Default::default()).unwrap();
        let y = invoke1(
            "_image_resize",
            &[&b],
            &[("size", AttrValue::Ints(vec![3, 3])), ("interp", 2i64.into())],
        )
        .unwrap();
        assert_eq!(y.shape(), &[2, 3, 3, 1]);
        assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| (v - 1.0).abs() < 1e-6));
        let e =
            invoke1("_image_resize", &[&x], &[("size", AttrValue::Ints(vec![0]))]).unwrap_err().to_string();
        assert!(e.contains("size") && e.contains("positive"), "{e}");
    }
}
