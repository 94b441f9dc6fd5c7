//! Built-in operators: element-wise binary arithmetic and comparison.
//!
//! - `broadcast_add/sub/mul/div/power/maximum/minimum/equal/not_equal/
//!   greater/greater_equal/lesser/lesser_equal` broadcast with numpy rules
//!   and answer to numpy names too (`add`, `subtract`, `multiply`, `divide`,
//!   `power`, `maximum`, `minimum`, `equal`, `not_equal`, `greater`,
//!   `greater_equal`, `lesser` (`less`), `lesser_equal` (`less_equal`)) and
//!   to MXNet's `broadcast_plus`/`broadcast_minus`.
//! - `elemwise_add/sub/mul/div` (MXNet aliases `_plus`, `_minus`, `_mul`,
//!   `_div`, ...) and `_power`, `_maximum`, `_minimum`, `_equal`, ...,
//!   `_lesser_equal` require equal shapes and share the same kernels.
//! - Scalar forms (`_plus_scalar`, `_rminus_scalar`, ...) take the float
//!   attribute `scalar`, converted to the input's dtype as MXNet does.
//! - `add_n` (alias `ElementWiseSum`) sums `num_args` equally shaped arrays.
//! - `mod` (`broadcast_mod`, `_mod`, `_mod_scalar`, `_rmod_scalar`) takes
//!   the divisor's sign as Python's `%` (0 where the divisor is 0);
//!   `hypot` (`broadcast_hypot`, `_hypot`, `_hypot_scalar`); the logical
//!   `and`, `or` and `xor` (`broadcast_logical_and`, `_logical_and`,
//!   `_logical_and_scalar`, ...) give 1 or 0 in the input dtype.
//!
//! Comparisons return the input dtype holding 1 or 0 (MXNet 1.x) and have
//! zero gradient. Integer dtypes support everything: arithmetic wraps,
//! integer division by zero gives 0, `power` goes through f64.

pub(crate) mod kernel;
#[cfg(test)]
mod mod_hypot_tests;
#[cfg(test)]
mod tests;

use crate::reduce::sum_to_shape;
use crate::util::call;
use kernel::BNum;
use oxnet_core::shape::{broadcast_shapes, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Element, Error, GradCtx, NDArray, OpDef, Req,
    Result,
};

/// The element-wise functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Max,
    Min,
    /// Remainder with the divisor's sign (Python's `%`).
    Mod,
    Hypot,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    And,
    Or,
    Xor,
}

impl Kind {
    fn is_comparison(self) -> bool {
        matches!(
            self,
            Kind::Eq
                | Kind::Ne
                | Kind::Gt
                | Kind::Ge
                | Kind::Lt
                | Kind::Le
                | Kind::And
                | Kind::Or
                | Kind::Xor
        )
    }
}

#[inline(always)]
fn truth<T: oxnet_core::Element>(c: bool) -> T {
    if c {
        T::one()
    } else {
        T::zero()
    }
}

/// Runs `kind` on arrays `a`, `b` into `out` (the broadcast shape).
fn run_arrays(kind: Kind, a: &NDArray, b: &NDArray, out: &NDArray, req: Req) -> Result<()> {
    use kernel::apply;
    oxnet_core::with_numeric_dtype!(a.dtype(), T => {
        match kind {
            Kind::Add => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_add(y)),
            Kind::Sub => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_sub(y)),
            Kind::Mul => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_mul(y)),
            Kind::Div => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_div(y)),
            Kind::Pow => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_pow(y)),
            Kind::Max => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_max(y)),
            Kind::Min => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_min(y)),
            Kind::Mod => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_mod(y)),
            Kind::Hypot => apply::<T, _>(a, b, out, req, |x: T, y: T| x.b_hypot(y)),
            Kind::Eq => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x == y)),
            Kind::Ne => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x != y)),
            Kind::Gt => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x > y)),
            Kind::Ge => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x >= y)),
            Kind::Lt => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x < y)),
            Kind::Le => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x <= y)),
            Kind::And => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x != T::zero() && y != T::zero())),
            Kind::Or => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>(x != T::zero() || y != T::zero())),
            Kind::Xor => apply::<T, _>(a, b, out, req, |x: T, y: T| truth::<T>((x != T::zero()) != (y != T::zero()))),
        }
    })
}

