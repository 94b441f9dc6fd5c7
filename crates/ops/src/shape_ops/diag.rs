//! `diag` (k, axis1, axis2) and its gradient helper `_backward_diag`.
//!
//! On an N-D input (N ≥ 2) diag extracts the k-th diagonal of the planes
//! spanned by axis1 and axis2 (numpy's `diagonal`: those two axes are
//! removed and the diagonal becomes the last axis). On a 1-D input it
//! builds the square matrix with the input on its k-th diagonal.
//!
//! Both directions use one map: for each element of the extracted diagonal
//! (in output order) the flat offset of its source in the N-D array.
//! Extracting gathers through the map; building a matrix, and the gradient
//! of extracting (`_backward_diag`, zeros of the data's shape with the
//! gradient written onto the diagonal), scatter through it. Each is linear
//! and the other's transpose, so the gradients are operator calls.

use super::{check_size, ints_attr, set_shape};
use oxnet_core::shape::{normalize_axis, Shape};
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Element, Error, OpDef, Req, Result};

/// The shape of the k-th diagonal of `shape`'s (axis1, axis2) planes and the
/// flat source offset of each of its elements, in row-major order.
fn diag_map(shape: &[usize], k: i64, axis1: i64, axis2: i64) -> Result<(Shape, Vec<usize>)> {
    let nd = shape.len();
    let a1 = normalize_axis(axis1, nd).map_err(|e| Error::attr("axis1", format!("diag: {e}")))?;
    let a2 = normalize_axis(axis2, nd).map_err(|e| Error::attr("axis2", format!("diag: {e}")))?;
    if a1 == a2 {
        return Err(Error::attr("axis2", format!("diag: axis1 and axis2 must differ, both are {a1}")));
    }
    let (n1, n2) = (shape[a1] as i64, shape[a2] as i64);
    let len = if k >= 0 { n1.min(n2 - k) } else { (n1 + k).min(n2) };
    if len <= 0 {
        return Err(Error::attr(
            "k",
            format!("diag: offset {k} is out of range for the axes {a1} and {a2} of shape {shape:?} (extents {n1} and {n2})"),
        ));
    }
    let len = len as usize;
    let mut strides = vec![1usize; nd];
    for i in (0..nd.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let rest: Vec<usize> = (0..nd).filter(|a| *a != a1 && *a != a2).collect();
    let mut out: Shape = rest.iter().map(|a| shape[*a]).collect();
    out.push(len);
    let (r1, r2) = (k.min(0).unsigned_abs() as usize, k.max(0) as usize);
    let start = r1 * strides[a1] + r2 * strides[a2];
    let step = strides[a1] + strides[a2];
    let outer: usize = rest.iter().map(|a| shape[*a]).product();
    let mut map = Vec::with_capacity(outer * len);
    let mut idx = vec![0usize; rest.len()];
    for _ in 0..outer {
        let base: usize = rest.iter().zip(&idx).map(|(a, i)| i * strides[*a]).sum();
        map.extend((0..len).map(|d| base + start + d * step));
        for j in (0..rest.len()).rev() {
            idx[j] += 1;
            if idx[j] < shape[rest[j]] {
                break;
            }
            idx[j] = 0;
        }
    }
    Ok((out, map))
}

/// The side of the square matrix built from a vector of `n` on diagonal k.
fn square_side(n: usize, k: i64) -> Result<usize> {
    n.checked_add(k.unsigned_abs() as usize)
        .ok_or_else(|| Error::attr("k", format!("diag: offset {k} is too large")))
}

fn diag_shape(x: &[usize], attrs: &Attrs) -> Result<Shape> {
    let k = attrs.int("k")?;
    match x.len() {
        0 => Err(Error::Shape("diag: the input must have at least one axis, got a 0-d array".into())),
        1 => {
            let m = square_side(x[0], k)?;
            let s = Shape::from_slice(&[m, m]);
            check_size(&s, "diag")?;
            Ok(s)
        }
        _ => Ok(diag_map(x, k, attrs.int("axis1")?, attrs.int("axis2")?)?.0),
    }
}

/// out[i] = src[map[i]].
fn gather<T: Element>(req: Req, src: &[T], map: &[usize], out: &mut [T]) {
    for (o, m) in out.iter_mut().zip(map) {
        *o = if req == Req::Add { o.add(src[*m]) } else { src[*m] };
    }
}

/// out[map[i]] = src[i] (or += under `add`), the rest of `out` already set.
fn scatter<T: Element>(src: &[T], map: &[usize], out: &mut [T]) {
    for (s, m) in src.iter().zip(map) {
        out[*m] = out[*m].add(*s);
    }
}

fn axes_attrs(op: OpDef) -> OpDef {
    op.attr(AttrSpec::optional("k", AttrKind::Int, 0i64, "Diagonal in question. The default is 0. Use k>0 for diagonals above the main diagonal, and k<0 for diagonals below the main diagonal."))
        .attr(AttrSpec::optional("axis1", AttrKind::Int, 0i64, "The first axis of the sub-arrays of interest. Ignored when the input is a 1-D array."))
        .attr(AttrSpec::optional("axis2", AttrKind::Int, 1i64, "The second axis of the sub-arrays of interest. Ignored when the input is a 1-D array."))
}

fn diag_attrs(attrs: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("k", AttrValue::Int(attrs.int("k")?)),
        ("axis1", AttrValue::Int(attrs.int("axis1")?)),
        ("axis2", AttrValue::Int(attrs.int("axis2")?)),
    ])
}

