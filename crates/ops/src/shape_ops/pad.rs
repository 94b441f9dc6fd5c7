//! `Pad` (alias `pad`): pads every axis with `pad_width`'s
//! `(before, after)` pairs, by a constant, by repeating the edge values, or
//! by reflecting about the edges (numpy's "reflect": the edge itself is
//! not repeated, so reflection needs pads shorter than the axis). MXNet
//! 1.9.1 takes only 4-d and 5-d inputs padded on their spatial axes; any
//! rank works here. The gradient adds each output position's gradient back
//! to the input element it copies (`_backward_Pad`); constant padding
//! takes none.

use super::set_shape;
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::store::store_slice;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Element, Error, OpDef, Result};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Constant,
    Edge,
    Reflect,
}

/// The mode and the `(before, after)` pads per axis for an input of rank `ndim`.
fn params(attrs: &Attrs, ndim: usize) -> Result<(Mode, Vec<(usize, usize)>)> {
    let mode = match attrs.str("mode")? {
        "constant" => Mode::Constant,
        "edge" => Mode::Edge,
        _ => Mode::Reflect,
    };
    let w = attrs.ints("pad_width")?;
    if w.len() != 2 * ndim {
        return Err(Error::attr(
            "pad_width",
            format!(
                "Pad: {} widths for an input of rank {ndim}; give (before, after) for every axis",
                w.len()
            ),
        ));
    }
    let pads = w
        .chunks(2)
        .map(|p| match (usize::try_from(p[0]), usize::try_from(p[1])) {
            (Ok(a), Ok(b)) => Ok((a, b)),
            _ => Err(Error::attr("pad_width", format!("Pad: widths must be non-negative, got {w:?}"))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((mode, pads))
}

/// The padded shape, checking that edge and reflect padding have data to copy.
fn padded(x: &[usize], mode: Mode, pads: &[(usize, usize)]) -> Result<Shape> {
    for (ax, (&n, &(b, a))) in x.iter().zip(pads).enumerate() {
        if b + a > 0 && mode != Mode::Constant && n == 0 {
            return Err(Error::Shape(format!(
                "Pad: axis {ax} is empty; only constant padding can extend it"
            )));
        }
        if mode == Mode::Reflect && (b >= n || a >= n) && b + a > 0 {
            return Err(Error::attr(
                "pad_width",
                format!("Pad: reflection needs pads shorter than the axis; axis {ax} has length {n}, pads ({b}, {a})"),
            ));
        }
    }
    let out: Shape = x
        .iter()
        .zip(pads)
        .map(|(n, (b, a))| n.checked_add(b + a))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::attr("pad_width", "Pad: the padded shape is too large"))?;
    super::check_size(&out, "Pad")?;
    Ok(out)
}

/// For each position along an output axis, the input position it copies
/// (`None`: the constant).
fn sources(n: usize, before: usize, len: usize, mode: Mode) -> Vec<Option<usize>> {
    (0..len)
        .map(|i| {
            let j = i as i64 - before as i64;
            let last = n as i64 - 1;
            match mode {
                Mode::Constant => (0..n as i64).contains(&j).then_some(j as usize),
                Mode::Edge => Some(j.clamp(0, last) as usize),
                Mode::Reflect if n == 1 => Some(0),
                Mode::Reflect => {
                    let period = 2 * last;
                    let k = j.rem_euclid(period);
                    Some(if k > last { period - k } else { k } as usize)
                }
            }
        })
        .collect()
}

/// For every output element (row-major), the flat input element it copies.
fn gather_map(x: &[usize], mode: Mode, pads: &[(usize, usize)]) -> Result<Vec<Option<usize>>> {
    let out = padded(x, mode, pads)?;
    let tables: Vec<Vec<Option<usize>>> =
        x.iter().zip(pads).zip(out.iter()).map(|((&n, &(b, _)), &len)| sources(n, b, len, mode)).collect();
    let mut strides = vec![1usize; x.len()];
    for d in (0..x.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * x[d + 1];
    }
    let total: usize = out.iter().product();
    let mut map = Vec::with_capacity(total);
    let mut idx = vec![0usize; out.len()];
    for _ in 0..total {
        let mut src = Some(0usize);
        for d in 0..out.len() {
            src = match (src, tables[d][idx[d]]) {
                (Some(s), Some(t)) => Some(s + t * strides[d]),
                _ => None,
            };
        }
        map.push(src);
        for d in (0..out.len()).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(map)
}

fn pad_attrs(def: OpDef) -> OpDef {
    def.attr(AttrSpec::required(
        "mode",
        AttrKind::Choice(vec!["constant", "edge", "reflect"]),
        "Padding type: constant_value, the edge values, or a reflection about the edges.",
    ))
    .attr(AttrSpec::required(
        "pad_width",
        AttrKind::Ints,
        "(before_1, after_1, ..., before_N, after_N): the widths per axis.",
    ))
    .attr(AttrSpec::optional("constant_value", AttrKind::Float, 0.0, "The value of constant padding."))
}

/// The attributes a gradient passes on to `_backward_Pad`.
fn attr_list(a: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("mode", AttrValue::Str(a.str("mode")?.to_string())),
        ("pad_width", AttrValue::Ints(a.ints("pad_width")?.to_vec())),
        ("constant_value", AttrValue::Float(a.float("constant_value")?)),
    ])
}

/// The input shape of a padded shape `y`.
fn unpadded(y: &[usize], pads: &[(usize, usize)]) -> Result<Shape> {
    y.iter()
        .zip(pads)
        .map(|(n, (b, a))| {
            n.checked_sub(b + a).ok_or_else(|| {
                Error::Shape(format!("_backward_Pad: gradient shape {y:?} is smaller than the pads"))
            })
        })
        .collect()
}

pub(super) fn register() {
    registry::register(
        pad_attrs(OpDef::new("Pad").alias("pad").doc(
            "Pads an array: pad_width gives (before, after) per axis; mode constant fills \
             constant_value, edge repeats the edge values, reflect mirrors about the edges \
             (pads must be shorter than the axis).",
        ))
        .infer_shape(|attrs, ins, outs| {
            let Some(x) = &ins[0] else { return Ok(()) };
            let (mode, pads) = params(attrs, x.len())?;
            set_shape(&mut outs[0], padded(x, mode, &pads)?, "the output of Pad")
        })
        .forward(|ctx, ins, outs| {
            let x = &ins[0];
            let (mode, pads) = params(ctx.attrs, x.ndim())?;
            let map = gather_map(x.shape(), mode, &pads)?;
            let c = ctx.attrs.float("constant_value")?;
            oxnet_core::with_numeric_dtype!(x.dtype(), T => {
                let xs = x.as_slice::<T>()?;
                let fill = T::from_f64(c);
                let y: Vec<T> = map.iter().map(|s| s.map_or(fill, |i| xs[i])).collect();
                store_slice(ctx.req[0], outs[0].as_mut_slice::<T>()?, &y);
            });
            Ok(())
        })
        .grad_rule(|g| {
            let dx = call("_backward_Pad", &[&g.out_grads[0]], &attr_list(g.attrs)?)?;
            Ok(vec![Some(dx)])
        }),
    );
    registry::register(
        pad_attrs(OpDef::new("_backward_Pad").doc(
            "Gradient of Pad: each input element receives the sum of the gradients of the \
             output positions that copy it.",
        ))
        .infer_shape(|attrs, ins, outs| {
            let Some(y) = &ins[0] else { return Ok(()) };
            let (_, pads) = params(attrs, y.len())?;
            set_shape(&mut outs[0], unpadded(y, &pads)?, "the output of _backward_Pad")
        })
        .forward(|ctx, ins, outs| {
            let out = &outs[0];
            let (mode, pads) = params(ctx.attrs, out.ndim())?;
            let map = gather_map(out.shape(), mode, &pads)?;
            oxnet_core::with_numeric_dtype!(out.dtype(), T => {
                let gs = ins[0].as_slice::<T>()?;
                let mut dx = vec![T::zero(); out.size()];
                for (g, s) in gs.iter().zip(&map) {
                    if let Some(i) = s {
                        dx[*i] = dx[*i].add(*g);
                    }
                }
                store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &dx);
            });
            Ok(())
        }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke1, AttrValue, NDArray, Req};

    fn attrs(mode: &str) -> Vec<(&'static str, AttrValue)> {
        vec![
            ("mode", AttrValue::Str(mode.into())),
            ("pad_width", AttrValue::Ints(vec![0, 0, 0, 0, 1, 1, 2, 1])),
            ("constant_value", AttrValue::Float(9.0)),
        ]
    }

    /// Values and gradients (of a sum) from MXNet 1.9.1 on [[1, 2, 3], [4, 5, 6]].
    #[test]
    fn modes_match_mxnet() {
        let x = NDArray::from_vec((1..=6).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 2, 3]).unwrap();
        #[rustfmt::skip]
        let cases = [
            ("constant", vec![9., 9., 9., 9., 9., 9.,  9., 9., 1., 2., 3., 9.,  9., 9., 4., 5., 6., 9.,  9., 9., 9., 9., 9., 9.], vec![1.0f32; 6]),
            ("edge", vec![1., 1., 1., 2., 3., 3.,  1., 1., 1., 2., 3., 3.,  4., 4., 4., 5., 6., 6.,  4., 4., 4., 5., 6., 6.], vec![6., 2., 4., 6., 2., 4.]),
            ("reflect", vec![6., 5., 4., 5., 6., 5.,  3., 2., 1., 2., 3., 2.,  6., 5., 4., 5., 6., 5.,  3., 2., 1., 2., 3., 2.], vec![2., 6., 4., 2., 6., 4.]),
        ];
        for (mode, want, grad) in cases {
            x.attach_grad(Req::Write).unwrap();
            let y = {
                let _r = autograd::record();
                invoke1("pad", &[&x], &attrs(mode)).unwrap()
            };
            assert_eq!(y.shape(), &[1, 1, 4, 6]);
            assert_eq!(y.to_vec::<f32>().unwrap(), want, "{mode}");
            y.backward().unwrap();
            assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), grad, "{mode} gradient");
        }
        let r = NDArray::from_vec(vec![0.5f64, -1.0, 2.0, 0.25, 3.0, -2.0], &[2, 3]).unwrap();
        for mode in ["constant", "edge", "reflect"] {
            OpChecker::new("Pad", std::slice::from_ref(&r))
                .attr("mode", mode)
                .attr("pad_width", "(1, 0, 2, 1)")
                .run()
                .unwrap_or_else(|e| panic!("{mode}: {e}"));
        }
    }

    #[test]
    fn bad_widths_are_errors() {
        let x = NDArray::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
        let bad = |w: Vec<i64>, mode: &str| {
            invoke1("Pad", &[&x], &[("mode", AttrValue::Str(mode.into())), ("pad_width", AttrValue::Ints(w))])
                .unwrap_err()
                .to_string()
        };
        assert!(bad(vec![1, 1], "constant").contains("pad_width"));
        assert!(bad(vec![0, 0, 3, 0], "reflect").contains("reflection"));
        assert!(bad(vec![0, 0, -1, 0], "edge").contains("non-negative"));
    }
}
