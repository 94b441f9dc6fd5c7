//! `_image_to_tensor` (`mx.nd.image.to_tensor`, Gluon's `ToTensor`): an
//! image (H, W, C) or a batch (N, H, W, C) of any dtype to float32
//! (C, H, W) / (N, C, H, W) in [0, 1] (divided by 255).
//!
//! MXNet 1.9.1 gives it the output gradient copied unchanged (of the wrong
//! shape); oxnet gives the real one: transposed back and divided by 255.

use super::layout::hw_axes;
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrValue, DType, NDArray, OpDef, Result, Shape};

const OP: &str = "_image_to_tensor";

/// The axes order taking channels-last to channels-first.
fn to_channels_first(ndim: usize) -> Vec<i64> {
    if ndim == 3 {
        vec![2, 0, 1]
    } else {
        vec![0, 3, 1, 2]
    }
}

/// `x` as `dtype`, by the `Cast` operator (gradient rules run traced).
fn cast(x: &NDArray, dtype: DType) -> Result<NDArray> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    call("Cast", &[x], &[("dtype", dtype.name().into())])
}

fn to_tensor(x: &NDArray) -> Result<NDArray> {
    hw_axes(OP, x.shape())?;
    let t = call("transpose", &[x], &[("axes", AttrValue::Ints(to_channels_first(x.ndim())))])?;
    let f = cast(&t, DType::F32)?;
    call("_div_scalar", &[&f], &[("scalar", 255.0.into())])
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .alias("_npx__image_to_tensor")
            .doc("Converts an image (H, W, C) or a batch (N, H, W, C) to float32 (C, H, W) / (N, C, H, W) with values divided by 255.")
            .infer_shape(|_, ins, outs| {
                if let Some(x) = &ins[0] {
                    hw_axes(OP, x)?;
                    let order = to_channels_first(x.len());
                    outs[0] = Some(order.iter().map(|&a| x[a as usize]).collect::<Shape>());
                }
                Ok(())
            })
            .infer_type(|_, _, outs| {
                outs[0] = Some(DType::F32);
                Ok(())
            })
            .forward(|ctx, ins, outs| store(ctx.req[0], &outs[0], &to_tensor(&ins[0])?))
            .grad_rule(|g| {
                let x = &g.inputs[0];
                if !x.dtype().is_float() {
                    return Ok(vec![None]);
                }
                let back = if x.ndim() == 3 { vec![1, 2, 0] } else { vec![0, 2, 3, 1] };
                let d = call("transpose", &[&g.out_grads[0]], &[("axes", AttrValue::Ints(back))])?;
                let d = call("_div_scalar", &[&d], &[("scalar", 255.0.into())])?;
                Ok(vec![Some(cast(&d, x.dtype())?)])
            }),
    );
}
