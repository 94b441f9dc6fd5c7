//! Quantization to 8-bit integers as MXNet 1.9.1 computes it on the CPU:
//! `_contrib_quantize`, `_contrib_quantize_v2`, `_contrib_dequantize` and
//! `_contrib_requantize`.
//!
//! Two schemes, both in float32 arithmetic:
//! * `int8` is zero-centred: with `r = max(|min|, |max|)`,
//!   `q = sign(x) · min(|x| · 127 / r + 0.5, 127)` truncated, and the range
//!   reported back is `(-r, r)`; dequantizing gives `q · r / 127`.
//! * `uint8` is affine: `q = (x - min) · 255 / (max - min) + 0.5`
//!   truncated, the range `(min, max)`; dequantizing gives
//!   `q · (max - min) / 255 + min`. Values outside the range saturate at 0
//!   and 255 (MXNet's cast leaves them undefined).
//!
//! The ranges are float32 arrays of shape (1,). None of the operators
//! passes a gradient (MXNet gives them zero gradients).

use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, Attrs, DType, Error, NDArray, OpDef, Req, Result};

/// The largest magnitude of a signed 8-bit code (MXNet's `MinAbs(127, -128)`).
const INT8_RANGE: f32 = 127.0;
/// The largest magnitude of a signed 32-bit code (`MinAbs(i32::MAX, i32::MIN)`).
const INT32_RANGE: f32 = 2147483647.0;

/// The zero-centred int8 code of `x` for the range `(-r, r)`.
fn to_int8(x: f32, r: f32) -> i8 {
    let scale = INT8_RANGE / r;
    let sign = (x > 0.0) as i32 - (x < 0.0) as i32;
    (sign as f32 * (x.abs() * scale + 0.5).min(INT8_RANGE)) as i8
}

/// The affine uint8 code of `x` for the range `(lo, hi)`, saturating.
fn to_uint8(x: f32, lo: f32, hi: f32) -> u8 {
    let scale = (255.0 / (hi as f64 - lo as f64)) as f32;
    (((x - lo) * scale) as f64 + 0.5).clamp(0.0, 255.0) as u8
}

/// `max(|a|, |b|)` in float32.
fn max_abs(a: f32, b: f32) -> f32 {
    a.abs().max(b.abs())
}

/// The one value of a (1,)-shaped range input.
fn scalar(op: &str, what: &str, x: &NDArray) -> Result<f32> {
    match x.to_vec::<f32>()?.as_slice() {
        [v] => Ok(*v),
        v => Err(Error::Shape(format!("{op}: `{what}` must hold one value, got {} values", v.len()))),
    }
}

/// The (1,)-shaped float32 range outputs.
fn store_range(ctx_req: &[Req], outputs: &[NDArray], lo: f32, hi: f32) -> Result<()> {
    for (k, v) in [(1, lo), (2, hi)] {
        let a = NDArray::from_vec(vec![v], &[1])?;
        oxnet_core::store::store(ctx_req[k], &outputs[k], &a)?;
    }
    Ok(())
}

/// The 8-bit dtype an `out_type` of `auto`, `int8` or `uint8` resolves to
/// (`auto`: uint8 when the calibrated minimum is not negative, as MXNet).
fn out_dtype(attrs: &Attrs) -> Result<DType> {
    Ok(match attrs.str("out_type")? {
        "uint8" => DType::U8,
        "auto" if calib_range(attrs)?.is_some_and(|(lo, _)| lo >= 0.0) => DType::U8,
        _ => DType::I8,
    })
}

/// `(min_calib_range, max_calib_range)` when both are given.
fn calib_range(attrs: &Attrs) -> Result<Option<(f32, f32)>> {
    let get = |name: &str| -> Result<Option<f32>> {
        let text = attrs.str(name)?.trim();
        if matches!(text, "None" | "none" | "") {
            return Ok(None);
        }
        let v = text
            .parse::<f32>()
            .map_err(|_| Error::attr(name, format!("expected a number or None, got `{text}`")))?;
        Ok(Some(v))
    };
    Ok(match (get("min_calib_range")?, get("max_calib_range")?) {
        (Some(lo), Some(hi)) => Some((lo, hi)),
        _ => None,
    })
}

/// `data` must be float32 (as in MXNet).
fn expect_f32(op: &str, dt: Option<DType>) -> Result<()> {
    match dt {
        Some(d) if d != DType::F32 => Err(Error::DType(format!("{op}: `data` must be float32, got {d}"))),
        _ => Ok(()),
    }
}

/// Codes of `x` (float32) in `dtype` for the range `(lo, hi)`, and the range
/// that goes with them.
fn quantize_values(
    x: &[f32],
    dtype: DType,
    lo: f32,
    hi: f32,
    shape: &[usize],
) -> Result<(NDArray, f32, f32)> {
    if dtype == DType::U8 {
        let q: Vec<u8> = x.iter().map(|&v| to_uint8(v, lo, hi)).collect();
        Ok((NDArray::from_vec(q, shape)?, lo, hi))
    } else {
        let r = max_abs(lo, hi);
        let q: Vec<i8> = x.iter().map(|&v| to_int8(v, r)).collect();
        Ok((NDArray::from_vec(q, shape)?, -r, r))
    }
}

