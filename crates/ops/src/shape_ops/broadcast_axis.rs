//! `broadcast_axis` (aliases `broadcast_axes`): repeats the input along
//! axes of length 1 up to the given sizes. The gradient sums the incoming
//! one back over those axes.

use super::{set_shape, store_view};
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, OpDef, Result};

/// The broadcast shape of an input of shape `x`, and the normalised axes.
fn target(attrs: &Attrs, x: &[usize]) -> Result<(Shape, Vec<i64>)> {
    let (axes, sizes) = (attrs.ints("axis")?, attrs.ints("size")?);
    if axes.len() != sizes.len() {
        return Err(Error::attr(
            "size",
            format!("broadcast_axis: {} sizes for {} axes; give one size per axis", sizes.len(), axes.len()),
        ));
    }
    let mut out = Shape::from_slice(x);
    let mut norm = Vec::with_capacity(axes.len());
    for (&a, &n) in axes.iter().zip(sizes) {
        let ax = normalize_axis(a, x.len()).map_err(|_| {
            Error::attr("axis", format!("broadcast_axis: axis {a} is out of range for rank {}", x.len()))
        })?;
        if x[ax] != 1 {
            return Err(Error::Shape(format!(
                "broadcast_axis: axis {a} has length {}; only axes of length 1 can be broadcast",
                x[ax]
            )));
        }
        if n < 0 {
            return Err(Error::attr("size", format!("broadcast_axis: size {n} is negative")));
        }
        out[ax] = n as usize;
        norm.push(ax as i64);
    }
    Ok((out, norm))
}

pub(super) fn register() {
    registry::register(
        OpDef::new("broadcast_axis")
            .alias("broadcast_axes")
            .doc("Broadcasts the input along axes of length 1 to the given sizes.")
            .attr(AttrSpec::optional("axis", AttrKind::Ints, Vec::<i64>::new(), "The axes to broadcast."))
            .attr(AttrSpec::optional("size", AttrKind::Ints, Vec::<i64>::new(), "Their target sizes."))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], target(attrs, x)?.0, "the output of broadcast_axis")
            })
            .accepts_strided()
            .forward(|ctx, ins, outs| {
                let (shape, _) = target(ctx.attrs, ins[0].shape())?;
                store_view(ctx.req[0], &outs[0], &ins[0].broadcast_to(&shape)?)
            })
            .grad_rule(|g| {
                let (_, axes) = target(g.attrs, g.inputs[0].shape())?;
                if axes.is_empty() {
                    return Ok(vec![Some(g.out_grads[0].clone())]);
                }
                let dx = call(
                    "sum",
                    &[&g.out_grads[0]],
                    &[("axis", AttrValue::Ints(axes)), ("keepdims", AttrValue::Bool(true))],
                )?;
                Ok(vec![Some(dx)])
            }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, NDArray};

    #[test]
    fn broadcasts_axes_of_length_one() {
        let x = NDArray::from_vec(vec![1.0f32, 2.], &[2, 1]).unwrap();
        let attrs = [("axis", AttrValue::Ints(vec![1])), ("size", AttrValue::Ints(vec![3]))];
        let y = invoke1("broadcast_axis", &[&x], &attrs).unwrap();
        assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[2usize, 3][..], vec![1., 1., 1., 2., 2., 2.]));
        let z = NDArray::from_vec(vec![1.0f32, 2.], &[1, 2, 1]).unwrap();
        let y = invoke1(
            "broadcast_axes",
            &[&z],
            &[("axis", AttrValue::Ints(vec![0, 2])), ("size", AttrValue::Ints(vec![2, 3]))],
        )
        .unwrap();
        assert_eq!(y.shape(), &[2, 2, 3]);
        let wide = NDArray::from_vec(vec![1.0f32; 4], &[2, 2]).unwrap();
        let e = invoke1("broadcast_axis", &[&wide], &attrs).unwrap_err().to_string();
        assert!(e.contains("length 1"), "{e}");
        let r = NDArray::from_vec(vec![0.5f64, -1.0, 2.0], &[3, 1]).unwrap();
        OpChecker::new("broadcast_axis", &[r]).attr("axis", "(1,)").attr("size", "(4,)").run().unwrap();
    }
}
