//! FTML, "Follow the Moving Leader" (Zheng & Kwok, 2017): `ftml_update`.
//!
//! With `g = clip(rescale_grad*grad + wd*w)` (clipping only when
//! `clip_grad >= 0`) and step number `t`:
//! `v = beta2*v + (1-beta2)*g²`,
//! `d_t = (1 - beta1^t)/lr * (sqrt(v / (1 - beta2^t)) + epsilon)`,
//! `z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*w`, `d = d_t` and
//! `w = -z / d_t`.

use super::kernel::{clip, cst, floats, update_elementwise};
use super::{lr_attr, rescale_attr, update_op, wd_attr};
use num_traits::{One, Zero};
use oxnet_core::{registry, AttrKind, AttrSpec, FloatElement, NDArray, OpContext, Result};

fn ftml(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let a = ctx.attrs;
    let t = a.int("t")?;
    oxnet_core::with_float_dtype!(ins[0].dtype(), T => {
        type C = <T as FloatElement>::Compute;
        let [lr, beta1, beta2, eps, wd, rs, cg]: [C; 7] =
            floats(a, ["lr", "beta1", "beta2", "epsilon", "wd", "rescale_grad", "clip_grad"])?;
        let tc: C = cst(t as f64);
        let (bias1, bias2) = (C::one() - beta1.powf(tc), C::one() - beta2.powf(tc));
        update_elementwise::<T, T, 3>(
            ctx.req[0], &ins[0], &ins[1], [&ins[2], &ins[3], &ins[4]], ["d", "v", "z"], &outs[0],
            move |w, g, s| {
                let mut gr = rs * g + wd * w;
                if cg >= C::zero() {
                    gr = clip(gr, cg);
                }
                let [d, v, z] = s;
                *v = beta2 * *v + (C::one() - beta2) * gr * gr;
                let d_t = bias1 / lr * ((*v / bias2).sqrt() + eps);
                *z = beta1 * *z + (C::one() - beta1) * gr - (d_t - beta1 * *d) * w;
                *d = d_t;
                -*z / d_t
            },
        )
    })
}

pub(super) fn register() {
    registry::register(
        update_op(
            "ftml_update",
            "FTML update: g = clip(rescale_grad*grad + wd*weight); v = beta2*v + (1-beta2)*g^2; \
             d_t = (1 - beta1^t)/lr * (sqrt(v/(1 - beta2^t)) + epsilon); \
             z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight; d = d_t; weight = -z/d_t. \
             Updates `d`, `v` and `z` in place and returns the new weight.",
            &["weight", "grad", "d", "v", "z"],
            &[2, 3, 4],
            [
                lr_attr(),
                AttrSpec::optional(
                    "beta1",
                    AttrKind::Float,
                    0.6,
                    "Decay of the first moment; generally close to 0.5.",
                ),
                AttrSpec::optional(
                    "beta2",
                    AttrKind::Float,
                    0.999,
                    "Decay of the second moment; generally close to 1.",
                ),
                AttrSpec::optional("epsilon", AttrKind::Float, 1e-8, "Epsilon to prevent division by zero."),
                AttrSpec::required("t", AttrKind::Int, "Number of the update (1 for the first)."),
                wd_attr(),
                rescale_attr(),
                AttrSpec::optional(
                    "clip_grad",
                    AttrKind::Float,
                    -1.0,
                    "Clip the gradient to [-clip_grad, clip_grad]; a negative value turns clipping off.",
                ),
            ],
        )
        .forward(ftml),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke_into, registry, AttrValue, NDArray, Req};

    fn arr(v: &[f64]) -> NDArray {
        NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    /// One step by the formula, in f64.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        w: f64,
        g: f64,
        d: f64,
        v: f64,
        z: f64,
        lr: f64,
        t: i32,
        wd: f64,
        rs: f64,
        cg: f64,
    ) -> [f64; 4] {
        let (b1, b2, eps) = (0.6f64, 0.999f64, 1e-8);
        let mut gr = rs * g + wd * w;
        if cg >= 0.0 {
            gr = gr.clamp(-cg, cg);
        }
        let v = b2 * v + (1.0 - b2) * gr * gr;
        let d_t = (1.0 - b1.powi(t)) / lr * ((v / (1.0 - b2.powi(t))).sqrt() + eps);
        let z = b1 * z + (1.0 - b1) * gr - (d_t - b1 * d) * w;
        [-z / d_t, d_t, v, z]
    }

    #[test]
    fn two_steps_update_weight_and_states_in_place() {
        let w0 = [0.5, -1.2, 2.0];
        let g = [0.3, -0.8, 4.0];
        let (weight, grad) = (arr(&w0), arr(&g));
        let (d, v, z) = (arr(&[0.0; 3]), arr(&[0.0; 3]), arr(&[0.0; 3]));
        let op = registry::get("ftml_update").unwrap();
        let mut want: Vec<[f64; 4]> = w0.iter().map(|w| [*w, 0.0, 0.0, 0.0]).collect();
        for t in 1..=2 {
            let attrs = op
                .parse_attrs(&[
                    ("lr", AttrValue::Float(0.1)),
                    ("t", AttrValue::Int(t)),
                    ("wd", AttrValue::Float(0.01)),
                    ("rescale_grad", AttrValue::Float(0.5)),
                    ("clip_grad", AttrValue::Float(1.5)),
                ])
                .unwrap();
            invoke_into(
                &op,
                &[&weight, &grad, &d, &v, &z],
                &attrs,
                std::slice::from_ref(&weight),
                &[Req::Write],
            )
            .unwrap();
            for (i, s) in want.iter_mut().enumerate() {
                *s = reference(s[0], g[i], s[1], s[2], s[3], 0.1, t as i32, 0.01, 0.5, 1.5);
            }
        }
        for (k, array) in [&weight, &d, &v, &z].into_iter().enumerate() {
            let got = array.to_vec::<f64>().unwrap();
            for (i, s) in want.iter().enumerate() {
                assert!(
                    (got[i] - s[k]).abs() <= 1e-12 * (1.0 + s[k].abs()),
                    "array {k}[{i}]: {} vs {}",
                    got[i],
                    s[k]
                );
            }
        }
    }

    #[test]
    fn float32_and_required_attributes() {
        let op = registry::get("ftml_update").unwrap();
        assert!(op.parse_attrs(&[("lr", AttrValue::Float(0.1))]).unwrap_err().to_string().contains('t'));
        let w = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
        let g = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
        let s: Vec<NDArray> = (0..3).map(|_| NDArray::from_vec(vec![0.0f32], &[1]).unwrap()).collect();
        let y = oxnet_core::invoke1(
            "ftml_update",
            &[&w, &g, &s[0], &s[1], &s[2]],
            &[("lr", AttrValue::Float(0.01)), ("t", AttrValue::Int(1))],
        )
        .unwrap();
        let want = reference(1.0, 0.5, 0.0, 0.0, 0.0, 0.01, 1, 0.0, 1.0, -1.0);
        assert!((y.to_vec::<f32>().unwrap()[0] as f64 - want[0]).abs() < 1e-5);
        assert!((s[1].to_vec::<f32>().unwrap()[0] as f64 - want[2]).abs() < 1e-7);
    }
}
