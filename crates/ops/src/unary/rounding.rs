//! Rounding to integers, element-wise, as MXNet 1.x names and defines them:
//! `floor`, `ceil`, `round` (halves away from zero), `rint` (halves towards
//! negative infinity, MXNet's rule: `rint(2.5) = 2`, `rint(-2.5) = -3`),
//! `fix` and `trunc` (towards zero). Integer arrays pass through unchanged
//! in their own dtype; NaN and infinities stay as they are. The gradient is
//! zero everywhere, as in MXNet.

use super::kernel::UnaryFn;
use super::unary_op;
use oxnet_core::registry;

/// A rounding function given for `f32` and `f64`; integers are unchanged
/// (the trait's default integer function is the identity).
macro_rules! rounding_fn {
    ($name:ident, |$x:ident| $f:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
            const INT: bool = true;
            #[inline(always)]
            fn f32(&self, $x: f32) -> f32 {
                $f
            }
            #[inline(always)]
            fn f64(&self, $x: f64) -> f64 {
                $f
            }
        }
    };
}

rounding_fn!(Floor, |x| x.floor());
rounding_fn!(Ceil, |x| x.ceil());
rounding_fn!(Round, |x| x.round());
rounding_fn!(Rint, |x| {
    let f = x.floor();
    if x - f <= 0.5 {
        f
    } else {
        x.ceil()
    }
});
rounding_fn!(Trunc, |x| x.trunc());

pub(super) fn register() {
    let reg = |def: oxnet_core::OpDef| {
        registry::register(def.zero_grad());
    };
    reg(unary_op("floor", "Largest integer not above x, element-wise (integer dtypes unchanged).", Floor));
    reg(unary_op("ceil", "Smallest integer not below x, element-wise (integer dtypes unchanged).", Ceil));
    reg(unary_op(
        "round",
        "Nearest integer to x, halves away from zero (round(2.5) = 3, round(-2.5) = -3), element-wise.",
        Round,
    ));
    reg(unary_op(
        "rint",
        "Nearest integer to x, halves towards negative infinity as in MXNet (rint(2.5) = 2, rint(-2.5) = -3), element-wise.",
        Rint,
    ));
    reg(unary_op("fix", "x rounded towards zero, element-wise (fix(-2.7) = -2).", Trunc));
    reg(unary_op("trunc", "Integer part of x (rounded towards zero), element-wise.", Trunc));
}
