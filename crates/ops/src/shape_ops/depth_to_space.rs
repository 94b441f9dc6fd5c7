//! `depth_to_space` and `space_to_depth` (block_size b) on NCHW arrays.
//!
//! depth_to_space moves blocks of b·b channels into b×b spatial tiles:
//! the input seen as (N, b, b, C/b², H, W), transposed to
//! (N, C/b², H, b, W, b), is the output (N, C/b², H·b, W·b).
//! space_to_depth is its inverse: the input seen as (N, C, H/b, b, W/b, b),
//! transposed to (N, b, b, C, H/b, W/b), is the output (N, C·b², H/b, W/b).
//! Both are permutations of the elements, so each one's gradient is the
//! other (written as operator calls, so higher orders work).

use super::{check_size, set_shape, store_view};
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Result};

/// The view of a move: the input's 6-D shape, the permutation, the output shape.
struct Move {
    split: [usize; 6],
    perm: [usize; 6],
    out: Shape,
}

fn block_of(op: &str, attrs: &Attrs) -> Result<usize> {
    let b = attrs.int("block_size")?;
    if b <= 0 {
        return Err(Error::attr("block_size", format!("{op}: block_size must be positive, got {b}")));
    }
    Ok(b as usize)
}

fn dims4(op: &str, x: &[usize]) -> Result<[usize; 4]> {
    match x {
        [n, c, h, w] => {
            if x.contains(&0) {
                return Err(Error::Shape(format!(
                    "{op}: every extent of the input must be non-zero, got {x:?}"
                )));
            }
            Ok([*n, *c, *h, *w])
        }
        _ => Err(Error::Shape(format!("{op}: the input must be 4-D (N, C, H, W), got shape {x:?}"))),
    }
}

fn depth_to_space_move(x: &[usize], attrs: &Attrs) -> Result<Move> {
    const OP: &str = "depth_to_space";
    let b = block_of(OP, attrs)?;
    let [n, c, h, w] = dims4(OP, x)?;
    if c % (b * b) != 0 {
        return Err(Error::Shape(format!(
            "{OP}: the channels ({c}) must be a multiple of block_size² = {} (block_size {b})",
            b * b
        )));
    }
    let out = Shape::from_slice(&[n, c / (b * b), h * b, w * b]);
    check_size(&out, OP)?;
    Ok(Move { split: [n, b, b, c / (b * b), h, w], perm: [0, 3, 4, 1, 5, 2], out })
}

fn space_to_depth_move(x: &[usize], attrs: &Attrs) -> Result<Move> {
    const OP: &str = "space_to_depth";
    let b = block_of(OP, attrs)?;
    let [n, c, h, w] = dims4(OP, x)?;
    if h % b != 0 || w % b != 0 {
        return Err(Error::Shape(format!(
            "{OP}: the height ({h}) and width ({w}) must be multiples of block_size {b}"
        )));
    }
    let out = Shape::from_slice(&[n, c * b * b, h / b, w / b]);
    check_size(&out, OP)?;
    Ok(Move { split: [n, c, h / b, b, w / b, b], perm: [0, 3, 5, 1, 2, 4], out })
}

fn run(x: &NDArray, out: &NDArray, req: oxnet_core::Req, m: &Move) -> Result<()> {
    let view = x.reshape_to(&m.split)?.transpose(Some(&m.perm))?;
    store_view(req, &out.reshape_to(view.shape())?, &view)
}

fn register_one(
    name: &'static str,
    inverse: &'static str,
    plan: fn(&[usize], &Attrs) -> Result<Move>,
    doc: &str,
) {
    registry::register(
        OpDef::new(name)
            .doc(doc)
            .attr(AttrSpec::required(
                "block_size",
                AttrKind::Int,
                "Blocks of [block_size. block_size] are moved",
            ))
            .infer_shape(move |attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], plan(x, attrs)?.out, name)
            })
            .forward(move |ctx, ins, outs| {
                run(&ins[0], &outs[0], ctx.req[0], &plan(ins[0].shape(), ctx.attrs)?)
            })
            .grad_rule(move |g| {
                let b = g.attrs.int("block_size")?;
                let dx =
                    crate::util::call(inverse, &[&g.out_grads[0]], &[("block_size", AttrValue::Int(b))])?;
                Ok(vec![Some(dx)])
            }),
    );
}