/// Shapes of the operators that take `data, min_range, max_range` and give
/// `(codes, min, max)` or `codes` alone: the codes shaped like the data,
/// every range (1,).
fn ranged_shape(_: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let one = Shape::from_slice(&[1usize]);
    for (i, slot) in ins.iter_mut().enumerate().skip(1) {
        let what = if i == 1 { "min_range" } else { "max_range" };
        crate::shape_ops::set_shape(slot, one.clone(), what)?;
    }
    for slot in outs.iter_mut().skip(1) {
        crate::shape_ops::set_shape(slot, one.clone(), "the output range")?;
    }
    if let Some(x) = ins[0].clone() {
        crate::shape_ops::set_shape(&mut outs[0], x, "the output")?;
    }
    Ok(())
}

/// Sets the range inputs' and outputs' dtype to float32.
fn float_ranges(ins: &mut [Option<DType>], outs: &mut [Option<DType>]) {
    for slot in ins.iter_mut().skip(1).chain(outs.iter_mut().skip(1)) {
        *slot = Some(DType::F32);
    }
}

fn out_type_spec(choices: Vec<&'static str>, default: &'static str) -> AttrSpec {
    AttrSpec::optional(
        "out_type",
        AttrKind::Choice(choices),
        default,
        "The 8-bit output dtype; `auto` takes uint8 when min_calib_range is not negative, int8 otherwise.",
    )
}

fn calib_specs(op: OpDef) -> OpDef {
    op.attr(AttrSpec::optional(
        "min_calib_range",
        AttrKind::Str,
        "None",
        "The calibrated minimum; with max_calib_range it replaces the measured range.",
    ))
    .attr(AttrSpec::optional(
        "max_calib_range",
        AttrKind::Str,
        "None",
        "The calibrated maximum; with min_calib_range it replaces the measured range.",
    ))
}

fn register_quantize() {
    const OP: &str = "_contrib_quantize";
    registry::register(
        OpDef::new(OP)
            .doc(
                "Quantizes float32 data to 8-bit codes for the range [min_range, max_range]: int8 \
                 zero-centred (q = sign(x)·min(|x|·127/r + 0.5, 127), r = max(|min|, |max|), range \
                 out (-r, r)), uint8 affine (q = (x - min)·255/(max - min) + 0.5, range out (min, max)).",
            )
            .attr(out_type_spec(vec!["int8", "uint8"], "uint8"))
            .arguments(&["data", "min_range", "max_range"])
            .outputs(&["output", "min_output", "max_output"])
            .infer_shape(ranged_shape)
            .infer_type(|attrs, ins, outs| {
                expect_f32(OP, ins[0])?;
                ins[0] = Some(DType::F32);
                float_ranges(ins, outs);
                outs[0] = Some(if attrs.str("out_type")? == "int8" { DType::I8 } else { DType::U8 });
                Ok(())
            })
            .forward(|ctx, inputs, outputs| {
                let lo = scalar(OP, "min_range", &inputs[1])?;
                let hi = scalar(OP, "max_range", &inputs[2])?;
                let x = inputs[0].to_vec::<f32>()?;
                let (q, lo, hi) = quantize_values(&x, outputs[0].dtype(), lo, hi, inputs[0].shape())?;
                oxnet_core::store::store(ctx.req[0], &outputs[0], &q)?;
                store_range(ctx.req, outputs, lo, hi)
            })
            .zero_grad(),
    );
}

fn register_quantize_v2() {
    const OP: &str = "_contrib_quantize_v2";
    registry::register(
        calib_specs(
            OpDef::new(OP)
                .doc(
                    "Quantizes float32 data to 8-bit codes as _contrib_quantize, over the calibrated \
                     range (min_calib_range, max_calib_range) when given, else the data's own minimum and \
                     maximum. int8 or uint8 data passes through unchanged, its range the calibrated one \
                     or the dtype's (-127, 127) / (0, 255).",
                )
                .attr(out_type_spec(vec!["auto", "int8", "uint8"], "int8")),
        )
        .outputs(&["output", "min_output", "max_output"])
        .infer_shape(|_, ins, outs| {
            outs[1] = Some(Shape::from_slice(&[1usize]));
            outs[2] = Some(Shape::from_slice(&[1usize]));
            let Some(x) = ins[0].clone() else { return Ok(()) };
            crate::shape_ops::set_shape(&mut outs[0], x, "the output")
        })
        .infer_type(|attrs, ins, outs| {
            outs[1] = Some(DType::F32);
            outs[2] = Some(DType::F32);
            let Some(dt) = ins[0] else { return Ok(()) };
            outs[0] = Some(match dt {
                DType::F32 => out_dtype(attrs)?,
                DType::I8 | DType::U8 => dt,
                d => {
                    return Err(Error::DType(format!("{OP}: `data` must be float32, int8 or uint8, got {d}")))
                }
            });
            Ok(())
        })
        .forward(|ctx, inputs, outputs| {
            let x = &inputs[0];
            let calib = calib_range(ctx.attrs)?;
            if x.dtype() != DType::F32 {
                // already quantized: the codes pass, the range is the calibrated or the dtype's
                let (lo, hi) =
                    calib.unwrap_or(if x.dtype() == DType::U8 { (0.0, 255.0) } else { (-127.0, 127.0) });
                oxnet_core::store::store(ctx.req[0], &outputs[0], x)?;
                return store_range(ctx.req, outputs, lo, hi);
            }
            let v = x.to_vec::<f32>()?;
            let (lo, hi) = calib.unwrap_or_else(|| {
                let lo = v.iter().copied().fold(f32::INFINITY, f32::min);
                let hi = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                (lo, hi)
            });
            let (q, lo, hi) = quantize_values(&v, outputs[0].dtype(), lo, hi, x.shape())?;
            oxnet_core::store::store(ctx.req[0], &outputs[0], &q)?;
            store_range(ctx.req, outputs, lo, hi)
        })
        .zero_grad(),
    );
}

