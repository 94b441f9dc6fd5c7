//! `my_linked_ops`: a user's operator crate, linked into the program.
//!
//! It registers its operator exactly the way `oxnet-ops` registers every
//! built-in: an ordinary function that calls
//! [`registry::register`](oxnet_core::registry::register), named once with
//! [`oxnet_core::register_operators!`]. The core registry runs that
//! registrar before its first look-up, so the operator exists as soon as
//! the crate is linked: no call at start-up, and a program only has to use
//! the crate (`use my_linked_ops as _;` where nothing else names it).
//!
//! The operator, `my_swish` (`x · sigmoid(beta · x)`), is written with the
//! public `OpDef` API only: attributes with a default, dtype inference that
//! names the operator in its error, a CPU kernel honouring the output
//! request, and a gradient rule made of built-in operators, so it
//! differentiates to any order and runs inside graphs like a built-in.
//!
//! ```
//! use my_linked_ops as _;
//! use oxnet_core::{autograd, invoke1, NDArray, Req};
//!
//! let x = NDArray::from_vec(vec![0.0f64, 2.0], &[2]).unwrap();
//! x.attach_grad(Req::Write).unwrap();
//! let y = {
//!     let _rec = autograd::record();
//!     invoke1("my_swish", &[&x], &[("beta", 1.0.into())]).unwrap()
//! };
//! assert_eq!(y.to_vec::<f64>().unwrap()[0], 0.0);
//! y.backward().unwrap();
//! assert!((x.grad().unwrap().to_vec::<f64>().unwrap()[0] - 0.5).abs() < 1e-12); // sigmoid(0)
//! ```

use oxnet_core::store::store_slice;
use oxnet_core::{
    invoke1, registry, AttrKind, AttrSpec, DType, Element, Error, GradCtx, NDArray, OpContext, OpDef, Result,
};

// The built-ins this crate's gradient rule calls: linking oxnet-ops here
// means a program that links this crate has them too.
use oxnet_ops as _;

/// `my_swish`'s description: one input `data`, one output of its shape and
/// dtype, attribute `beta` (default 1).
pub fn my_swish() -> OpDef {
    OpDef::new("my_swish")
        .doc("Swish activation: x * sigmoid(beta * x), for float32 and float64.")
        .attr(AttrSpec::optional("beta", AttrKind::Float, 1.0, "slope inside the sigmoid"))
        .infer_type(|_attrs, ins, outs| {
            let dtype = ins[0].or(outs[0]);
            match dtype {
                None => Ok(()),
                Some(DType::F32 | DType::F64) => {
                    (ins[0], outs[0]) = (dtype, dtype);
                    Ok(())
                }
                Some(other) => Err(Error::DType(format!("my_swish takes float32 or float64, got {other}"))),
            }
        })
        .forward(forward)
        .grad_rule(gradient)
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let beta = ctx.attrs.float("beta")?;
    match ins[0].dtype() {
        DType::F32 => {
            let b = beta as f32;
            apply(ctx, &ins[0], &outs[0], |x: f32| x / (1.0 + (-b * x).exp()))
        }
        DType::F64 => apply(ctx, &ins[0], &outs[0], |x: f64| x / (1.0 + (-beta * x).exp())),
        other => Err(Error::DType(format!("my_swish takes float32 or float64, got {other}"))),
    }
}

/// Maps `f` over the input and stores the result under the output's request.
fn apply<T: Element>(ctx: &OpContext, x: &NDArray, out: &NDArray, f: impl Fn(T) -> T) -> Result<()> {
    let y: Vec<T> = x.as_slice::<T>()?.iter().map(|&v| f(v)).collect();
    store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
    Ok(())
}

/// d/dx [x·s] with s = sigmoid(beta·x) is s + beta·y·(1 − s), y = x·s; made
/// of operators, so the rule is recorded and differentiates again.
fn gradient(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let beta = g.attrs.float("beta")?;
    let x = &g.inputs[0];
    let scalar = |name: &str, a: &NDArray, v: f64| invoke1(name, &[a], &[("scalar", v.into())]);
    let s = invoke1("sigmoid", &[&scalar("_mul_scalar", x, beta)?], &[])?;
    let y = invoke1("elemwise_mul", &[x, &s], &[])?;
    let y_one_minus_s = invoke1("elemwise_mul", &[&y, &scalar("_rminus_scalar", &s, 1.0)?], &[])?;
    let dy_dx = invoke1("elemwise_add", &[&s, &scalar("_mul_scalar", &y_one_minus_s, beta)?], &[])?;
    Ok(vec![Some(invoke1("elemwise_mul", &[&g.out_grads[0], &dy_dx], &[])?)])
}

/// This crate's registrar: what the core registry runs on first use.
fn register() {
    registry::register(my_swish());
}

oxnet_core::register_operators!(register);