/// Runs `kind` on array `x` and a scalar (`x op s`, or `s op x` when
/// `reversed`) into `out` (same shape as `x`).
fn run_scalar(kind: Kind, reversed: bool, x: &NDArray, scalar: f64, out: &NDArray, req: Req) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    out.check_writable()?;
    if out.size() != x.size() || !x.is_contiguous() || !out.is_contiguous() {
        return Err(Error::Shape(format!(
            "scalar kernel: input {:?} and output {:?} differ",
            x.shape(),
            out.shape()
        )));
    }
    oxnet_core::with_numeric_dtype!(x.dtype(), T => {
        let s = T::from_f64(scalar);
        let xp = x.data_ptr::<T>()? as *const T;
        let op = out.data_ptr::<T>()?;
        let n = x.size();
        let sp: *const T = &s;
        let (a, sa, b, sb) = if reversed { (sp, 0, xp, 1) } else { (xp, 1, sp, 0) };
        macro_rules! go {
            ($f:expr) => {{
                // SAFETY: `x` and `out` hold `n` elements; `s` outlives the call.
                unsafe { kernel::flat::<T, _>(n, a, sa, b, sb, op, req, &$f) }
            }};
        }
        match kind {
            Kind::Add => go!(|x: T, y: T| x.b_add(y)),
            Kind::Sub => go!(|x: T, y: T| x.b_sub(y)),
            Kind::Mul => go!(|x: T, y: T| x.b_mul(y)),
            Kind::Div => go!(|x: T, y: T| x.b_div(y)),
            Kind::Pow if !reversed && scalar == 2.0 => go!(|x: T, _y: T| x.b_mul(x)),
            Kind::Pow => go!(|x: T, y: T| x.b_pow(y)),
            Kind::Max => go!(|x: T, y: T| x.b_max(y)),
            Kind::Min => go!(|x: T, y: T| x.b_min(y)),
            Kind::Mod => go!(|x: T, y: T| x.b_mod(y)),
            Kind::Hypot => go!(|x: T, y: T| x.b_hypot(y)),
            Kind::Eq => go!(|x: T, y: T| truth::<T>(x == y)),
            Kind::Ne => go!(|x: T, y: T| truth::<T>(x != y)),
            Kind::Gt => go!(|x: T, y: T| truth::<T>(x > y)),
            Kind::Ge => go!(|x: T, y: T| truth::<T>(x >= y)),
            Kind::Lt => go!(|x: T, y: T| truth::<T>(x < y)),
            Kind::Le => go!(|x: T, y: T| truth::<T>(x <= y)),
            Kind::And => go!(|x: T, y: T| truth::<T>(x != T::zero() && y != T::zero())),
            Kind::Or => go!(|x: T, y: T| truth::<T>(x != T::zero() || y != T::zero())),
            Kind::Xor => go!(|x: T, y: T| truth::<T>((x != T::zero()) != (y != T::zero()))),
        }
    });
    Ok(())
}

/// Dtype inference of two-operand ops: both operands and the output share
/// one dtype; a mismatch names both.
fn binary_dtype(_: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    if let (Some(a), Some(b)) = (ins[0], ins[1]) {
        if a != b {
            return Err(Error::DType(format!(
                "the operands have different dtypes: lhs is {a}, rhs is {b} (cast one of them first)"
            )));
        }
    }
    oxnet_core::op::same_dtype(&Attrs::empty(), ins, outs)
}

/// Shape inference with numpy broadcasting.
fn broadcast_infer(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let (Some(a), Some(b)) = (&ins[0], &ins[1]) else {
        return Ok(());
    };
    let out = broadcast_shapes(a, b)?;
    if let Some(have) = &outs[0] {
        if *have != out {
            return Err(Error::Shape(format!(
                "broadcasting {:?} with {:?} gives {:?}, but the output has shape {:?}",
                a.as_slice(),
                b.as_slice(),
                out.as_slice(),
                have.as_slice()
            )));
        }
    }
    outs[0] = Some(out);
    Ok(())
}

fn c1(name: &str, x: &NDArray, s: f64) -> Result<NDArray> {
    call(name, &[x], &[("scalar", AttrValue::Float(s))])
}

fn c2(name: &str, a: &NDArray, b: &NDArray) -> Result<NDArray> {
    call(name, &[a, b], &[])
}

