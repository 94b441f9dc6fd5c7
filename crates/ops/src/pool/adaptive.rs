//! `_contrib_AdaptiveAvgPooling2D` and its gradient helper
//! `_backward_contrib_AdaptiveAvgPooling2D`.
//!
//! Output cell (oh, ow) of an (H, W) plane averages the input window
//! rows [⌊oh·H/OH⌋, ⌈(oh+1)·H/OH⌉) × columns [⌊ow·W/OW⌋, ⌈(ow+1)·W/OW⌉).
//! The pooling is linear; the helper is its transpose (each output
//! gradient spread evenly over its window), and each one's gradient is the
//! other, so higher orders work.

use crate::shape_ops::{check_size, ints_attr, set_shape};
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, Attrs, Error, FloatElement, OpDef, Req, Result};

const OP: &str = "AdaptiveAvgPooling2D";
const BACKWARD: &str = "_backward_contrib_AdaptiveAvgPooling2D";

/// (OH, OW) from `output_size`: () is 1×1, (s,) is s×s.
fn out_hw(attrs: &Attrs) -> Result<(usize, usize)> {
    let s = attrs.ints("output_size")?;
    let (h, w) = match s {
        [] => (1, 1),
        [a] => (*a, *a),
        [a, b] => (*a, *b),
        _ => {
            return Err(Error::attr(
                "output_size",
                format!("{OP}: expected an int or (height, width), got {s:?}"),
            ))
        }
    };
    if h <= 0 || w <= 0 {
        return Err(Error::attr("output_size", format!("{OP}: extents must be positive, got {s:?}")));
    }
    Ok((h as usize, w as usize))
}

fn check_input(x: &[usize]) -> Result<()> {
    if x.len() != 4 {
        return Err(Error::Shape(format!("{OP}: the data must be 4-D (N, C, H, W), got shape {x:?}")));
    }
    Ok(())
}

fn window(o: usize, n_in: usize, n_out: usize) -> (usize, usize) {
    ((o * n_in) / n_out, ((o + 1) * n_in).div_ceil(n_out))
}

/// Pools planes of (h, w) into (oh, ow), or (transpose) spreads them back.
fn run<T: FloatElement>(
    src: &[T],
    dst: &mut [T],
    planes: usize,
    (h, w): (usize, usize),
    (oh, ow): (usize, usize),
    transpose: bool,
) {
    for p in 0..planes {
        let (xin, xout) = (p * h * w, p * oh * ow);
        for i in 0..oh {
            let (h0, h1) = window(i, h, oh);
            for j in 0..ow {
                let (w0, w1) = window(j, w, ow);
                let inv = 1.0 / ((h1 - h0) * (w1 - w0)) as f64;
                if transpose {
                    let g = src[xout + i * ow + j].to_f64() * inv;
                    for r in h0..h1 {
                        for c in w0..w1 {
                            let d = &mut dst[xin + r * w + c];
                            *d = T::from_f64(d.to_f64() + g);
                        }
                    }
                } else {
                    let mut s = 0.0f64;
                    for r in h0..h1 {
                        for c in w0..w1 {
                            s += src[xin + r * w + c].to_f64();
                        }
                    }
                    dst[xout + i * ow + j] = T::from_f64(s * inv);
                }
            }
        }
    }
}

fn output_size_attr() -> AttrSpec {
    AttrSpec::optional(
        "output_size",
        AttrKind::Ints,
        oxnet_core::AttrValue::Ints(vec![]),
        "int (output size) or a tuple of int for output (height, width).",
    )
}

