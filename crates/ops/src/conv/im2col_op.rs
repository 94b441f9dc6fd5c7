//! The operators `im2col` and `col2im` (MXNet's sliding-block extraction
//! and its adjoint), on the kernels Convolution uses.
//!
//! im2col turns (N, C, spatial...) into (N, C·taps, L): row (c, tap) of
//! image n holds, for each of the L window positions, the value that tap
//! reads (zero in the padding). col2im adds such columns back into images
//! of `output_size` (overlapping taps add up). Each is the other's
//! transpose, so each one's gradient is a call of the other.

use super::geometry::{spatial_attr, Geom3};
use super::im2col::{col2im_add, im2col};
use crate::shape_ops::{check_size, set_shape};
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, FloatElement, NDArray, OpDef, Req, Result,
};

/// The window of a call and the spatial extents `input` (image side).
fn geometry(op: &str, attrs: &Attrs, input: &[usize]) -> Result<Geom3> {
    let kernel: Vec<usize> = {
        let k = attrs.ints("kernel")?;
        if k.is_empty() || k.len() > 3 || k.iter().any(|v| *v < 1) {
            return Err(Error::attr(
                "kernel",
                format!("{op}: the kernel must have 1 to 3 positive entries, got {k:?}"),
            ));
        }
        k.iter().map(|v| *v as usize).collect()
    };
    let nd = kernel.len();
    let stride = spatial_attr(op, attrs, "stride", nd, 1, 1, false)?;
    let dilate = spatial_attr(op, attrs, "dilate", nd, 1, 1, false)?;
    let pad = spatial_attr(op, attrs, "pad", nd, 0, 0, false)?;
    if input.len() != nd {
        return Err(Error::Shape(format!(
            "{op}: the kernel {kernel:?} has {nd} axes, but the image has {} spatial axes ({input:?})",
            input.len()
        )));
    }
    let lead = 3 - nd;
    let mut g = Geom3 { inp: [1; 3], out: [1; 3], k: [1; 3], s: [1; 3], d: [1; 3], p: [0; 3] };
    for i in 0..nd {
        let span = dilate[i] * (kernel[i] - 1) + 1;
        let padded = input[i] + 2 * pad[i];
        if padded < span {
            return Err(Error::Shape(format!(
                "{op}: the dilated kernel ({span}) is larger than the padded input ({padded}) along spatial axis {i}"
            )));
        }
        g.inp[lead + i] = input[i];
        g.out[lead + i] = (padded - span) / stride[i] + 1;
        g.k[lead + i] = kernel[i];
        g.s[lead + i] = stride[i];
        g.d[lead + i] = dilate[i];
        g.p[lead + i] = pad[i] as isize;
    }
    Ok(g)
}

fn taps(g: &Geom3) -> usize {
    g.k.iter().product()
}

fn im2col_shape(x: &[usize], attrs: &Attrs) -> Result<(Shape, Geom3)> {
    if x.len() < 3 {
        return Err(Error::Shape(format!("im2col: the data must be (N, C, spatial...), got shape {x:?}")));
    }
    let g = geometry("im2col", attrs, &x[2..])?;
    let s = Shape::from_slice(&[x[0], x[1] * taps(&g), g.out_size()]);
    check_size(&s, "im2col")?;
    Ok((s, g))
}

fn col2im_shape(x: &[usize], attrs: &Attrs) -> Result<(Shape, Geom3)> {
    let size: Vec<usize> = attrs
        .ints("output_size")?
        .iter()
        .map(|d| {
            usize::try_from(*d)
                .map_err(|_| Error::attr("output_size", format!("col2im: extent {d} is negative")))
        })
        .collect::<Result<_>>()?;
    let g = geometry("col2im", attrs, &size)?;
    if x.len() != 3 || x[1] % taps(&g) != 0 || x[2] != g.out_size() {
        return Err(Error::Shape(format!(
            "col2im: the data must be (N, C·{} kernel taps, {} positions), got shape {x:?}",
            taps(&g),
            g.out_size()
        )));
    }
    let s: Shape = [x[0], x[1] / taps(&g)].into_iter().chain(size).collect();
    check_size(&s, "col2im")?;
    Ok((s, g))
}

