//! Flips of an image (H, W, C) or a batch (N, H, W, C):
//! `_image_flip_left_right` (along the width), `_image_flip_top_bottom`
//! (along the height), and their random forms, which flip the whole input
//! with probability 1/2.
//!
//! Where MXNet 1.9.1 differs, oxnet follows the operators' meaning: MXNet
//! flips axis 1 of a batch (the height) for `flip_left_right`, leaves the
//! middle row or column of an odd-sized output unwritten, and passes the
//! output gradient through unflipped; oxnet flips the width of batches
//! too, keeps the middle, and flips the gradient back. The random flips
//! have no gradient (their draw is not kept).

use super::layout::hw_axes;
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrValue, NDArray, OpDef, Result};
use rand::Rng;

fn flip(op: &str, x: &NDArray, width: bool) -> Result<NDArray> {
    let (h, w) = hw_axes(op, x.shape())?;
    let axis = if width { w } else { h };
    call("reverse", &[x], &[("axis", AttrValue::Ints(vec![axis as i64]))])
}

fn same_shape(
    op: &'static str,
) -> impl Fn(&oxnet_core::Attrs, &mut [Option<oxnet_core::Shape>], &mut [Option<oxnet_core::Shape>]) -> Result<()>
{
    move |_, ins, outs| {
        if let Some(x) = &ins[0] {
            hw_axes(op, x)?;
            outs[0] = Some(x.clone());
        }
        Ok(())
    }
}

fn register_flip(op: &'static str, width: bool, what: &str) {
    registry::register(
        OpDef::new(op)
            .alias(&format!("_npx_{op}"))
            .doc(&format!("Flips an image (H, W, C) or a batch (N, H, W, C) {what}."))
            .infer_shape(same_shape(op))
            .forward(move |ctx, ins, outs| store(ctx.req[0], &outs[0], &flip(op, &ins[0], width)?))
            .grad_rule(move |g| Ok(vec![Some(flip(op, &g.out_grads[0], width)?)])),
    );
}

fn register_random_flip(op: &'static str, width: bool, what: &str) {
    registry::register(
        OpDef::new(op)
            .alias(&format!("_npx_{op}"))
            .doc(&format!("Flips an image (H, W, C) or a batch (N, H, W, C) {what} with probability 1/2 (one draw for the whole input)."))
            .infer_shape(same_shape(op))
            .resource(oxnet_core::Resource::Random)
            .forward(move |ctx, ins, outs| {
                let flipped = oxnet_core::random::with_rng(|rng| rng.random_bool(0.5));
                let y = if flipped { flip(op, &ins[0], width)? } else { ins[0].clone() };
                store(ctx.req[0], &outs[0], &y)
            }),
    );
}

pub(super) fn register() {
    register_flip("_image_flip_left_right", true, "left to right (along the width)");
    register_flip("_image_flip_top_bottom", false, "top to bottom (along the height)");
    register_random_flip("_image_random_flip_left_right", true, "left to right");
    register_random_flip("_image_random_flip_top_bottom", false, "top to bottom");
}
