//! Moving diagonals and triangles between square matrices and vectors:
//! `_linalg_extractdiag` / `_linalg_makediag` and `_linalg_extracttrian` /
//! `_linalg_maketrian`, each the other's gradient (so gradients
//! differentiate again).
//!
//! `offset` picks a diagonal: 0 the main one, positive above it, negative
//! below. A triangle with `offset != 0` is the upper one for a positive
//! offset and the lower one for a negative offset (`lower` then does not
//! matter, as in MXNet). A lower triangle's elements are stored row by
//! row; an upper triangle's column by column.

use super::la_common::{infer_float, leading, read, set_out, square_of, write};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, Error, GradCtx, NDArray, OpContext, OpDef, Result};

/// The diagonal of `n x n` matrices at `offset`: its `(row, col)`s.
fn diag_positions(n: usize, offset: i64) -> Vec<(usize, usize)> {
    let k = offset.unsigned_abs() as usize;
    let (r0, c0) = if offset < 0 { (k, 0) } else { (0, k) };
    (0..n.saturating_sub(k)).map(|i| (r0 + i, c0 + i)).collect()
}

/// The triangle of `n x n` matrices at `offset`, in storage order.
fn trian_positions(n: usize, offset: i64, lower: bool) -> Vec<(usize, usize)> {
    let k = offset.unsigned_abs() as usize;
    let t = n.saturating_sub(k);
    let is_lower = offset < 0 || (offset == 0 && lower);
    let mut out = Vec::with_capacity(t * (t + 1) / 2);
    for r in 0..t {
        for c in 0..=r {
            out.push(if is_lower { (r + k, c) } else { (c, r + k) });
        }
    }
    out
}

/// Checks that `offset` leaves something of `n x n` matrices.
fn check_offset(op: &str, n: usize, offset: i64) -> Result<()> {
    if offset.unsigned_abs() >= n as u64 {
        return Err(Error::attr(
            "offset",
            format!(
                "{op}: illegal offset {offset} for the diagonal or triangle of matrices of dimension {n}"
            ),
        ));
    }
    Ok(())
}

/// Which pair of operators: diagonals or triangles.
#[derive(Clone, Copy)]
enum Kind {
    Diag,
    Trian,
}

impl Kind {
    fn extract(self) -> &'static str {
        match self {
            Kind::Diag => "_linalg_extractdiag",
            Kind::Trian => "_linalg_extracttrian",
        }
    }

    fn make(self) -> &'static str {
        match self {
            Kind::Diag => "_linalg_makediag",
            Kind::Trian => "_linalg_maketrian",
        }
    }

    fn positions(self, attrs: &Attrs, n: usize) -> Result<Vec<(usize, usize)>> {
        let offset = attrs.int("offset")?;
        Ok(match self {
            Kind::Diag => diag_positions(n, offset),
            Kind::Trian => trian_positions(n, offset, attrs.bool("lower")?),
        })
    }

    /// The matrix dimension a vector of `len` elements fills.
    fn matrix_dim(self, attrs: &Attrs, len: usize) -> Result<usize> {
        let k = attrs.int("offset")?.unsigned_abs() as usize;
        match self {
            Kind::Diag => Ok(len + k),
            Kind::Trian => {
                let t = ((((8 * len + 1) as f64).sqrt() - 1.0) / 2.0).round() as usize;
                if t * (t + 1) / 2 != len {
                    return Err(Error::Shape(format!(
                        "_linalg_maketrian: the last axis has {len} elements, not a triangular number t·(t+1)/2"
                    )));
                }
                Ok(t + k)
            }
        }
    }
}

fn extract_shape(kind: Kind, attrs: &Attrs, a: &[usize]) -> Result<Shape> {
    let op = kind.extract();
    let (_, n) = square_of(op, "A", a)?;
    check_offset(op, n, attrs.int("offset")?)?;
    let mut s = leading(a, 2);
    s.push(kind.positions(attrs, n)?.len());
    Ok(s)
}

fn make_shape(kind: Kind, attrs: &Attrs, a: &[usize]) -> Result<Shape> {
    let Some(&len) = a.last() else {
        return Err(Error::Shape(format!(
            "{}: input A must have at least 1 axis, got shape ()",
            kind.make()
        )));
    };
    let n = kind.matrix_dim(attrs, len)?;
    let mut s = leading(a, 1);
    s.push(n);
    s.push(n);
    Ok(s)
}