fn run_im2col<T: FloatElement>(x: &NDArray, out: &NDArray, g: &Geom3) -> Result<()> {
    let n = x.shape()[0];
    let c = x.shape()[1];
    let (xs, os) = (x.as_slice::<T>()?, out.as_mut_slice::<T>()?);
    let (xi, oi) = (xs.len() / n.max(1), os.len() / n.max(1));
    for i in 0..n {
        im2col(&xs[i * xi..(i + 1) * xi], c, g, &mut os[i * oi..(i + 1) * oi]);
    }
    Ok(())
}

fn run_col2im<T: FloatElement>(col: &NDArray, out: &NDArray, g: &Geom3) -> Result<()> {
    let n = out.shape()[0];
    let c = out.shape()[1];
    let (cs, os) = (col.as_slice::<T>()?, out.as_mut_slice::<T>()?);
    let (ci, oi) = (cs.len() / n.max(1), os.len() / n.max(1));
    let mut acc = vec![<T::Compute as num_traits::Zero>::zero(); oi];
    for i in 0..n {
        for (a, o) in acc.iter_mut().zip(&os[i * oi..(i + 1) * oi]) {
            *a = o.to_compute();
        }
        col2im_add(&cs[i * ci..(i + 1) * ci], c, g, &mut acc);
        for (o, a) in os[i * oi..(i + 1) * oi].iter_mut().zip(&acc) {
            *o = T::from_compute(*a);
        }
    }
    Ok(())
}

fn window_attrs(op: OpDef) -> OpDef {
    op.attr(AttrSpec::required("kernel", AttrKind::Ints, "Sliding kernel size: (w,), (h, w) or (d, h, w)."))
        .attr(AttrSpec::optional("stride", AttrKind::Ints, AttrValue::Ints(vec![]), "The stride between adjacent sliding blocks in spatial dimension: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."))
        .attr(AttrSpec::optional("dilate", AttrKind::Ints, AttrValue::Ints(vec![]), "The spacing between adjacent kernel points: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."))
        .attr(AttrSpec::optional("pad", AttrKind::Ints, AttrValue::Ints(vec![]), "The zero-value padding size on both sides of spatial dimension: (w,), (h, w) or (d, h, w). Defaults to no padding."))
}

/// The window attributes of a call, to pass on to the other operator.
fn pass_on(attrs: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    ["kernel", "stride", "dilate", "pad"]
        .into_iter()
        .map(|n| Ok((n, AttrValue::Ints(attrs.ints(n)?.to_vec()))))
        .collect()
}