pub(super) fn register() {
    registry::register(
        axes_attrs(OpDef::new("diag"))
            .doc("Extracts a diagonal or constructs a diagonal array. A 1-D input becomes the square matrix with it on the k-th diagonal; an N-D input gives the k-th diagonals of its (axis1, axis2) planes, as a new last axis (numpy's diagonal).")
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                set_shape(&mut outs[0], diag_shape(x, attrs)?, "the output of diag")
            })
            .forward(|ctx, ins, outs| {
                let (x, out) = (&ins[0], &outs[0]);
                let k = ctx.attrs.int("k")?;
                if ctx.req[0] == Req::Null {
                    return Ok(());
                }
                if x.ndim() == 1 {
                    let (_, map) = diag_map(out.shape(), k, 0, 1)?;
                    if ctx.req[0] != Req::Add {
                        out.fill(0.0)?;
                    }
                    oxnet_core::with_dtype!(x.dtype(), T => scatter(x.as_slice::<T>()?, &map, out.as_mut_slice::<T>()?));
                } else {
                    let (_, map) = diag_map(x.shape(), k, ctx.attrs.int("axis1")?, ctx.attrs.int("axis2")?)?;
                    oxnet_core::with_dtype!(x.dtype(), T => gather(ctx.req[0], x.as_slice::<T>()?, &map, out.as_mut_slice::<T>()?));
                }
                Ok(())
            })
            .grad_rule(|g| {
                let (x, gy) = (&g.inputs[0], &g.out_grads[0]);
                let dx = if x.ndim() == 1 {
                    crate::util::call("diag", &[gy], &[("k", AttrValue::Int(g.attrs.int("k")?))])?
                } else {
                    let mut attrs = diag_attrs(g.attrs)?;
                    attrs.push(("shape", ints_attr(x.shape())));
                    crate::util::call("_backward_diag", &[gy], &attrs)?
                };
                Ok(vec![Some(dx)])
            }),
    );

    registry::register(
        axes_attrs(OpDef::new("_backward_diag"))
            .doc("Gradient helper of diag on an N-D input: zeros of shape `shape` with the input written onto the k-th diagonals of the (axis1, axis2) planes.")
            .attr(AttrSpec::required("shape", AttrKind::Ints, "the shape of diag's data"))
            .infer_shape(|attrs, ins, outs| {
                let shape: Shape = attrs
                    .ints("shape")?
                    .iter()
                    .map(|d| usize::try_from(*d).map_err(|_| Error::attr("shape", format!("extent {d} is negative"))))
                    .collect::<Result<_>>()?;
                check_size(&shape, "_backward_diag")?;
                let (g, _) = diag_map(&shape, attrs.int("k")?, attrs.int("axis1")?, attrs.int("axis2")?)?;
                set_shape(&mut ins[0], g, "the output gradient of diag")?;
                set_shape(&mut outs[0], shape, "the output of _backward_diag")
            })
            .forward(|ctx, ins, outs| {
                let (g, out) = (&ins[0], &outs[0]);
                let a = ctx.attrs;
                let (_, map) = diag_map(out.shape(), a.int("k")?, a.int("axis1")?, a.int("axis2")?)?;
                match ctx.req[0] {
                    Req::Null => return Ok(()),
                    Req::Add => {}
                    _ => out.fill(0.0)?,
                }
                oxnet_core::with_dtype!(g.dtype(), T => scatter(g.as_slice::<T>()?, &map, out.as_mut_slice::<T>()?));
                Ok(())
            })
            .grad_rule(|g| {
                let dg = crate::util::call("diag", &[&g.out_grads[0]], &diag_attrs(g.attrs)?)?;
                Ok(vec![Some(dg)])
            }),
    );
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue};

    fn diag(x: &oxnet_core::NDArray, k: i64, a1: i64, a2: i64) -> oxnet_core::Result<oxnet_core::NDArray> {
        invoke1("diag", &[x], &[("k", k.into()), ("axis1", a1.into()), ("axis2", a2.into())])
    }

    #[test]
    fn matrix_diagonals() {
        let x = iota(&[3, 4]);
        assert_eq!(vals(&diag(&x, 0, 0, 1).unwrap()), vec![0., 5., 10.]);
        assert_eq!(vals(&diag(&x, 1, 0, 1).unwrap()), vec![1., 6., 11.]);
        assert_eq!(vals(&diag(&x, -2, 0, 1).unwrap()), vec![8.]);
        // swapped axes read the transpose
        assert_eq!(vals(&diag(&x, 1, 1, 0).unwrap()), vec![4., 9.]);
        let e = err_msg(diag(&x, 4, 0, 1));
        assert!(e.contains("diag") && e.contains("`k`"), "{e}");
        let e = err_msg(diag(&x, 0, 1, -1));
        assert!(e.contains("axis1 and axis2 must differ"), "{e}");
    }

    #[test]
    fn builds_matrices_from_vectors() {
        let v = oxnet_core::NDArray::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
        let y = diag(&v, -1, 0, 1).unwrap();
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(vals(&y), vec![0., 0., 0., 1., 0., 0., 0., 2., 0.]);
        let y = diag(&v, 1, 0, 1).unwrap();
        assert_eq!(vals(&y), vec![0., 1., 0., 0., 0., 2., 0., 0., 0.]);
    }

    #[test]
    fn nd_diagonals() {
        // shape (2, 3, 4), axes (2, 0), k = -1: out[j, d] = x[d + 1 - ..]
        let x = iota(&[2, 3, 4]);
        let y = diag(&x, -1, 2, 0).unwrap();
        // axis1 = 2 (extent 4), axis2 = 0 (extent 2): elements x[i2 = d, i0 = d - 1 + ..]
        // k < 0: axis1 index d + 1, axis2 index d; length min(4 - 1, 2) = 2
        assert_eq!(y.shape(), &[3, 2]);
        let mut want = vec![];
        for j in 0..3 {
            for d in 0..2 {
                want.push((d * 12 + j * 4 + d + 1) as f64);
            }
        }
        assert_eq!(vals(&y), want);
    }

    #[test]
    fn gradients() {
        let at = |k: i64, a1: i64, a2: i64| {
            vec![("k", AttrValue::Int(k)), ("axis1", AttrValue::Int(a1)), ("axis2", AttrValue::Int(a2))]
        };
        for (shape, k, a1, a2) in [(&[3, 4][..], 1, 0, 1), (&[3][..], -1, 0, 1), (&[2, 3, 3][..], 0, 2, 0)] {
            let mut c = OpChecker::new("diag", &[sample(shape)]);
            for (n, v) in at(k, a1, a2) {
                c = c.attr(n, v);
            }
            c.run().unwrap();
            check_second_order("diag", &[sample(shape)], &at(k, a1, a2));
        }
    }
}
