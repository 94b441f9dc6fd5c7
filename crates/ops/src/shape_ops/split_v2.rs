//! `split_v2` and MXNet's internal `_split_v2`: split an array along an
//! axis at given positions or into equal sections.
//!
//! - `_split_v2` (MXNet's operator): `indices` are the start of every
//!   piece (the first is 0), or `sections > 0` splits into that many
//!   pieces, the first `len % sections` one longer.
//! - `split_v2` (MXNet's Python function, here an operator so that
//!   `mx.nd`, `mx.sym` and the fluent method share it):
//!   `indices_or_sections` is an integer N (N equal pieces; the axis must
//!   divide) or a tuple of split points (`(1, 3)` gives `[:1]`, `[1:3]`,
//!   `[3:]`); `axis` defaults to 0.
//!
//! `squeeze_axis` drops the split axis from pieces of length 1. The
//! gradient joins the pieces' gradients back along the axis.

use super::{set_shape, store_view};
use crate::util::call;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Error, GradCtx, NDArray, OpDef, Result, SliceSpec,
};

/// The attribute names an operator of this file reads.
#[derive(Clone, Copy)]
enum Front {
    /// `_split_v2`: `indices`, `sections`, `axis` (default 1).
    Internal,
    /// `split_v2`: `indices_or_sections`, `axis` (default 0).
    Python,
}

/// The most pieces one call makes (each is an output of its own).
const MAX_PIECES: usize = 1 << 16;

/// How a call splits: start positions, or a number of sections.
enum Split {
    Starts(Vec<usize>),
    Sections(usize),
}

fn split_of(front: Front, attrs: &Attrs) -> Result<Split> {
    let split = split_unchecked(front, attrs)?;
    let n = match &split {
        Split::Starts(s) => s.len(),
        Split::Sections(k) => *k,
    };
    if n > MAX_PIECES {
        return Err(Error::attr(
            "sections",
            format!("split_v2: {n} pieces; at most {MAX_PIECES} are supported"),
        ));
    }
    Ok(split)
}