pub(super) fn register() {
    registry::register(
        window_attrs(OpDef::new("im2col"))
            .doc("Extracts sliding blocks from (N, C, spatial...) images into columns (N, C·prod(kernel), L): one row per (channel, kernel tap), one column per window position.")
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], im2col_shape(x, attrs)?.0, "the output of im2col")
            })
            .forward(|ctx, ins, outs| {
                let (x, out) = (&ins[0], &outs[0]);
                let (_, g) = im2col_shape(x.shape(), ctx.attrs)?;
                match ctx.req[0] {
                    Req::Null => Ok(()),
                    Req::Add => {
                        let tmp = NDArray::zeros(out.shape(), out.dtype(), out.device())?;
                        oxnet_core::with_float_dtype!(x.dtype(), T => run_im2col::<T>(x, &tmp, &g)?);
                        oxnet_core::store::store(Req::Add, out, &tmp)
                    }
                    _ => {
                        oxnet_core::with_float_dtype!(x.dtype(), T => run_im2col::<T>(x, out, &g)?);
                        Ok(())
                    }
                }
            })
            .grad_rule(|g| {
                let x = &g.inputs[0];
                let mut attrs = pass_on(g.attrs)?;
                attrs.push(("output_size", crate::shape_ops::ints_attr(&x.shape()[2..])));
                Ok(vec![Some(crate::util::call("col2im", &[&g.out_grads[0]], &attrs)?)])
            }),
    );

    registry::register(
        window_attrs(OpDef::new("col2im").attr(AttrSpec::required("output_size", AttrKind::Ints, "The spatial dimension of image array: (w,), (h, w) or (d, h, w).")))
            .doc("Combines columns (N, C·prod(kernel), L) of sliding blocks into images (N, C, output_size...), adding up overlapping values: the transpose of im2col.")
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], col2im_shape(x, attrs)?.0, "the output of col2im")
            })
            .forward(|ctx, ins, outs| {
                let (col, out) = (&ins[0], &outs[0]);
                let (_, g) = col2im_shape(col.shape(), ctx.attrs)?;
                match ctx.req[0] {
                    Req::Null => return Ok(()),
                    Req::Add => {}
                    _ => out.fill(0.0)?,
                }
                oxnet_core::with_float_dtype!(col.dtype(), T => run_col2im::<T>(col, out, &g)?);
                Ok(())
            })
            .grad_rule(|g| Ok(vec![Some(crate::util::call("im2col", &[&g.out_grads[0]], &pass_on(g.attrs)?)?)])),
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::invoke1;

    #[test]
    fn columns_by_hand() {
        // one 3x3 image, 2x2 kernel, stride 1: 4 positions
        let x = iota(&[1, 1, 3, 3]);
        let c = invoke1("im2col", &[&x], &[("kernel", "(2, 2)".into())]).unwrap();
        assert_eq!(c.shape(), &[1, 4, 4]);
        assert_eq!(vals(&c), vec![0., 1., 3., 4., 1., 2., 4., 5., 3., 4., 6., 7., 4., 5., 7., 8.]);
        // padding 1, stride 2 on a 1-D signal of 3: positions -1, 1 read (0, x0), (x1, x2)
        let x = iota(&[1, 1, 3]);
        let c = invoke1(
            "im2col",
            &[&x],
            &[("kernel", "(2,)".into()), ("stride", "(2,)".into()), ("pad", "(1,)".into())],
        )
        .unwrap();
        assert_eq!(vals(&c), vec![0., 1., 0., 2.]);
        // col2im of ones counts how many windows cover each pixel
        let ones = invoke1(
            "ones_like",
            &[&invoke1("im2col", &[&iota(&[1, 1, 3, 3])], &[("kernel", "(2, 2)".into())]).unwrap()],
            &[],
        )
        .unwrap();
        let im =
            invoke1("col2im", &[&ones], &[("kernel", "(2, 2)".into()), ("output_size", "(3, 3)".into())])
                .unwrap();
        assert_eq!(vals(&im), vec![1., 2., 1., 2., 4., 2., 1., 2., 1.]);
        let e = err_msg(invoke1("im2col", &[&iota(&[1, 1, 2, 2])], &[("kernel", "(3, 3)".into())]));
        assert!(e.contains("im2col") && e.contains("larger"), "{e}");
        let e = err_msg(invoke1(
            "col2im",
            &[&ones],
            &[("kernel", "(2, 2)".into()), ("output_size", "(4, 3)".into())],
        ));
        assert!(e.contains("col2im") && e.contains("positions"), "{e}");
    }

    #[test]
    fn gradients() {
        OpChecker::new("im2col", &[sample(&[2, 2, 4, 3])])
            .attr("kernel", "(2, 2)")
            .attr("stride", "(2, 1)")
            .attr("pad", "(1, 0)")
            .attr("dilate", "(1, 2)")
            .run()
            .unwrap();
        OpChecker::new("col2im", &[sample(&[1, 8, 6])])
            .attr("kernel", "(2, 2)")
            .attr("output_size", "(3, 4)")
            .run()
            .unwrap();
        check_second_order("im2col", &[sample(&[1, 2, 3, 3])], &[("kernel", "(2, 2)".into())]);
    }
}
