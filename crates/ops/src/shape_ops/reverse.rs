//! `reverse` (alias `flip`): the input with the order of its elements
//! reversed along the given axes, a negative-step view copied out once.
//! Its gradient is the incoming gradient reversed the same way.

use super::store_view;
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::normalize_axis;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, OpDef, Result, SliceSpec};

/// One slice spec per leading axis: a full reversal on the given axes.
fn specs(attrs: &Attrs, ndim: usize) -> Result<Vec<SliceSpec>> {
    let mut specs = vec![SliceSpec::all(); ndim];
    let mut last = 0;
    for &a in attrs.ints("axis")? {
        let ax = normalize_axis(a, ndim)
            .map_err(|_| Error::attr("axis", format!("reverse: axis {a} is out of range for rank {ndim}")))?;
        specs[ax] = SliceSpec { begin: None, end: None, step: Some(-1) };
        last = last.max(ax + 1);
    }
    specs.truncate(last);
    Ok(specs)
}

pub(super) fn register() {
    registry::register(
        OpDef::new("reverse")
            .alias("flip")
            .doc("Reverses the order of elements along the given axes; the shape is unchanged.")
            .attr(AttrSpec::required("axis", AttrKind::Ints, "The axes to reverse."))
            .infer_shape(|attrs, ins, outs| {
                if let Some(x) = ins[0].clone().or_else(|| outs[0].clone()) {
                    specs(attrs, x.len())?;
                }
                oxnet_core::op::same_shape(attrs, ins, outs)
            })
            .accepts_strided()
            .forward(|ctx, ins, outs| {
                let view = ins[0].slice(&specs(ctx.attrs, ins[0].ndim())?)?;
                store_view(ctx.req[0], &outs[0], &view)
            })
            .grad_rule(|g| {
                let axis = AttrValue::Ints(g.attrs.ints("axis")?.to_vec());
                Ok(vec![Some(call("reverse", &[&g.out_grads[0]], &[("axis", axis)])?)])
            }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, NDArray};

    #[test]
    fn reverses_the_given_axes() {
        let x = NDArray::from_vec((0..6).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
        let y = invoke1("reverse", &[&x], &[("axis", AttrValue::Ints(vec![1]))]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![2., 1., 0., 5., 4., 3.]);
        let y = invoke1("flip", &[&x], &[("axis", AttrValue::Ints(vec![0, -1]))]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![5., 4., 3., 2., 1., 0.]);
        assert!(invoke1("reverse", &[&x], &[]).unwrap_err().to_string().contains("axis"));
        assert!(invoke1("reverse", &[&x], &[("axis", AttrValue::Ints(vec![2]))]).is_err());
        let r = NDArray::from_vec(vec![0.5f64, -1.0, 2.0, 0.25, 3.0, -2.0], &[3, 2]).unwrap();
        OpChecker::new("reverse", &[r]).attr("axis", "(0,)").run().unwrap();
    }
}
