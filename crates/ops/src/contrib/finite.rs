//! `all_finite`, `multi_all_finite` and `_contrib_allclose`.

use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, Attrs, DType, Element, Error, NDArray, OpDef, Req, Result};

/// Whether every element of the float array `x` is finite.
fn finite(op: &str, x: &NDArray) -> Result<bool> {
    let x = if x.is_contiguous() { x.clone() } else { x.copy()? };
    match x.dtype() {
        DType::F32 => Ok(x.as_slice::<f32>()?.iter().all(|v| v.is_finite())),
        DType::F64 => Ok(x.as_slice::<f64>()?.iter().all(|v| v.is_finite())),
        DType::F16 => Ok(x.as_slice::<half::f16>()?.iter().all(|v| v.is_finite())),
        DType::BF16 => Ok(x.as_slice::<half::bf16>()?.iter().all(|v| v.is_finite())),
        other => Err(Error::DType(format!("`{op}` supports floating-point dtypes only, got {other}"))),
    }
}

/// Writes the flag: with `init_output` 1 or 0; without, only a 0 (the
/// output keeps what it holds when everything is finite).
fn write_flag(attrs: &Attrs, req: Req, out: &NDArray, ok: bool) -> Result<()> {
    if req == Req::Null {
        return Ok(());
    }
    if attrs.bool("init_output")? {
        out.fill(if ok { 1.0 } else { 0.0 })
    } else if !ok {
        out.fill(0.0)
    } else {
        Ok(())
    }
}

/// One float32 element, shape (1,).
fn flag_shape(_: &Attrs, _: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    outs[0] = Some(Shape::from_slice(&[1usize]));
    Ok(())
}

fn flag_type(_: &Attrs, _: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    outs[0] = Some(DType::F32);
    Ok(())
}

fn init_output() -> AttrSpec {
    AttrSpec::optional("init_output", AttrKind::Bool, true, "Whether to set the output to 1 first.")
}

fn num_arrays(attrs: &Attrs) -> Result<usize> {
    let n = attrs.int("num_arrays")?;
    if n < 1 {
        return Err(Error::attr("num_arrays", format!("must be at least 1, got {n}")));
    }
    Ok(n as usize)
}

/// `|a - b| <= atol + rtol |b|` for every element (NaNs equal when
/// `equal_nan`), computed in float32 for the 32- and 16-bit dtypes and in
/// float64 for float64, as numpy computes on such arrays.
fn allclose(a: &NDArray, b: &NDArray, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
    if a.dtype() != b.dtype() {
        return Err(Error::DType(format!(
            "allclose: the inputs have different dtypes, {} and {}",
            a.dtype(),
            b.dtype()
        )));
    }
    if a.shape() != b.shape() {
        return Err(Error::Shape(format!("allclose: shapes {:?} and {:?} differ", a.shape(), b.shape())));
    }
    let single = a.dtype() != DType::F64;
    let (a, b) = (a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    let close = |x: f64, y: f64| -> bool {
        if x.is_nan() || y.is_nan() {
            return equal_nan && x.is_nan() && y.is_nan();
        }
        if x == y {
            return true;
        }
        if single {
            let (x, y) = (x as f32, y as f32);
            (x - y).abs() <= atol as f32 + rtol as f32 * y.abs()
        } else {
            (x - y).abs() <= atol + rtol * y.abs()
        }
    };
    Ok(a.iter().zip(&b).all(|(x, y)| close(*x, *y)))
}

pub(super) fn register() {
    registry::register(
        OpDef::new("all_finite")
            .doc(
                "1 (float32, shape (1,)) when every element of `data` is finite, else 0. Not differentiable.",
            )
            .attr(init_output())
            .infer_shape(flag_shape)
            .infer_type(flag_type)
            .forward(|ctx, ins, outs| {
                let ok = finite(ctx.op_name, &ins[0])?;
                write_flag(ctx.attrs, ctx.req[0], &outs[0], ok)
            }),
    );
    registry::register(
        OpDef::new("multi_all_finite")
            .doc("1 (float32, shape (1,)) when every element of all `num_arrays` inputs is finite, else 0. Not differentiable.")
            .attr(AttrSpec::optional("num_arrays", AttrKind::Int, 1i64, "Number of arrays."))
            .attr(init_output())
            .arguments_fn(|attrs| Ok((0..num_arrays(attrs)?).map(|i| format!("arg{i}")).collect()))
            .infer_shape(flag_shape)
            .infer_type(flag_type)
            .forward(|ctx, ins, outs| {
                let mut ok = true;
                for x in ins {
                    ok &= finite(ctx.op_name, x)?;
                }
                write_flag(ctx.attrs, ctx.req[0], &outs[0], ok)
            }),
    );
    registry::register(
        OpDef::new("_contrib_allclose")
            .doc("numpy's allclose: 1 (uint8, shape ()) when |a - b| <= atol + rtol * |b| for every element, else 0. Not differentiable.")
            .arguments(&["a", "b"])
            .attr(AttrSpec::optional("rtol", AttrKind::Float, 1e-5f32 as f64, "Relative tolerance."))
            .attr(AttrSpec::optional("atol", AttrKind::Float, 1e-8f32 as f64, "Absolute tolerance."))
            .attr(AttrSpec::optional("equal_nan", AttrKind::Bool, true, "Whether NaNs in a and b at the same place count as equal."))
            .infer_shape(|_, _, outs| {
                outs[0] = Some(Shape::new());
                Ok(())
            })
            .infer_type(|_, ins, outs| {
                if let (Some(a), Some(b)) = (ins[0], ins[1]) {
                    if a != b {
                        return Err(Error::DType(format!("allclose: the inputs have different dtypes, {a} and {b}")));
                    }
                }
                outs[0] = Some(DType::U8);
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let a = &ins[0];
                if !a.dtype().is_float() {
                    return Err(Error::DType(format!("allclose supports floating-point dtypes only, got {}", a.dtype())));
                }
                let ok = allclose(a, &ins[1], ctx.attrs.float("rtol")?, ctx.attrs.float("atol")?, ctx.attrs.bool("equal_nan")?)?;
                if ctx.req[0] == Req::Null {
                    return Ok(());
                }
                outs[0].as_mut_slice::<u8>()?[0] = u8::from_f64(if ok { 1.0 } else { 0.0 });
                Ok(())
            }),
    );
}
