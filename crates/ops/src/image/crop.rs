//! `_image_crop` (`mx.nd.image.crop`, Gluon's `CropResize` without the
//! resize): the `width × height` region at (`x`, `y`) of an image
//! (H, W, C) or of every image of a batch (N, H, W, C). Its gradient puts
//! the output gradient back into that region of zeros.

use super::layout::hw_axes;
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Result, Shape};

const OP: &str = "_image_crop";

/// The crop's (begin, end) per axis of `shape`, checked against it.
fn region(attrs: &Attrs, shape: &[usize]) -> Result<(Vec<Option<i64>>, Vec<Option<i64>>)> {
    let (h_axis, w_axis) = hw_axes(OP, shape)?;
    let get = |k: &str| -> Result<usize> {
        usize::try_from(attrs.int(k)?).map_err(|_| Error::attr(k, "must not be negative"))
    };
    let (x, y, w, h) = (get("x")?, get("y")?, get("width")?, get("height")?);
    if w == 0 || h == 0 || x + w > shape[w_axis] || y + h > shape[h_axis] {
        return Err(Error::Shape(format!(
            "{OP}: the region x={x}, y={y}, width={w}, height={h} does not fit in an image of {}x{} (height x width)",
            shape[h_axis], shape[w_axis]
        )));
    }
    let mut begin = vec![None; shape.len()];
    let mut end = vec![None; shape.len()];
    begin[h_axis] = Some(y as i64);
    end[h_axis] = Some((y + h) as i64);
    begin[w_axis] = Some(x as i64);
    end[w_axis] = Some((x + w) as i64);
    Ok((begin, end))
}

/// `slice`'s `begin` and `end` (`None` for a whole axis).
fn slice_attrs(begin: Vec<Option<i64>>, end: Vec<Option<i64>>) -> [(&'static str, AttrValue); 2] {
    let text = |v: Vec<Option<i64>>| {
        let items: Vec<String> = v.iter().map(|b| b.map_or("None".to_string(), |b| b.to_string())).collect();
        AttrValue::Raw(format!("({})", items.join(", ")))
    };
    [("begin", text(begin)), ("end", text(end))]
}

pub(super) fn register() {
    let int = |name: &str, doc: &str| AttrSpec::required(name, AttrKind::Int, doc);
    registry::register(
        OpDef::new(OP)
            .alias("_npx__image_crop")
            .doc("Crops the width x height region at (x, y) of an image (H, W, C) or of each image of a batch (N, H, W, C).")
            .attr(int("x", "left boundary of the region"))
            .attr(int("y", "top boundary of the region"))
            .attr(int("width", "width of the region"))
            .attr(int("height", "height of the region"))
            .infer_shape(|attrs, ins, outs| {
                if let Some(s) = &ins[0] {
                    let (begin, end) = region(attrs, s)?;
                    let out: Shape = s
                        .iter()
                        .enumerate()
                        .map(|(k, &d)| match (begin[k], end[k]) {
                            (Some(b), Some(e)) => (e - b) as usize,
                            _ => d,
                        })
                        .collect();
                    outs[0] = Some(out);
                }
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let (begin, end) = region(ctx.attrs, ins[0].shape())?;
                store(ctx.req[0], &outs[0], &call("slice", &[&ins[0]], &slice_attrs(begin, end))?)
            })
            .grad_rule(|g| {
                let x = &g.inputs[0];
                let (begin, end) = region(g.attrs, x.shape())?;
                let zeros = NDArray::zeros(x.shape(), g.out_grads[0].dtype(), x.device())?;
                let d = call("_slice_assign", &[&zeros, &g.out_grads[0]], &slice_attrs(begin, end))?;
                Ok(vec![Some(d)])
            }),
    );
}