fn extract_forward(kind: Kind, ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    extract_shape(kind, ctx.attrs, inputs[0].shape())?;
    let (batch, n) = square_of(kind.extract(), "A", inputs[0].shape())?;
    let pos = kind.positions(ctx.attrs, n)?;
    let a = read(&inputs[0])?;
    let mut out = Vec::with_capacity(batch * pos.len());
    for b in 0..batch {
        out.extend(pos.iter().map(|(r, c)| a[b * n * n + r * n + c]));
    }
    write(ctx.req[0], &outputs[0], &out)
}

fn make_forward(kind: Kind, ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let shape = make_shape(kind, ctx.attrs, inputs[0].shape())?;
    let n = shape[shape.len() - 1];
    let pos = kind.positions(ctx.attrs, n)?;
    let a = read(&inputs[0])?;
    let len = pos.len().max(1);
    let batch = a.len() / len;
    let mut out = vec![0.0; batch * n * n];
    for b in 0..batch {
        for (i, (r, c)) in pos.iter().enumerate() {
            out[b * n * n + r * n + c] = a[b * pos.len() + i];
        }
    }
    write(ctx.req[0], &outputs[0], &out)
}

/// The gradient of one of the pair is the other one of the pair.
fn grad_by(other: &'static str) -> impl Fn(&GradCtx) -> Result<Vec<Option<NDArray>>> {
    move |g| {
        if !g.needs_grad[0] {
            return Ok(vec![None]);
        }
        Ok(vec![Some(crate::util::call_parsed(other, &[&g.out_grads[0]], g.attrs)?)])
    }
}

fn offset_attr(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional(
        "offset",
        AttrKind::Int,
        0i64,
        "Offset of the diagonal: 0 the main one, positive above it, negative below it.",
    ))
    .arguments(&["A"])
}

fn lower_attr(def: OpDef) -> OpDef {
    def.attr(AttrSpec::optional(
        "lower",
        AttrKind::Bool,
        true,
        "With offset 0: the lower triangle (true) or the upper one (false).",
    ))
}

fn register_pair(kind: Kind, extract_doc: &str, make_doc: &str) {
    let with_lower = |d: OpDef| if matches!(kind, Kind::Trian) { lower_attr(d) } else { d };
    registry::register(
        with_lower(offset_attr(OpDef::new(kind.extract()).alias(&kind.extract()[1..])))
            .doc(extract_doc)
            .infer_shape(move |attrs, ins, outs| {
                let Some(a) = &ins[0] else { return Ok(()) };
                let s = extract_shape(kind, attrs, a)?;
                set_out(kind.extract(), outs, 0, s)
            })
            .infer_type(infer_float(kind.extract()))
            .forward(move |ctx, i, o| extract_forward(kind, ctx, i, o))
            .grad_rule(grad_by(kind.make())),
    );
    registry::register(
        with_lower(offset_attr(OpDef::new(kind.make()).alias(&kind.make()[1..])))
            .doc(make_doc)
            .infer_shape(move |attrs, ins, outs| {
                let Some(a) = &ins[0] else { return Ok(()) };
                let s = make_shape(kind, attrs, a)?;
                set_out(kind.make(), outs, 0, s)
            })
            .infer_type(infer_float(kind.make()))
            .forward(move |ctx, i, o| make_forward(kind, ctx, i, o))
            .grad_rule(grad_by(kind.extract())),
    );
}

