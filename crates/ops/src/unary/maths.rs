//! More element-wise maths of one array, as MXNet 1.x names them:
//! `tan`, `arcsin`, `arccos`, `arctan`, `sinh`, `cosh`, `arcsinh`,
//! `arccosh`, `arctanh`, `log2`, `log10`, `cbrt`, `rcbrt`, `degrees` and
//! `radians` (float dtypes). Each gradient is a rule made of operators, so
//! these differentiate to any order.

use super::{mul, op1, op2, rule, unary_op, with_scalar};
use crate::unary::kernel::UnaryFn;
use oxnet_core::{registry, NDArray, Result};
use std::f64::consts::{LN_10, LN_2, PI};

/// A float-only element-wise function given by its `f32` and `f64` forms.
macro_rules! std_fn {
    ($name:ident, |$x:ident| $f:expr) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl UnaryFn for $name {
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

std_fn!(Tan, |x| x.tan());
std_fn!(Arcsin, |x| x.asin());
std_fn!(Arccos, |x| x.acos());
std_fn!(Arctan, |x| x.atan());
std_fn!(Sinh, |x| x.sinh());
std_fn!(Cosh, |x| x.cosh());
std_fn!(Arcsinh, |x| x.asinh());
std_fn!(Arccosh, |x| x.acosh());
std_fn!(Arctanh, |x| x.atanh());
std_fn!(Log2, |x| x.log2());
std_fn!(Log10, |x| x.log10());
std_fn!(Cbrt, |x| x.cbrt());
std_fn!(Rcbrt, |x| 1.0 / x.cbrt());
std_fn!(Degrees, |x| x.to_degrees());
std_fn!(Radians, |x| x.to_radians());

/// `g / sqrt(s)`.
fn div_sqrt(g: &NDArray, s: &NDArray) -> Result<NDArray> {
    op2("elemwise_div", g, &op1("sqrt", s)?)
}

/// `x * x + c`.
fn square_plus(x: &NDArray, c: f64) -> Result<NDArray> {
    with_scalar("_plus_scalar", &op1("square", x)?, c)
}

/// `c - x * x`.
fn c_minus_square(x: &NDArray, c: f64) -> Result<NDArray> {
    with_scalar("_rminus_scalar", &op1("square", x)?, c)
}

pub(super) fn register() {
    let reg = |def| {
        registry::register(def);
    };
    reg(unary_op("tan", "Tangent, element-wise.", Tan)
        .grad_rule(rule(|g, _, y, _| mul(g, &square_plus(y, 1.0)?))));
    reg(unary_op("arcsin", "Inverse sine, element-wise, in [-pi/2, pi/2].", Arcsin)
        .grad_rule(rule(|g, x, _, _| div_sqrt(g, &c_minus_square(x, 1.0)?))));
    reg(unary_op("arccos", "Inverse cosine, element-wise, in [0, pi].", Arccos)
        .grad_rule(rule(|g, x, _, _| op1("negative", &div_sqrt(g, &c_minus_square(x, 1.0)?)?))));
    reg(unary_op("arctan", "Inverse tangent, element-wise, in (-pi/2, pi/2).", Arctan)
        .grad_rule(rule(|g, x, _, _| op2("elemwise_div", g, &square_plus(x, 1.0)?))));
    reg(unary_op("sinh", "Hyperbolic sine, element-wise.", Sinh)
        .grad_rule(rule(|g, x, _, _| mul(g, &op1("cosh", x)?))));
    reg(unary_op("cosh", "Hyperbolic cosine, element-wise.", Cosh)
        .grad_rule(rule(|g, x, _, _| mul(g, &op1("sinh", x)?))));
    reg(unary_op("arcsinh", "Inverse hyperbolic sine, element-wise.", Arcsinh)
        .grad_rule(rule(|g, x, _, _| div_sqrt(g, &square_plus(x, 1.0)?))));
    reg(unary_op("arccosh", "Inverse hyperbolic cosine, element-wise (x >= 1).", Arccosh)
        .grad_rule(rule(|g, x, _, _| div_sqrt(g, &square_plus(x, -1.0)?))));
    reg(unary_op("arctanh", "Inverse hyperbolic tangent, element-wise (|x| < 1).", Arctanh)
        .grad_rule(rule(|g, x, _, _| op2("elemwise_div", g, &c_minus_square(x, 1.0)?))));
    reg(unary_op("log2", "Base-2 logarithm, element-wise.", Log2)
        .grad_rule(rule(|g, x, _, _| op2("elemwise_div", g, &with_scalar("_mul_scalar", x, LN_2)?))));
    reg(unary_op("log10", "Base-10 logarithm, element-wise.", Log10)
        .grad_rule(rule(|g, x, _, _| op2("elemwise_div", g, &with_scalar("_mul_scalar", x, LN_10)?))));
    reg(unary_op("cbrt", "Cube root, element-wise.", Cbrt).grad_rule(rule(|g, _, y, _| {
        // d/dx x^(1/3) = 1 / (3 y^2)
        op2("elemwise_div", g, &with_scalar("_mul_scalar", &op1("square", y)?, 3.0)?)
    })));
    reg(unary_op("rcbrt", "Reciprocal cube root 1 / cbrt(x), element-wise.", Rcbrt).grad_rule(rule(
        // d/dx x^(-1/3) = -y / (3 x)
        |g, x, y, _| with_scalar("_mul_scalar", &op2("elemwise_div", &mul(g, y)?, x)?, -1.0 / 3.0),
    )));
    reg(unary_op("degrees", "Radians to degrees, element-wise.", Degrees)
        .grad_rule(rule(|g, _, _, _| with_scalar("_mul_scalar", g, 180.0 / PI))));
    reg(unary_op("radians", "Degrees to radians, element-wise.", Radians)
        .grad_rule(rule(|g, _, _, _| with_scalar("_mul_scalar", g, PI / 180.0))));
}