fn register_dequantize() {
    const OP: &str = "_contrib_dequantize";
    registry::register(
        OpDef::new(OP)
            .doc(
                "Float32 values of 8-bit codes for the range [min_range, max_range]: int8 codes as \
                 q·max(|min|, |max|)/127, uint8 codes as q·(max - min)/255 + min.",
            )
            .attr(AttrSpec::optional(
                "out_type",
                AttrKind::Choice(vec!["float32"]),
                "float32",
                "The output dtype (float32 only).",
            ))
            .arguments(&["data", "min_range", "max_range"])
            .infer_shape(ranged_shape)
            .infer_type(|_, ins, outs| {
                match ins[0] {
                    Some(DType::I8 | DType::U8) | None => {}
                    Some(d) => {
                        return Err(Error::DType(format!("{OP}: `data` must be int8 or uint8, got {d}")))
                    }
                }
                float_ranges(ins, outs);
                outs[0] = Some(DType::F32);
                Ok(())
            })
            .forward(|ctx, inputs, outputs| {
                let lo = scalar(OP, "min_range", &inputs[1])?;
                let hi = scalar(OP, "max_range", &inputs[2])?;
                let x = &inputs[0];
                let v: Vec<f32> = if x.dtype() == DType::U8 {
                    let scale = ((hi - lo) as f64 / 255.0) as f32;
                    x.to_vec::<u8>()?.iter().map(|&q| q as f32 * scale + lo).collect()
                } else {
                    let scale = max_abs(lo, hi) / INT8_RANGE;
                    x.to_vec::<i8>()?.iter().map(|&q| q as f32 * scale).collect()
                };
                oxnet_core::store::store(ctx.req[0], &outputs[0], &NDArray::from_vec(v, x.shape())?)
            })
            .zero_grad(),
    );
}

fn register_requantize() {
    const OP: &str = "_contrib_requantize";
    registry::register(
        calib_specs(
            OpDef::new(OP)
                .doc(
                    "Requantizes int32 codes for the range [min_range, max_range] (value = q·max(|min|, \
                     |max|)/2147483647) to int8 codes over the calibrated range when given, else over the \
                     range of the values the data holds.",
                )
                .attr(out_type_spec(vec!["auto", "int8", "uint8"], "int8")),
        )
        .arguments(&["data", "min_range", "max_range"])
        .outputs(&["output", "min_output", "max_output"])
        .infer_shape(ranged_shape)
        .infer_type(|attrs, ins, outs| {
            match ins[0] {
                Some(DType::I32) | None => {}
                Some(d) => return Err(Error::DType(format!("{OP}: `data` must be int32, got {d}"))),
            }
            if out_dtype(attrs)? == DType::U8 {
                return Err(Error::attr(
                    "out_type",
                    format!("{OP}: requantizing to uint8 is not offered (MXNet's CPU kernel writes int8 codes into it)"),
                ));
            }
            float_ranges(ins, outs);
            outs[0] = Some(DType::I8);
            Ok(())
        })
        .forward(|ctx, inputs, outputs| {
            let lo = scalar(OP, "min_range", &inputs[1])?;
            let hi = scalar(OP, "max_range", &inputs[2])?;
            let to_float = max_abs(lo, hi) / INT32_RANGE;
            let v: Vec<f32> = inputs[0].to_vec::<i32>()?.iter().map(|&q| q as f32 * to_float).collect();
            let r = match calib_range(ctx.attrs)? {
                Some((a, b)) => max_abs(a, b),
                None => {
                    let a = v.iter().copied().fold(f32::INFINITY, f32::min);
                    let b = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    max_abs(a, b)
                }
            };
            let (q, lo, hi) = quantize_values(&v, DType::I8, -r, r, inputs[0].shape())?;
            oxnet_core::store::store(ctx.req[0], &outputs[0], &q)?;
            store_range(ctx.req, outputs, lo, hi)
        })
        .zero_grad(),
    );
}

/// Registers the quantization operators.
pub(super) fn register() {
    register_quantize();
    register_quantize_v2();
    register_dequantize();
    register_requantize();
}

#[cfg(test)]
#[path = "quantize_tests.rs"]
mod tests;