pub(super) fn register() {
    register_pair(
        Kind::Diag,
        "Extracts the diagonal at `offset` of square matrices (over the trailing two axes) into vectors. \
         float32 and float64 only.",
        "Makes square matrices (over a new trailing axis) with the vectors of A on the diagonal at `offset`, \
         zero elsewhere. float32 and float64 only.",
    );
    register_pair(
        Kind::Trian,
        "Extracts the triangle at `offset` of square matrices (over the trailing two axes) into vectors: lower \
         triangles row by row, upper ones column by column. float32 and float64 only.",
        "Makes square matrices (over a new trailing axis) with the vectors of A filling the triangle at \
         `offset`, zero elsewhere (the inverse of extracttrian). float32 and float64 only.",
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, DType, NDArray};

    fn v(x: &NDArray) -> Vec<f64> {
        x.to_vec::<f64>().unwrap()
    }

    #[test]
    fn values_match_mxnet() {
        let s = NDArray::from_vec(vec![2.0f64, 1., 0.5, 1., 3., 0.2, 0.5, 0.2, 1.], &[3, 3]).unwrap();
        let off = |k: i64| ("offset", AttrValue::Int(k));
        assert_eq!(v(&invoke1("_linalg_extractdiag", &[&s], &[off(1)]).unwrap()), vec![1., 0.2]);
        let d = NDArray::from_vec(vec![1.0f64, 2.], &[2]).unwrap();
        let m = invoke1("_linalg_makediag", &[&d], &[off(-1)]).unwrap();
        assert_eq!((m.shape(), v(&m)), (&[3usize, 3][..], vec![0., 0., 0., 1., 0., 0., 0., 2., 0.]));
        let x = NDArray::arange(0.0, 16.0, 1.0, DType::F64).unwrap().reshape(&[4, 4]).unwrap();
        let up = invoke1("_linalg_extracttrian", &[&x], &[("lower", false.into())]).unwrap();
        assert_eq!(v(&up), vec![0., 1., 5., 2., 6., 10., 3., 7., 11., 15.]);
        assert_eq!(v(&invoke1("_linalg_extracttrian", &[&x], &[off(2)]).unwrap()), vec![2., 3., 7.]);
        assert_eq!(
            v(&invoke1("_linalg_extracttrian", &[&x], &[off(-1)]).unwrap()),
            vec![4., 8., 9., 12., 13., 14.]
        );
        let t = NDArray::arange(0.0, 6.0, 1.0, DType::F64).unwrap();
        let m = invoke1("_linalg_maketrian", &[&t], &[("lower", false.into())]).unwrap();
        assert_eq!(v(&m), vec![0., 1., 3., 0., 2., 4., 0., 0., 5.]);
        let t3 = NDArray::from_vec(vec![1.0f64, 2., 3.], &[3]).unwrap();
        let m = invoke1("_linalg_maketrian", &[&t3], &[off(-1), ("lower", false.into())]).unwrap();
        assert_eq!(v(&m), vec![0., 0., 0., 1., 0., 0., 2., 3., 0.]);
        // makediag of a batch: (2, 2) with offset 1 -> (2, 3, 3)
        let b = NDArray::from_vec(vec![1.0f64, 2., 3., 4.], &[2, 2]).unwrap();
        assert_eq!(invoke1("_linalg_makediag", &[&b], &[off(1)]).unwrap().shape(), &[2, 3, 3]);
    }

    #[test]
    fn errors_and_gradients() {
        let x = NDArray::random_uniform(-1.0, 1.0, &[2, 3, 3], DType::F64).unwrap();
        let e =
            invoke1("_linalg_extractdiag", &[&x], &[("offset", AttrValue::Int(3))]).unwrap_err().to_string();
        assert!(e.contains("offset") && e.contains("_linalg_extractdiag"), "{e}");
        let r = NDArray::random_uniform(-1.0, 1.0, &[2, 3], DType::F64).unwrap();
        let e = invoke1("_linalg_extracttrian", &[&r], &[]).unwrap_err().to_string();
        assert!(e.contains("square") && e.contains("(2, 3)"), "{e}");
        let bad = NDArray::random_uniform(-1.0, 1.0, &[4], DType::F64).unwrap();
        let e = invoke1("_linalg_maketrian", &[&bad], &[]).unwrap_err().to_string();
        assert!(e.contains("triangular"), "{e}");
        for k in [-1i64, 0, 2] {
            OpChecker::new("_linalg_extractdiag", std::slice::from_ref(&x)).attr("offset", k).run().unwrap();
            OpChecker::new("_linalg_makediag", std::slice::from_ref(&r)).attr("offset", k).run().unwrap();
            for lower in [true, false] {
                OpChecker::new("_linalg_extracttrian", std::slice::from_ref(&x))
                    .attr("offset", k.min(1))
                    .attr("lower", lower)
                    .run()
                    .unwrap();
                OpChecker::new("_linalg_maketrian", std::slice::from_ref(&r))
                    .attr("offset", k)
                    .attr("lower", lower)
                    .run()
                    .unwrap();
            }
        }
    }
}
