//! `_contrib_box_iou`: the intersection-over-union of every box of `lhs`
//! with every box of `rhs`.

use super::geometry::{box_area, intersection, BoxFormat};
use super::{assign, infer_real_type, shape_error, store, Real, REAL_DTYPES};
use oxnet_core::{registry, NDArray, OpContext, OpDef, Result, Shape};

const OP: &str = "_contrib_box_iou";

/// The leading extents of a box array `(..., 4)` named `what`.
fn boxes<'a>(what: &str, s: &'a [usize]) -> Result<&'a [usize]> {
    match s.split_last() {
        Some((4, lead)) if !lead.is_empty() => Ok(lead),
        _ => Err(shape_error(OP, what, "(..., 4) with at least 2 dimensions", s)),
    }
}

fn infer_shape(ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (Some(l), Some(r)) = (&ins[0], &ins[1]) else { return Ok(()) };
    let out: Vec<usize> = boxes("lhs", l)?.iter().chain(boxes("rhs", r)?).copied().collect();
    assign(OP, &mut outs[0], &out, "the output")
}

/// The IoU of boxes `a` and `b`: 0 when they do not intersect.
fn iou<T: Real>(a: &[T], b: &[T], fmt: BoxFormat) -> T {
    let inter = intersection(a, b, fmt);
    if inter <= T::ZERO {
        return T::ZERO;
    }
    inter / (box_area(a, fmt) + box_area(b, fmt) - inter)
}

fn forward_typed<T: Real>(ctx: &OpContext, ins: &[NDArray], out: &NDArray, fmt: BoxFormat) -> Result<()> {
    let (l, r) = (ins[0].as_slice::<T>()?, ins[1].as_slice::<T>()?);
    let cols = r.len() / 4;
    let mut y = vec![T::ZERO; (l.len() / 4) * cols];
    if cols > 0 {
        oxnet_core::parallel::for_each_chunk_mut(&mut y, cols, |i, row| {
            let a = &l[i * 4..i * 4 + 4];
            for (o, b) in row.iter_mut().zip(r.chunks_exact(4)) {
                *o = iou(a, b, fmt);
            }
        });
    }
    store(ctx.req[0], out, &y)
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let fmt = BoxFormat::of(ctx.attrs, "format")?;
    with_real!(OP, ins[0].dtype(), T => forward_typed::<T>(ctx, ins, &outs[0], fmt))
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "Intersection-over-union of two sets of boxes: lhs (a_1, ..., a_n, 4) and rhs \
                 (b_1, ..., b_m, 4) give (a_1, ..., a_n, b_1, ..., b_m), the IoU of every lhs \
                 box with every rhs box; boxes are corners [xmin, ymin, xmax, ymax] or centers \
                 [x, y, width, height] (`format`). Boxes that do not intersect give 0. Zero \
                 gradient, as in MXNet.",
            )
            .attr(BoxFormat::attr("format", "corner", "Box encoding: corner or center."))
            .arguments(&["lhs", "rhs"])
            .infer_shape(|_, ins, outs| infer_shape(ins, outs))
            .infer_type(|_, ins, outs| infer_real_type(OP, &["lhs", "rhs"], REAL_DTYPES, ins, outs))
            .forward(forward)
            .zero_grad(),
    );
}