/// Gradients of a two-operand op, summed back to each operand's shape.
fn binary_grad(kind: Kind, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let (a, b, y, dy) = (&g.inputs[0], &g.inputs[1], &g.outputs[0], &g.out_grads[0]);
    let (na, nb) = (g.needs_grad[0], g.needs_grad[1]);
    let (da, db): (Option<NDArray>, Option<NDArray>) = match kind {
        Kind::Add => (na.then(|| dy.clone()), nb.then(|| dy.clone())),
        Kind::Sub => (na.then(|| dy.clone()), if nb { Some(c1("_mul_scalar", dy, -1.0)?) } else { None }),
        Kind::Mul => (
            if na { Some(c2("broadcast_mul", dy, b)?) } else { None },
            if nb { Some(c2("broadcast_mul", dy, a)?) } else { None },
        ),
        Kind::Div => {
            let ga = c2("broadcast_div", dy, b)?;
            let gb = if nb { Some(c1("_mul_scalar", &c2("broadcast_mul", &ga, y)?, -1.0)?) } else { None };
            (na.then_some(ga), gb)
        }
        Kind::Pow => {
            let ga = if na {
                let p = c2("broadcast_power", a, &c1("_minus_scalar", b, 1.0)?)?;
                Some(c2("broadcast_mul", dy, &c2("broadcast_mul", b, &p)?)?)
            } else {
                None
            };
            let gb = if nb {
                let ln = call("log", &[a], &[])?;
                Some(c2("broadcast_mul", &c2("broadcast_mul", dy, y)?, &ln)?)
            } else {
                None
            };
            (ga, gb)
        }
        Kind::Max | Kind::Min => {
            let (ta, tb) = if kind == Kind::Max {
                ("broadcast_greater_equal", "broadcast_lesser")
            } else {
                ("broadcast_lesser_equal", "broadcast_greater")
            };
            (
                if na { Some(c2("broadcast_mul", dy, &c2(ta, a, b)?)?) } else { None },
                if nb { Some(c2("broadcast_mul", dy, &c2(tb, a, b)?)?) } else { None },
            )
        }
        // MXNet 1.9.1 gives integer remainders a zero gradient
        Kind::Mod if !a.dtype().is_float() => (
            if na { Some(call("zeros_like", &[a], &[])?) } else { None },
            if nb { Some(call("zeros_like", &[b], &[])?) } else { None },
        ),
        // a mod b = a - floor(a / b) * b
        Kind::Mod => (
            na.then(|| dy.clone()),
            if nb {
                let q = call("floor", &[&c2("broadcast_div", a, b)?], &[])?;
                Some(c1("_mul_scalar", &c2("broadcast_mul", dy, &q)?, -1.0)?)
            } else {
                None
            },
        ),
        Kind::Hypot => (
            if na { Some(c2("broadcast_div", &c2("broadcast_mul", dy, a)?, y)?) } else { None },
            if nb { Some(c2("broadcast_div", &c2("broadcast_mul", dy, b)?, y)?) } else { None },
        ),
        _ => (None, None),
    };
    Ok(vec![
        da.map(|d| sum_to_shape(&d, a.shape())).transpose()?,
        db.map(|d| sum_to_shape(&d, b.shape())).transpose()?,
    ])
}

/// Gradient of a scalar op with respect to its array input.
fn scalar_grad(kind: Kind, reversed: bool, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let s = g.attrs.float("scalar")?;
    let (x, y, dy) = (&g.inputs[0], &g.outputs[0], &g.out_grads[0]);
    let dx = match (kind, reversed) {
        (Kind::Add, _) | (Kind::Sub, false) => dy.clone(),
        (Kind::Sub, true) => c1("_mul_scalar", dy, -1.0)?,
        (Kind::Mul, _) => c1("_mul_scalar", dy, s)?,
        (Kind::Div, false) => c1("_div_scalar", dy, s)?,
        // y = s / x: dy/dx = -y / x
        (Kind::Div, true) => c1("_mul_scalar", &c2("elemwise_div", &c2("elemwise_mul", dy, y)?, x)?, -1.0)?,
        (Kind::Pow, false) if s == 0.0 => c1("_mul_scalar", dy, 0.0)?,
        (Kind::Pow, false) => {
            let p = c1("_mul_scalar", &c1("_power_scalar", x, s - 1.0)?, s)?;
            c2("elemwise_mul", dy, &p)?
        }
        // y = s ^ x: dy/dx = y ln s
        (Kind::Pow, true) => c1("_mul_scalar", &c2("elemwise_mul", dy, y)?, s.ln())?,
        (Kind::Max, _) => c2("elemwise_mul", dy, &c1("_greater_equal_scalar", x, s)?)?,
        (Kind::Min, _) => c2("elemwise_mul", dy, &c1("_lesser_equal_scalar", x, s)?)?,
        (Kind::Mod, _) if !x.dtype().is_float() => call("zeros_like", &[x], &[])?,
        (Kind::Mod, false) => dy.clone(),
        // y = s mod x = s - floor(s / x) * x: dy/dx = -floor(s / x)
        (Kind::Mod, true) => {
            let q = call("floor", &[&c1("_rdiv_scalar", x, s)?], &[])?;
            c1("_mul_scalar", &c2("elemwise_mul", dy, &q)?, -1.0)?
        }
        (Kind::Hypot, _) => c2("elemwise_div", &c2("elemwise_mul", dy, x)?, y)?,
        _ => return Ok(vec![None]),
    };
    Ok(vec![Some(dx)])
}

