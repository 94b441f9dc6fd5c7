//! `slice_like`: the leading part of `data` with the extents of
//! `shape_like` on the given axes (all axes by default). The gradient of
//! `data` is the incoming one placed back into zeros; `shape_like` gets
//! none (zero).

use super::slice::format_opt_tuple;
use super::{ints_attr, set_shape, store_view};
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Error, OpDef, Result, SliceSpec};

/// The end index per leading axis (`None`: whole axis).
fn ends(attrs: &Attrs, data: &[usize], like: &[usize]) -> Result<Vec<Option<i64>>> {
    let axes: Vec<usize> = match attrs.ints("axes")? {
        [] => {
            if data.len() != like.len() {
                return Err(Error::Shape(format!(
                    "slice_like: data has rank {} and shape_like rank {}; without `axes` they must agree",
                    data.len(),
                    like.len()
                )));
            }
            (0..data.len()).collect()
        }
        given => given
            .iter()
            .map(|&a| {
                let ax = normalize_axis(a, data.len()).map_err(|_| {
                    Error::attr("axes", format!("slice_like: axis {a} is out of range for data's rank"))
                })?;
                if ax >= like.len() {
                    return Err(Error::attr(
                        "axes",
                        format!("slice_like: axis {a} is out of range for shape_like's rank"),
                    ));
                }
                Ok(ax)
            })
            .collect::<Result<_>>()?,
    };
    let mut ends = vec![None; axes.iter().map(|a| a + 1).max().unwrap_or(0)];
    for ax in axes {
        if like[ax] > data[ax] {
            return Err(Error::Shape(format!(
                "slice_like: axis {ax} of shape_like has length {}, more than data's {}",
                like[ax], data[ax]
            )));
        }
        ends[ax] = Some(like[ax] as i64);
    }
    Ok(ends)
}

/// The output shape.
fn out_shape(data: &[usize], ends: &[Option<i64>]) -> Shape {
    let mut s = Shape::from_slice(data);
    for (ax, e) in ends.iter().enumerate() {
        if let Some(e) = e {
            s[ax] = *e as usize;
        }
    }
    s
}

pub(super) fn register() {
    registry::register(
        OpDef::new("slice_like")
            .doc(
                "Slices `data` to the extents of `shape_like` along `axes` (every axis when \
                 empty; negative axes count from the end), starting at index 0.",
            )
            .arguments(&["data", "shape_like"])
            .attr(AttrSpec::optional(
                "axes",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "The axes to slice (empty: all).",
            ))
            .infer_shape(|attrs, ins, outs| {
                let (Some(d), Some(l)) = (&ins[0], &ins[1]) else { return Ok(()) };
                let s = out_shape(d, &ends(attrs, d, l)?);
                set_shape(&mut outs[0], s, "the output of slice_like")
            })
            .infer_type(|_, ins, outs| {
                outs[0] = ins[0].or(outs[0]);
                Ok(())
            })
            .accepts_strided()
            .forward(|ctx, ins, outs| {
                let e = ends(ctx.attrs, ins[0].shape(), ins[1].shape())?;
                let specs: Vec<SliceSpec> =
                    e.iter().map(|end| SliceSpec { begin: None, end: *end, step: None }).collect();
                store_view(ctx.req[0], &outs[0], &ins[0].slice(&specs)?)
            })
            .grad_rule(|g| {
                let (data, like) = (&g.inputs[0], &g.inputs[1]);
                let e = ends(g.attrs, data.shape(), like.shape())?;
                let dd = if g.needs_grad[0] {
                    Some(call(
                        "_backward_slice",
                        &[&g.out_grads[0]],
                        &[
                            ("begin", AttrValue::Str(format_opt_tuple(&vec![None; e.len()]))),
                            ("end", AttrValue::Str(format_opt_tuple(&e))),
                            ("shape", ints_attr(data.shape())),
                        ],
                    )?)
                } else {
                    None
                };
                let dl = if g.needs_grad[1] { Some(call("zeros_like", &[like], &[])?) } else { None };
                Ok(vec![dd, dl])
            }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    #[test]
    fn slices_to_the_other_shape() {
        let x = NDArray::from_vec((0..12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 4]).unwrap();
        let like = NDArray::zeros(&[2, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let y = invoke1("slice_like", &[&x, &like], &[]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![0., 1., 2., 4., 5., 6.]);
        let y = invoke1("slice_like", &[&x, &like], &[("axes", AttrValue::Ints(vec![-1]))]).unwrap();
        assert_eq!(
            (y.shape(), y.to_vec::<f32>().unwrap()[..3].to_vec()),
            (&[3usize, 3][..], vec![0., 1., 2.])
        );
        let big = NDArray::zeros(&[4, 4], DType::F32, oxnet_core::Device::Cpu).unwrap();
        assert!(invoke1("slice_like", &[&x, &big], &[]).unwrap_err().to_string().contains("slice_like"));
        let r = NDArray::from_vec(vec![0.5f64, -1.0, 2.0, 0.25, 3.0, -2.0], &[3, 2]).unwrap();
        let l = NDArray::zeros(&[2, 1], DType::F64, oxnet_core::Device::Cpu).unwrap();
        OpChecker::new("slice_like", &[r, l]).no_grad(&[1]).run().unwrap();
    }
}