pub(super) fn register() {
    register_one(
        "depth_to_space",
        "space_to_depth",
        depth_to_space_move,
        "Rearranges blocks of block_size² channels into block_size × block_size spatial tiles: (N, C, H, W) becomes (N, C/block_size², H·block_size, W·block_size). The inverse of space_to_depth.",
    );
    register_one(
        "space_to_depth",
        "depth_to_space",
        space_to_depth_move,
        "Rearranges block_size × block_size spatial tiles into channels: (N, C, H, W) becomes (N, C·block_size², H/block_size, W/block_size). The inverse of depth_to_space.",
    );
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::invoke1;

    /// depth_to_space by its definition with explicit loops.
    fn d2s_ref(x: &[f64], [n, c, h, w]: [usize; 4], b: usize) -> Vec<f64> {
        let co = c / (b * b);
        let mut y = vec![0.0; x.len()];
        for i in 0..n {
            for oc in 0..co {
                for oh in 0..h * b {
                    for ow in 0..w * b {
                        let ic = ((oh % b) * b + ow % b) * co + oc;
                        let src = ((i * c + ic) * h + oh / b) * w + ow / b;
                        y[((i * co + oc) * h * b + oh) * w * b + ow] = x[src];
                    }
                }
            }
        }
        y
    }

    #[test]
    fn forward_matches_loops_and_round_trips() {
        let x = iota(&[2, 8, 2, 3]);
        let y = invoke1("depth_to_space", &[&x], &[("block_size", 2i64.into())]).unwrap();
        assert_eq!(y.shape(), &[2, 2, 4, 6]);
        assert_eq!(vals(&y), d2s_ref(&vals(&x), [2, 8, 2, 3], 2));
        let back = invoke1("space_to_depth", &[&y], &[("block_size", 2i64.into())]).unwrap();
        assert_eq!(back.shape(), x.shape());
        assert_eq!(vals(&back), vals(&x));
    }

    #[test]
    fn errors_name_the_op() {
        let b = |v: i64| [("block_size", v.into())];
        let e = err_msg(invoke1("depth_to_space", &[&iota(&[1, 3, 2, 2])], &b(2)));
        assert!(e.contains("depth_to_space") && e.contains("multiple"), "{e}");
        let e = err_msg(invoke1("depth_to_space", &[&iota(&[1, 4, 0, 3])], &b(2)));
        assert!(e.contains("non-zero"), "{e}");
        let e = err_msg(invoke1("space_to_depth", &[&iota(&[1, 1, 3, 4])], &b(2)));
        assert!(e.contains("space_to_depth") && e.contains("multiples"), "{e}");
        let e = err_msg(invoke1("space_to_depth", &[&iota(&[1, 1, 2, 2])], &b(0)));
        assert!(e.contains("block_size") && e.contains("positive"), "{e}");
        let e = err_msg(invoke1("space_to_depth", &[&iota(&[2, 2])], &b(1)));
        assert!(e.contains("4-D"), "{e}");
    }

    #[test]
    fn gradients() {
        OpChecker::new("depth_to_space", &[sample(&[1, 8, 2, 1])]).attr("block_size", 2i64).run().unwrap();
        OpChecker::new("space_to_depth", &[sample(&[2, 1, 4, 2])]).attr("block_size", 2i64).run().unwrap();
        check_second_order("depth_to_space", &[sample(&[1, 4, 1, 2])], &[("block_size", 2i64.into())]);
    }
}
