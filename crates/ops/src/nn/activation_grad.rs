//! `_activation_grad`: the input gradient of `Activation` for the
//! activations whose derivative is a function of the output — relu
//! (`og · [y > 0]`), sigmoid (`og · y · (1 - y)`) and tanh
//! (`og · (1 - y²)`) — in one pass over the two arrays.
//!
//! Written as operators (`sign`, `relu`, `mul`, ...) the same gradient took
//! three passes and two temporaries the size of the activation. The fused
//! operator has its own gradient rule made of operators, so second and
//! higher order still work.

use super::{mul, scalar_op};
use crate::binary::kernel::apply;
use crate::util::call;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Error, FloatElement, GradCtx, NDArray, OpContext, OpDef, Result,
};

/// The activations this operator differentiates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Act {
    Relu,
    Sigmoid,
    Tanh,
}

impl Act {
    fn parse(name: &str) -> Result<Act> {
        match name {
            "relu" => Ok(Act::Relu),
            "sigmoid" => Ok(Act::Sigmoid),
            "tanh" => Ok(Act::Tanh),
            other => {
                Err(Error::attr("act_type", format!("_activation_grad: unsupported activation `{other}`")))
            }
        }
    }

    /// `og · f'(x)` written through the output `y = f(x)`.
    #[inline(always)]
    fn grad<C: num_traits::Float>(self, og: C, y: C) -> C {
        match self {
            // a select, not a branch: the sign of y is data-dependent
            Act::Relu => og * C::from(u8::from(y > C::zero())).unwrap_or_else(C::zero),
            Act::Sigmoid => og * (y * (C::one() - y)),
            Act::Tanh => og * (C::one() - y * y),
        }
    }
}

/// True for the activations whose gradient this operator computes.
pub(super) fn fused(act_type: &str) -> bool {
    Act::parse(act_type).is_ok()
}

/// `og · f'(x)` for `Activation(act_type)` with output `y`, as one
/// `_activation_grad` call (recorded, so it can be differentiated again).
pub(super) fn activation_grad(act_type: &str, og: &NDArray, y: &NDArray) -> Result<NDArray> {
    call("_activation_grad", &[og, y], &[("act_type", AttrValue::Str(act_type.into()))])
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let act = Act::parse(ctx.attrs.str("act_type")?)?;
    let (og, y, out) = (&inputs[0], &inputs[1], &outputs[0]);
    if og.shape() != y.shape() {
        return Err(Error::Shape(format!(
            "_activation_grad: the output gradient has shape {:?} but the output {:?}",
            og.shape(),
            y.shape()
        )));
    }
    // one loop per activation, so that each compiles to branch-free vector code
    oxnet_core::with_float_dtype!(out.dtype(), T => {
        let req = ctx.req[0];
        match act {
            Act::Relu => apply::<T, _>(og, y, out, req, |g: T, v: T| {
                T::from_compute(Act::Relu.grad(g.to_compute(), v.to_compute()))
            }),
            Act::Sigmoid => apply::<T, _>(og, y, out, req, |g: T, v: T| {
                T::from_compute(Act::Sigmoid.grad(g.to_compute(), v.to_compute()))
            }),
            Act::Tanh => apply::<T, _>(og, y, out, req, |g: T, v: T| {
                T::from_compute(Act::Tanh.grad(g.to_compute(), v.to_compute()))
            }),
        }
    })
}

/// Gradients of `og · f'(y)`: with respect to `og` the same map applied to
/// the incoming gradient; with respect to `y` zero for relu,
/// `g · og · (1 - 2y)` for sigmoid and `g · og · (-2y)` for tanh.
fn grad_rule(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let name = g.attrs.str("act_type")?;
    let act = Act::parse(name)?;
    let (og, y, head) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let d_og = if g.needs_grad[0] { Some(activation_grad(name, head, y)?) } else { None };
    let d_y = if !g.needs_grad[1] {
        None
    } else {
        let hog = mul(head, og)?;
        Some(match act {
            Act::Relu => call("zeros_like", &[y], &[])?,
            Act::Sigmoid => {
                let slope = scalar_op("_rminus_scalar", &scalar_op("_mul_scalar", y, 2.0)?, 1.0)?;
                mul(&hog, &slope)?
            }
            Act::Tanh => mul(&hog, &scalar_op("_mul_scalar", y, -2.0)?)?,
        })
    };
    Ok(vec![d_og, d_y])
}

pub(super) fn register() {
    registry::register(
        OpDef::new("_activation_grad")
            .doc(
                "The input gradient of Activation from its output: og·[y > 0] (relu), og·y·(1 - y) \
                 (sigmoid) or og·(1 - y²) (tanh), for inputs (og, y).",
            )
            .arguments(&["out_grad", "output"])
            .inplace(&[(0, 0)])
            .attr(AttrSpec::required(
                "act_type",
                AttrKind::Choice(vec!["relu", "sigmoid", "tanh"]),
                "The activation the gradient belongs to.",
            ))
            .infer_shape(oxnet_core::op::same_shape)
            .forward(forward)
            .grad_rule(grad_rule),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{invoke1, AttrValue, NDArray};

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= 1e-15 * w.abs().max(1.0), "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn values_match_the_derivatives() {
        let og = NDArray::from_vec(vec![1.5f64, -2.0, 0.5, 3.0], &[4]).unwrap();
        let y = NDArray::from_vec(vec![0.25f64, 0.0, 0.75, -0.5], &[4]).unwrap();
        let run = |act: &str| {
            let out =
                invoke1("_activation_grad", &[&og, &y], &[("act_type", AttrValue::Str(act.into()))]).unwrap();
            out.to_vec::<f64>().unwrap()
        };
        assert_eq!(run("relu"), vec![1.5, 0.0, 0.5, 0.0]);
        let sig: Vec<f64> = [(1.5, 0.25), (-2.0, 0.0), (0.5, 0.75), (3.0, -0.5)]
            .iter()
            .map(|&(g, v)| g * v * (1.0 - v))
            .collect();
        close(&run("sigmoid"), &sig);
        let tanh: Vec<f64> = [(1.5, 0.25), (-2.0, 0.0), (0.5, 0.75), (3.0, -0.5)]
            .iter()
            .map(|&(g, v)| g * (1.0 - v * v))
            .collect();
        close(&run("tanh"), &tanh);
    }

    #[test]
    fn unknown_activation_is_an_error() {
        let a = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
        let err = invoke1("_activation_grad", &[&a, &a], &[("act_type", AttrValue::Str("softrelu".into()))]);
        assert!(err.is_err());
    }
}