fn size_attrs(attrs: &Attrs) -> Result<oxnet_core::AttrValue> {
    Ok(oxnet_core::AttrValue::Ints(attrs.ints("output_size")?.to_vec()))
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_contrib_AdaptiveAvgPooling2D")
            .doc("Adaptive average pooling of NCHW data to `output_size` (an int for a square output, or (height, width)): each output cell averages the input window [floor(i·H/OH), ceil((i+1)·H/OH)) × [floor(j·W/OW), ceil((j+1)·W/OW)).")
            .attr(output_size_attr())
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                check_input(x)?;
                let (oh, ow) = out_hw(attrs)?;
                let s = Shape::from_slice(&[x[0], x[1], oh, ow]);
                check_size(&s, OP)?;
                set_shape(&mut outs[0], s, "the output of AdaptiveAvgPooling2D")
            })
            .forward(|ctx, ins, outs| {
                let (x, out) = (&ins[0], &outs[0]);
                let s = x.shape();
                let (oh, ow) = out_hw(ctx.attrs)?;
                match ctx.req[0] {
                    Req::Null => Ok(()),
                    Req::Add => {
                        let tmp = oxnet_core::NDArray::zeros(out.shape(), out.dtype(), out.device())?;
                        oxnet_core::with_float_dtype!(x.dtype(), T => run(x.as_slice::<T>()?, tmp.as_mut_slice::<T>()?, s[0] * s[1], (s[2], s[3]), (oh, ow), false));
                        oxnet_core::store::store(Req::Add, out, &tmp)
                    }
                    _ => {
                        oxnet_core::with_float_dtype!(x.dtype(), T => run(x.as_slice::<T>()?, out.as_mut_slice::<T>()?, s[0] * s[1], (s[2], s[3]), (oh, ow), false));
                        Ok(())
                    }
                }
            })
            .grad_rule(|g| {
                let x = &g.inputs[0];
                let d = crate::util::call(
                    BACKWARD,
                    &[&g.out_grads[0]],
                    &[("output_size", size_attrs(g.attrs)?), ("shape", ints_attr(x.shape()))],
                )?;
                Ok(vec![Some(d)])
            }),
    );

    registry::register(
        OpDef::new(BACKWARD)
            .doc("Gradient helper of AdaptiveAvgPooling2D: each output-gradient cell spread evenly over its input window, into zeros of `shape`.")
            .attr(output_size_attr())
            .attr(AttrSpec::required("shape", AttrKind::Ints, "the shape of the pooling's data"))
            .infer_shape(|attrs, ins, outs| {
                let shape: Shape = attrs
                    .ints("shape")?
                    .iter()
                    .map(|d| usize::try_from(*d).map_err(|_| Error::attr("shape", format!("{BACKWARD}: extent {d} is negative"))))
                    .collect::<Result<_>>()?;
                check_input(&shape)?;
                check_size(&shape, BACKWARD)?;
                let (oh, ow) = out_hw(attrs)?;
                set_shape(&mut ins[0], Shape::from_slice(&[shape[0], shape[1], oh, ow]), "the output gradient of AdaptiveAvgPooling2D")?;
                set_shape(&mut outs[0], shape, "the output of the AdaptiveAvgPooling2D gradient")
            })
            .forward(|ctx, ins, outs| {
                let (g, out) = (&ins[0], &outs[0]);
                let s = out.shape();
                let (oh, ow) = out_hw(ctx.attrs)?;
                match ctx.req[0] {
                    Req::Null => return Ok(()),
                    Req::Add => {}
                    _ => out.fill(0.0)?,
                }
                oxnet_core::with_float_dtype!(g.dtype(), T => run(g.as_slice::<T>()?, out.as_mut_slice::<T>()?, s[0] * s[1], (s[2], s[3]), (oh, ow), true));
                Ok(())
            })
            .grad_rule(|g| {
                let d = crate::util::call(
                    "_contrib_AdaptiveAvgPooling2D",
                    &[&g.out_grads[0]],
                    &[("output_size", size_attrs(g.attrs)?)],
                )?;
                Ok(vec![Some(d)])
            }),
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::invoke1;

    #[test]
    fn overlapping_windows() {
        // a 3-wide row pooled to 2: windows [0, 2) and [1, 3)
        let x = iota(&[1, 1, 1, 3]);
        let y = invoke1("_contrib_AdaptiveAvgPooling2D", &[&x], &[("output_size", "(1, 2)".into())]).unwrap();
        assert_eq!(vals(&y), vec![0.5, 1.5]);
        let x = iota(&[1, 2, 2, 2]);
        let y = invoke1("_contrib_AdaptiveAvgPooling2D", &[&x], &[]).unwrap();
        assert_eq!((y.shape(), vals(&y)), (&[1usize, 2, 1, 1][..], vec![1.5, 5.5]));
        let y = invoke1("_contrib_AdaptiveAvgPooling2D", &[&x], &[("output_size", "3".into())]).unwrap();
        assert_eq!(y.shape(), &[1, 2, 3, 3]);
        assert_eq!(vals(&y)[..3], [0., 0.5, 1.]);
        let e = err_msg(invoke1("_contrib_AdaptiveAvgPooling2D", &[&x], &[("output_size", "(0, 2)".into())]));
        assert!(e.contains("output_size") && e.contains("positive"), "{e}");
    }

    #[test]
    fn gradients() {
        OpChecker::new("_contrib_AdaptiveAvgPooling2D", &[sample(&[1, 2, 3, 5])])
            .attr("output_size", "(2, 3)")
            .run()
            .unwrap();
        check_second_order(
            "_contrib_AdaptiveAvgPooling2D",
            &[sample(&[2, 1, 4, 3])],
            &[("output_size", "(3, 2)".into())],
        );
    }
}