fn split_unchecked(front: Front, attrs: &Attrs) -> Result<Split> {
    let nonneg = |v: &[i64], what: &str| {
        v.iter()
            .map(|&i| {
                usize::try_from(i).map_err(|_| {
                    Error::attr(what, format!("split positions must be non-negative, got {v:?}"))
                })
            })
            .collect::<Result<Vec<usize>>>()
    };
    match front {
        Front::Internal => {
            let sections = attrs.int("sections")?;
            if sections > 0 {
                Ok(Split::Sections(sections as usize))
            } else {
                Ok(Split::Starts(nonneg(attrs.ints("indices")?, "indices")?))
            }
        }
        Front::Python => {
            let text = attrs.str("indices_or_sections")?.trim();
            let is_tuple = text.starts_with('(') || text.starts_with('[');
            let bad = || {
                Error::attr(
                    "indices_or_sections",
                    format!("expected an integer or a tuple of integers, got `{text}`"),
                )
            };
            let values: Vec<i64> = text
                .trim_matches(|c| matches!(c, '(' | ')' | '[' | ']'))
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| p.trim_end_matches('L').parse::<i64>().map_err(|_| bad()))
                .collect::<Result<_>>()?;
            if is_tuple {
                let mut starts = vec![0];
                starts.extend(nonneg(&values, "indices_or_sections")?);
                Ok(Split::Starts(starts))
            } else {
                match values.as_slice() {
                    [n] if *n > 0 => Ok(Split::Sections(*n as usize)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

/// The split axis, each piece's `(start, end)` along it, and `squeeze_axis`.
type Pieces = (usize, Vec<(usize, usize)>, bool);

/// The [`Pieces`] of a call on an input of shape `x`.
fn pieces(front: Front, attrs: &Attrs, x: &[usize]) -> Result<Pieces> {
    let a = attrs.int("axis")?;
    let axis = normalize_axis(a, x.len()).map_err(|_| {
        Error::attr("axis", format!("split_v2: axis {a} is out of range for rank {}", x.len()))
    })?;
    let n = x[axis];
    let starts = match split_of(front, attrs)? {
        Split::Starts(s) => s,
        Split::Sections(k) => match front {
            Front::Python if !n.is_multiple_of(k) => {
                return Err(Error::attr(
                    "indices_or_sections",
                    format!("array split does not result in an equal division: {n} into {k}"),
                ))
            }
            _ => {
                let (small, extra) = (n / k, n % k);
                (0..k).map(|i| i * small + i.min(extra)).collect()
            }
        },
    };
    if starts.is_empty() {
        return Err(Error::attr("indices", "split_v2 needs at least one piece"));
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, &s) in starts.iter().enumerate() {
        let e = starts.get(i + 1).copied().unwrap_or(n);
        if s > e || e > n {
            return Err(Error::Shape(format!(
                "split_v2: piece {i} runs from {s} to {e}, outside 0..{n} or backwards"
            )));
        }
        out.push((s, e));
    }
    let squeeze = attrs.bool("squeeze_axis")?;
    if squeeze && out.iter().any(|(s, e)| e - s != 1) {
        return Err(Error::attr("squeeze_axis", "split_v2: squeeze_axis needs every piece to have length 1"));
    }
    Ok((axis, out, squeeze))
}

fn piece_shape(x: &[usize], axis: usize, (s, e): (usize, usize), squeeze: bool) -> Shape {
    let mut shape = Shape::from_slice(x);
    if squeeze {
        shape.remove(axis);
    } else {
        shape[axis] = e - s;
    }
    shape
}

/// The number of pieces, from the attributes alone where possible.
fn count(front: Front, attrs: &Attrs) -> Result<usize> {
    Ok(match split_of(front, attrs)? {
        Split::Starts(s) => s.len(),
        Split::Sections(k) => k,
    })
}

fn grad(front: Front, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    let x = g.inputs[0].shape();
    let (axis, ranges, squeeze) = pieces(front, g.attrs, x)?;
    let parts: Vec<NDArray> = g
        .out_grads
        .iter()
        .zip(&ranges)
        .map(|(og, &r)| {
            if squeeze {
                let full = piece_shape(x, axis, r, false);
                let spec: Vec<i64> = full.iter().map(|d| *d as i64).collect();
                call("reshape", &[og], &[("shape", AttrValue::Ints(spec))])
            } else {
                Ok(og.clone())
            }
        })
        .collect::<Result<_>>()?;
    let refs: Vec<&NDArray> = parts.iter().collect();
    let dx = call(
        "concat",
        &refs,
        &[("num_args", AttrValue::Int(refs.len() as i64)), ("dim", AttrValue::Int(axis as i64))],
    )?;
    Ok(vec![Some(dx)])
}

fn split_op(name: &str, front: Front, doc: &str) -> OpDef {
    OpDef::new(name)
        .doc(doc)
        .outputs_fn(move |attrs| Ok((0..count(front, attrs)?).map(|i| format!("output{i}")).collect()))
        .arity_fn(move |attrs| Ok([1, 0, count(front, attrs)?]))
        .attr(AttrSpec::optional(
            "squeeze_axis",
            AttrKind::Bool,
            false,
            "Remove the split axis from pieces of length 1 (every piece must have length 1).",
        ))
        .infer_shape(move |attrs, ins, outs| {
            let Some(x) = ins[0].clone() else { return Ok(()) };
            let (axis, ranges, squeeze) = pieces(front, attrs, &x)?;
            for (slot, r) in outs.iter_mut().zip(ranges) {
                set_shape(slot, piece_shape(&x, axis, r, squeeze), "a piece of split_v2")?;
            }
            Ok(())
        })
        .infer_type(|_, ins, outs| {
            for o in outs.iter_mut() {
                *o = ins[0];
            }
            Ok(())
        })
        .accepts_strided()
        .forward(move |ctx, ins, outs| {
            let x = &ins[0];
            let (axis, ranges, squeeze) = pieces(front, ctx.attrs, x.shape())?;
            for ((out, &(s, e)), req) in outs.iter().zip(&ranges).zip(ctx.req) {
                let mut specs = vec![SliceSpec::all(); axis + 1];
                specs[axis] = SliceSpec { begin: Some(s as i64), end: Some(e as i64), step: None };
                let view = x.slice(&specs)?;
                let dst = if squeeze {
                    let dims: Vec<i64> = view.shape().iter().map(|d| *d as i64).collect();
                    out.reshape(&dims)?
                } else {
                    out.clone()
                };
                store_view(*req, &dst, &view)?;
            }
            Ok(())
        })
        .grad_rule(move |g| grad(front, g))
}

pub(super) fn register() {
    registry::register(
        split_op(
            "_split_v2",
            Front::Internal,
            "Splits `data` along `axis` into pieces starting at `indices` (the first 0), or into \
             `sections` pieces when sections > 0 (the first len % sections one longer).",
        )
        .attr(AttrSpec::optional("indices", AttrKind::Ints, Vec::<i64>::new(), "The start of every piece."))
        .attr(AttrSpec::optional("axis", AttrKind::Int, 1i64, "The axis to split."))
        .attr(AttrSpec::optional(
            "sections",
            AttrKind::Int,
            0i64,
            "Number of equal pieces; 0: use indices.",
        )),
    );
    registry::register(
        split_op(
            "split_v2",
            Front::Python,
            "Splits `data` along `axis`: indices_or_sections is an integer N (N equal pieces) \
             or a tuple of split points ((1, 3) gives [:1], [1:3], [3:]).",
        )
        .attr(AttrSpec::required(
            "indices_or_sections",
            AttrKind::Str,
            "An integer (number of equal pieces) or a tuple of split points.",
        ))
        .attr(AttrSpec::optional("axis", AttrKind::Int, 0i64, "The axis to split.")),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke, AttrValue, NDArray};

    fn shapes(v: &[NDArray]) -> Vec<Vec<usize>> {
        v.iter().map(|a| a.shape().to_vec()).collect()
    }

    #[test]
    fn splits_as_mxnet() {
        let x = NDArray::from_vec((0..12).map(|v| v as f32).collect::<Vec<_>>(), &[2, 6]).unwrap();
        let s = |v: &str| AttrValue::Str(v.into());
        let p = invoke("split_v2", &[&x], &[("indices_or_sections", s("(1, 3, 5)")), ("axis", 1i64.into())])
            .unwrap();
        assert_eq!(shapes(&p), vec![vec![2, 1], vec![2, 2], vec![2, 2], vec![2, 1]]);
        assert_eq!(p[1].to_vec::<f32>().unwrap(), vec![1., 2., 7., 8.]);
        let p = invoke("split_v2", &[&x], &[("indices_or_sections", s("3")), ("axis", 1i64.into())]).unwrap();
        assert_eq!(shapes(&p), vec![vec![2, 2]; 3]);
        let p = invoke("split_v2", &[&x], &[("indices_or_sections", s("2")), ("squeeze_axis", true.into())])
            .unwrap();
        assert_eq!(
            (shapes(&p), p[1].to_vec::<f32>().unwrap()),
            (vec![vec![6], vec![6]], (6..12).map(|v| v as f32).collect())
        );
        let p = invoke("_split_v2", &[&x], &[("sections", 4i64.into())]).unwrap();
        assert_eq!(shapes(&p), vec![vec![2, 2], vec![2, 2], vec![2, 1], vec![2, 1]]);
        let e =
            invoke("split_v2", &[&x], &[("indices_or_sections", s("4")), ("axis", 1i64.into())]).unwrap_err();
        assert!(e.to_string().contains("equal division"), "{e}");
        assert!(invoke("split_v2", &[&x], &[("indices_or_sections", s("(2, 9)")), ("axis", 1i64.into())])
            .is_err());
        let e = invoke("_split_v2", &[&x], &[("sections", (1i64 << 40).into())]).unwrap_err();
        assert!(e.to_string().contains("pieces"), "{e}");
        let r = NDArray::from_vec(vec![0.5f64, -1.0, 2.0, 0.25, 3.0, -2.0], &[3, 2]).unwrap();
        OpChecker::new("split_v2", std::slice::from_ref(&r))
            .attr("indices_or_sections", "(1,)")
            .run()
            .unwrap();
        OpChecker::new("split_v2", &[r])
            .attr("indices_or_sections", "3")
            .attr("squeeze_axis", "True")
            .run()
            .unwrap();
    }
}
