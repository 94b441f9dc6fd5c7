//! `_shuffle`: a uniformly random permutation of an array's first axis
//! (rows keep their contents).

use oxnet_core::{registry, NDArray, OpDef, Result};
use rand::Rng;

fn forward(ctx: &oxnet_core::OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let (x, out) = (&inputs[0], &outputs[0]);
    let n = x.shape().first().copied().unwrap_or(1);
    let row = x.size().checked_div(n).unwrap_or(0);
    // Fisher-Yates over the row indices
    let mut order: Vec<usize> = (0..n).collect();
    ctx.with_rng(|rng| {
        for i in (1..n).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
    });
    oxnet_core::with_dtype!(x.dtype(), T => {
        let xs = x.as_slice::<T>()?;
        let mut y = Vec::with_capacity(xs.len());
        for &r in &order {
            y.extend_from_slice(&xs[r * row..(r + 1) * row]);
        }
        oxnet_core::store::store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    });
    Ok(())
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_shuffle")
            .doc(
                "Randomly permutes the array along its first axis (every order equally likely); \
                 the elements within each row keep their order. Draws come from oxnet's global \
                 generator.",
            )
            .alias("shuffle")
            .resource(oxnet_core::Resource::Random)
            .forward(forward),
    );
}