fn two_operand_def(name: &str, aliases: &[&str], kind: Kind, broadcast: bool, doc: &str) -> OpDef {
    let mut def = OpDef::new(name).doc(doc).arguments(&["lhs", "rhs"]).infer_type(binary_dtype);
    if broadcast {
        def = def.infer_shape(broadcast_infer);
    } else {
        def = def.inplace(&[(0, 0), (1, 0)]);
    }
    for a in aliases {
        def = def.alias(a);
    }
    def = def.forward(move |ctx, ins, outs| run_arrays(kind, &ins[0], &ins[1], &outs[0], ctx.req[0]));
    if kind.is_comparison() {
        def.zero_grad()
    } else {
        def.grad_rule(move |g| binary_grad(kind, g))
    }
}

struct Entry {
    kind: Kind,
    what: &'static str,
    broadcast: (&'static str, &'static [&'static str]),
    same_shape: (&'static str, &'static [&'static str]),
    scalar: (&'static str, &'static [&'static str]),
}

const ENTRIES: [Entry; 18] = [
    Entry {
        kind: Kind::Add,
        what: "lhs + rhs",
        broadcast: ("broadcast_add", &["broadcast_plus", "add"]),
        same_shape: ("elemwise_add", &["_plus", "_add", "_Plus"]),
        scalar: ("_plus_scalar", &["_PlusScalar"]),
    },
    Entry {
        kind: Kind::Sub,
        what: "lhs - rhs",
        broadcast: ("broadcast_sub", &["broadcast_minus", "subtract"]),
        same_shape: ("elemwise_sub", &["_minus", "_sub", "_Minus"]),
        scalar: ("_minus_scalar", &["_MinusScalar"]),
    },
    Entry {
        kind: Kind::Mul,
        what: "lhs * rhs",
        broadcast: ("broadcast_mul", &["multiply"]),
        same_shape: ("elemwise_mul", &["_mul", "_Mul"]),
        scalar: ("_mul_scalar", &["_MulScalar"]),
    },
    Entry {
        kind: Kind::Div,
        what: "lhs / rhs (integer division truncates; by zero gives 0)",
        broadcast: ("broadcast_div", &["divide"]),
        same_shape: ("elemwise_div", &["_div", "_Div"]),
        scalar: ("_div_scalar", &["_DivScalar"]),
    },
    Entry {
        kind: Kind::Pow,
        what: "lhs ^ rhs",
        broadcast: ("broadcast_power", &["power"]),
        same_shape: ("_power", &["_Power"]),
        scalar: ("_power_scalar", &["_PowerScalar"]),
    },
    Entry {
        kind: Kind::Max,
        what: "max(lhs, rhs) (NaN propagates)",
        broadcast: ("broadcast_maximum", &["maximum"]),
        same_shape: ("_maximum", &["_Maximum"]),
        scalar: ("_maximum_scalar", &["_MaximumScalar"]),
    },
    Entry {
        kind: Kind::Min,
        what: "min(lhs, rhs) (NaN propagates)",
        broadcast: ("broadcast_minimum", &["minimum"]),
        same_shape: ("_minimum", &["_Minimum"]),
        scalar: ("_minimum_scalar", &["_MinimumScalar"]),
    },
    Entry {
        kind: Kind::Mod,
        what: "lhs mod rhs (the remainder takes the sign of rhs, as Python's %; 0 where rhs is 0)",
        broadcast: ("broadcast_mod", &[]),
        same_shape: ("_mod", &["_Mod"]),
        scalar: ("_mod_scalar", &["_ModScalar"]),
    },
    Entry {
        kind: Kind::Hypot,
        what: "hypot(lhs, rhs) = sqrt(lhs^2 + rhs^2)",
        broadcast: ("broadcast_hypot", &[]),
        same_shape: ("_hypot", &["_Hypot"]),
        scalar: ("_hypot_scalar", &["_HypotScalar"]),
    },
    Entry {
        kind: Kind::Eq,
        what: "1 where lhs == rhs, else 0",
        broadcast: ("broadcast_equal", &["equal"]),
        same_shape: ("_equal", &[]),
        scalar: ("_equal_scalar", &["_EqualScalar"]),
    },
    Entry {
        kind: Kind::Ne,
        what: "1 where lhs != rhs, else 0",
        broadcast: ("broadcast_not_equal", &["not_equal"]),
        same_shape: ("_not_equal", &[]),
        scalar: ("_not_equal_scalar", &["_NotEqualScalar"]),
    },
    Entry {
        kind: Kind::Gt,
        what: "1 where lhs > rhs, else 0",
        broadcast: ("broadcast_greater", &["greater"]),
        same_shape: ("_greater", &[]),
        scalar: ("_greater_scalar", &["_GreaterScalar"]),
    },
    Entry {
        kind: Kind::Ge,
        what: "1 where lhs >= rhs, else 0",
        broadcast: ("broadcast_greater_equal", &["greater_equal"]),
        same_shape: ("_greater_equal", &[]),
        scalar: ("_greater_equal_scalar", &["_GreaterEqualScalar"]),
    },
    Entry {
        kind: Kind::Lt,
        what: "1 where lhs < rhs, else 0",
        broadcast: ("broadcast_lesser", &["lesser", "less"]),
        same_shape: ("_lesser", &[]),
        scalar: ("_lesser_scalar", &["_LesserScalar"]),
    },
    Entry {
        kind: Kind::Le,
        what: "1 where lhs <= rhs, else 0",
        broadcast: ("broadcast_lesser_equal", &["lesser_equal", "less_equal"]),
        same_shape: ("_lesser_equal", &[]),
        scalar: ("_lesser_equal_scalar", &["_LesserEqualScalar"]),
    },
    Entry {
        kind: Kind::And,
        what: "1 where lhs and rhs are both non-zero, else 0",
        broadcast: ("broadcast_logical_and", &[]),
        same_shape: ("_logical_and", &["_Logical_And"]),
        scalar: ("_logical_and_scalar", &["_LogicalAndScalar"]),
    },
    Entry {
        kind: Kind::Or,
        what: "1 where lhs or rhs is non-zero, else 0",
        broadcast: ("broadcast_logical_or", &[]),
        same_shape: ("_logical_or", &["_Logical_Or"]),
        scalar: ("_logical_or_scalar", &["_LogicalOrScalar"]),
    },
    Entry {
        kind: Kind::Xor,
        what: "1 where exactly one of lhs and rhs is non-zero, else 0",
        broadcast: ("broadcast_logical_xor", &[]),
        same_shape: ("_logical_xor", &["_Logical_Xor"]),
        scalar: ("_logical_xor_scalar", &["_LogicalXorScalar"]),
    },
];

fn register_scalar(name: &str, aliases: &[&str], kind: Kind, reversed: bool, what: &str) {
    let expr = if reversed {
        what.replace("lhs", "scalar").replace("rhs", "data")
    } else {
        what.replace("lhs", "data").replace("rhs", "scalar")
    };
    let mut def = OpDef::new(name)
        .doc(&format!("Element-wise {expr}, with `scalar` converted to the input's dtype."))
        .attr(AttrSpec::optional("scalar", AttrKind::Float, 1.0f64, "The scalar operand."))
        .attr(AttrSpec::optional(
            "is_int",
            AttrKind::Bool,
            true,
            "Accepted for compatibility; the scalar is always converted to the input's dtype.",
        ))
        .inplace(&[(0, 0)])
        .forward(move |ctx, ins, outs| {
            run_scalar(kind, reversed, &ins[0], ctx.attrs.float("scalar")?, &outs[0], ctx.req[0])
        });
    for a in aliases {
        def = def.alias(a);
    }
    def = if kind.is_comparison() {
        def.zero_grad()
    } else {
        def.grad_rule(move |g| scalar_grad(kind, reversed, g))
    };
    registry::register(def);
}

fn add_n_names(attrs: &Attrs) -> Result<Vec<String>> {
    let n = attrs.int("num_args")?;
    if n < 1 {
        return Err(Error::attr("num_args", format!("must be at least 1, got {n}")));
    }
    Ok((0..n).map(|i| format!("arg{i}")).collect())
}

/// Sums every input into `out`, piece by piece (each piece stays in cache
/// while the inputs are added into it). An input the output aliases
/// (`req = inplace`) is read first, before the output is written.
fn add_n_kernel(ins: &[NDArray], out: &NDArray, req: Req) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    out.check_writable()?;
    oxnet_core::with_numeric_dtype!(out.dtype(), T => {
        let n = out.size();
        let op = out.data_ptr::<T>()? as usize;
        let mut ptrs = Vec::with_capacity(ins.len());
        for x in ins {
            if x.size() != n || !x.is_contiguous() {
                return Err(Error::Shape(format!("add_n: input of shape {:?} does not match {:?}", x.shape(), out.shape())));
            }
            ptrs.push(x.data_ptr::<T>()? as usize);
        }
        if let Some(j) = ptrs.iter().position(|p| *p == op) {
            ptrs.swap(0, j);
        }
        if ptrs.is_empty() || n == 0 {
            return Ok(());
        }
        let add = |x: T, y: T| x.b_add(y);
        let first = |x: T, _: T| x;
        let piece = |start: usize, len: usize| {
            let at = |p: usize| (p as *const T).wrapping_add(start);
            let o = (op as *mut T).wrapping_add(start);
            // SAFETY: every input and the output hold `n >= start + len`
            // elements; the loops read each element before writing it.
            unsafe {
                if ptrs.len() == 1 {
                    kernel::flat(len, at(ptrs[0]), 1, at(ptrs[0]), 1, o, req, &first);
                    return;
                }
                kernel::flat(len, at(ptrs[0]), 1, at(ptrs[1]), 1, o, req, &add);
                for p in &ptrs[2..] {
                    kernel::flat(len, o as *const T, 1, at(*p), 1, o, Req::Write, &add);
                }
            }
        };
        const PIECE: usize = 8 * 1024;
        if n * ins.len() >= kernel::PAR_MIN {
            oxnet_core::parallel::for_each(n.div_ceil(PIECE), |k| piece(k * PIECE, PIECE.min(n - k * PIECE)));
        } else {
            piece(0, n);
        }
    });
    Ok(())
}

/// Registers this module's operators.
pub(crate) fn register() {
    for e in &ENTRIES {
        let kind = e.kind;
        registry::register(two_operand_def(
            e.broadcast.0,
            e.broadcast.1,
            kind,
            true,
            &format!("Element-wise {} with numpy broadcasting.", e.what),
        ));
        registry::register(two_operand_def(
            e.same_shape.0,
            e.same_shape.1,
            kind,
            false,
            &format!("Element-wise {} of two arrays of the same shape.", e.what),
        ));
        register_scalar(e.scalar.0, e.scalar.1, kind, false, e.what);
    }
    register_scalar("_rminus_scalar", &["_RMinusScalar"], Kind::Sub, true, "lhs - rhs");
    register_scalar("_rdiv_scalar", &["_RDivScalar"], Kind::Div, true, "lhs / rhs");
    register_scalar("_rpower_scalar", &["_RPowerScalar"], Kind::Pow, true, "lhs ^ rhs");
    register_scalar(
        "_rmod_scalar",
        &["_RModScalar"],
        Kind::Mod,
        true,
        "lhs mod rhs (sign of rhs; 0 where rhs is 0)",
    );

    registry::register(
        OpDef::new("add_n")
            .alias("ElementWiseSum")
            .doc("Sums `num_args` arrays of the same shape and dtype (arguments arg0, arg1, ...).")
            .attr(AttrSpec::required("num_args", AttrKind::Int, "Number of arrays to add."))
            .arguments_fn(add_n_names)
            .forward(|ctx, ins, outs| add_n_kernel(ins, &outs[0], ctx.req[0]))
            .grad_rule(|g| Ok(g.needs_grad.iter().map(|n| n.then(|| g.out_grads[0].clone())).collect())),
    );
}
