//! `gather_nd`, `scatter_nd` and the gradient helper `_backward_gather_nd`.
//!
//! With data of shape (X0, ..., X(N-1)) and indices of shape (M, Y0, ...,
//! Y(K-1)), M ≤ N, gather_nd's output has shape (Y0, ..., Y(K-1), XM, ...,
//! X(N-1)): output[y, ...] = data[indices[0, y], ..., indices[M-1, y], ...].
//! Indices count from the end when negative; outside [-Xi, Xi) they are an
//! `IndexError` (as MXNet). scatter_nd is the reverse: zeros of `shape` with
//! data's rows written at the indices; `_backward_gather_nd` adds them up
//! instead (gather_nd's gradient, where repeated indices accumulate).
//! The gradients are operator calls: gather_nd ↔ _backward_gather_nd, and
//! scatter_nd's data gradient is gather_nd.

use crate::shape_ops::{check_size, ints_attr, lhs_dtype, set_shape};
use oxnet_core::shape::Shape;
use oxnet_core::{registry, AttrKind, AttrSpec, Element, Error, NDArray, OpDef, Req, Result};

/// The output shape of gather_nd for `data` and `indices` shapes.
fn gathered_shape(op: &str, data: &[usize], idx: &[usize]) -> Result<Shape> {
    let Some(&m) = idx.first() else {
        return Err(Error::Shape(format!("{op}: indices must have at least one axis, got a 0-d array")));
    };
    if m == 0 || m > data.len() {
        return Err(Error::Shape(format!(
            "{op}: the first axis of indices ({m}) must be between 1 and the rank of the data ({}), indices {idx:?}, data {data:?}",
            data.len()
        )));
    }
    Ok(idx[1..].iter().chain(&data[m..]).copied().collect())
}

/// For each index tuple, the flat offset of its row (of `inner` elements) in
/// data of shape `data`, checking bounds.
fn row_offsets(op: &str, data: &[usize], indices: &NDArray) -> Result<(Vec<usize>, usize)> {
    let m = indices.shape()[0];
    let n = indices.size() / m.max(1);
    // integer indices as they are; float ones truncated, NaN out of bounds
    let raw: Vec<i64> = if indices.dtype().is_float() {
        let f = indices.to_vec::<f64>()?;
        if let Some(v) = f.iter().find(|v| v.is_nan()) {
            return Err(Error::Invalid(format!("IndexError: index {v} is not a number ({op})")));
        }
        f.iter().map(|v| v.trunc() as i64).collect()
    } else {
        indices.to_vec::<i64>()?
    };
    let inner: usize = data[m..].iter().product();
    let mut offs = vec![0usize; n];
    for (axis, &extent) in data[..m].iter().enumerate() {
        let stride: usize = data[axis + 1..m].iter().product::<usize>() * inner;
        let size = extent as i64;
        for (o, &i) in offs.iter_mut().zip(&raw[axis * n..(axis + 1) * n]) {
            if i < -size || i >= size {
                return Err(Error::Invalid(format!(
                    "IndexError: index {i} is out of bounds for axis {axis} with size {extent} ({op})"
                )));
            }
            // negative indices count from the end (no division on the hot path)
            *o += (if i < 0 { i + size } else { i }) as usize * stride;
        }
    }
    Ok((offs, inner))
}

fn gather<T: Element>(req: Req, data: &[T], offs: &[usize], inner: usize, out: &mut [T]) {
    if inner == 1 && req != Req::Add {
        // single elements: a plain gather, split over the pool
        const CHUNK: usize = 1 << 16;
        oxnet_core::parallel::for_each_chunk_mut(out, CHUNK, |c, dst| {
            for (d, &o) in dst.iter_mut().zip(&offs[c * CHUNK..]) {
                *d = data[o];
            }
        });
        return;
    }
    for (dst, &o) in out.chunks_exact_mut(inner.max(1)).zip(offs) {
        oxnet_core::store::store_slice(req, &mut dst[..inner], &data[o..o + inner]);
    }
}

/// The common case in one pass: single elements (`indices` address every
/// axis of `data`) at int64 or int32 indices, written (not added). Each
/// chunk of the output reads its index tuples straight from `indices`,
/// checks them and loads the elements, so no offset table is built. `None`
/// when the call is not of this kind.
fn gather_integer_elements(req: Req, data: &NDArray, indices: &NDArray, out: &NDArray) -> Option<Result<()>> {
    let m = *indices.shape().first()?;
    if req == Req::Add || req == Req::Null || m != data.shape().len() || m == 0 {
        return None;
    }
    let extents = data.shape();
    let run = || -> Result<()> {
        oxnet_core::with_dtype!(data.dtype(), T => {
            let (src, dst) = (data.as_slice::<T>()?, out.as_mut_slice::<T>()?);
            match indices.dtype() {
                oxnet_core::DType::I64 => gather_elements(src, extents, indices.as_slice::<i64>()?, dst),
                _ => gather_elements(src, extents, indices.as_slice::<i32>()?, dst),
            }
        })
    };
    matches!(indices.dtype(), oxnet_core::DType::I64 | oxnet_core::DType::I32).then(run)
}

/// `out[p] = data[idx[0][p], ..., idx[m-1][p]]` for the `m` rows of `idx`
/// (`m` = data's rank), in parallel chunks; an index outside `[-X, X)` is
/// an `IndexError`.
fn gather_elements<T: Element, I: Copy + Into<i64> + Sync>(
    data: &[T],
    extents: &[usize],
    idx: &[I],
    out: &mut [T],
) -> Result<()> {
    const CHUNK: usize = 1 << 14;
    let n = out.len();
    let strides: Vec<usize> = (0..extents.len()).map(|a| extents[a + 1..].iter().product()).collect();
    oxnet_core::parallel::try_for_each_chunk_mut(out, CHUNK, |c, dst| {
        let start = c * CHUNK;
        let mut offs = [0usize; CHUNK];
        let offs = &mut offs[..dst.len()];
        for (axis, (&extent, &stride)) in extents.iter().zip(&strides).enumerate() {
            let size = extent as i64;
            let row = &idx[axis * n + start..axis * n + start + dst.len()];
            let mut bad = false;
            for (o, &i) in offs.iter_mut().zip(row) {
                let i: i64 = i.into();
                bad |= i < -size || i >= size;
                // negative indices count from the end (no branch on the hot path)
                *o += (i + (size & (i >> 63))) as usize * stride;
            }
            if bad {
                let i: i64 = row.iter().map(|&i| i.into()).find(|&i| i < -size || i >= size).unwrap_or(0);
                return Err(Error::Invalid(format!(
                    "IndexError: index {i} is out of bounds for axis {axis} with size {extent} (gather_nd)"
                )));
            }
        }
        for (d, &o) in dst.iter_mut().zip(offs.iter()) {
            *d = data[o];
        }
        Ok(())
    })
}

/// Writes (or adds, under `add`) rows of `src` at `offs` into `out`.
fn scatter<T: Element>(src: &[T], offs: &[usize], inner: usize, out: &mut [T], add: bool) {
    if inner == 0 {
        return;
    }
    for (row, &o) in src.chunks_exact(inner).zip(offs) {
        let dst = &mut out[o..o + inner];
        if add {
            for (d, s) in dst.iter_mut().zip(row) {
                *d = d.add(*s);
            }
        } else {
            dst.copy_from_slice(row);
        }
    }
}

fn shape_attr(op: &str, attrs: &oxnet_core::Attrs) -> Result<Shape> {
    let shape: Shape = attrs
        .ints("shape")?
        .iter()
        .map(|d| {
            usize::try_from(*d).map_err(|_| Error::attr("shape", format!("{op}: extent {d} is negative")))
        })
        .collect::<Result<_>>()?;
    check_size(&shape, op)?;
    Ok(shape)
}

/// scatter_nd and _backward_gather_nd: (data, indices) into zeros of `shape`.
fn register_scatter(name: &'static str, accumulate: bool, doc: &str) {
    registry::register(
        OpDef::new(name)
            .doc(doc)
            .arguments(&["data", "indices"])
            .attr(AttrSpec::required("shape", AttrKind::Ints, "Shape of output."))
            .infer_shape(move |attrs, ins, outs| {
                let shape = shape_attr(name, attrs)?;
                if let Some(idx) = &ins[1] {
                    let d = gathered_shape(name, &shape, idx)?;
                    set_shape(&mut ins[0], d, &format!("the data of {name}"))?;
                }
                set_shape(&mut outs[0], shape, &format!("the output of {name}"))
            })
            .infer_type(lhs_dtype)
            .forward(move |ctx, ins, outs| {
                let (src, out) = (&ins[0], &outs[0]);
                let (offs, inner) = row_offsets(name, out.shape(), &ins[1])?;
                match ctx.req[0] {
                    Req::Null => return Ok(()),
                    Req::Add if accumulate => {}
                    Req::Add => {
                        // add the scattered array: build it, then add
                        let tmp = NDArray::zeros(out.shape(), out.dtype(), out.device())?;
                        oxnet_core::with_dtype!(src.dtype(), T => scatter(src.as_slice::<T>()?, &offs, inner, tmp.as_mut_slice::<T>()?, false));
                        return oxnet_core::store::store(Req::Add, out, &tmp);
                    }
                    _ => out.fill(0.0)?,
                }
                oxnet_core::with_dtype!(src.dtype(), T => scatter(src.as_slice::<T>()?, &offs, inner, out.as_mut_slice::<T>()?, accumulate));
                Ok(())
            })
            .grad_rule(|g| {
                let d = crate::util::call("gather_nd", &[&g.out_grads[0], &g.inputs[1]], &[])?;
                Ok(vec![Some(d), None])
            }),
    );
}

/// `_scatter_set_nd`: `lhs` with the rows at `indices` replaced by `rhs`'s.
fn register_scatter_set() {
    const OP: &str = "_scatter_set_nd";
    registry::register(
        OpDef::new(OP)
            .alias("_npi_scatter_set_nd")
            .doc("lhs with the elements or rows at the index tuples in the columns of `indices` (gather_nd's layout) replaced by those of `rhs`; `shape` is lhs's. Called with out=lhs it assigns in place (advanced-index assignment). Gradients: lhs's with the replaced rows zeroed, rhs's gathered.")
            .arguments(&["lhs", "rhs", "indices"])
            .attr(AttrSpec::required("shape", AttrKind::Ints, "Shape of lhs and of the output."))
            .infer_shape(|attrs, ins, outs| {
                let shape = shape_attr(OP, attrs)?;
                if let Some(idx) = ins[2].clone() {
                    set_shape(&mut ins[1], gathered_shape(OP, &shape, &idx)?, "_scatter_set_nd: rhs")?;
                }
                set_shape(&mut ins[0], shape.clone(), "_scatter_set_nd: lhs")?;
                set_shape(&mut outs[0], shape, "the output of _scatter_set_nd")
            })
            .infer_type(lhs_dtype)
            .forward(|ctx, ins, outs| {
                let (lhs, rhs, out) = (&ins[0], &ins[1], &outs[0]);
                if rhs.dtype() != lhs.dtype() {
                    return Err(Error::DType(format!("{OP}: rhs is {} but lhs is {}", rhs.dtype(), lhs.dtype())));
                }
                let (offs, inner) = row_offsets(OP, lhs.shape(), &ins[2])?;
                let rhs = if rhs.is_contiguous() { rhs.clone() } else { rhs.copy()? };
                let merged = lhs.copy()?;
                oxnet_core::with_dtype!(lhs.dtype(), T => scatter(rhs.as_slice::<T>()?, &offs, inner, merged.as_mut_slice::<T>()?, false));
                if ctx.req[0] == Req::Null {
                    return Ok(());
                }
                oxnet_core::store::store(ctx.req[0], out, &merged)
            })
            .grad_rule(|g| {
                let (dy, rhs, idx) = (&g.out_grads[0], &g.inputs[1], &g.inputs[2]);
                let needs = |i: usize| g.needs_grad.get(i).copied().unwrap_or(false);
                let dl = if needs(0) {
                    let zeros = crate::util::call("zeros_like", &[rhs], &[])?;
                    let shape = ints_attr(dy.shape());
                    Some(crate::util::call(OP, &[dy, &zeros, idx], &[("shape", shape)])?)
                } else {
                    None
                };
                let dr = if needs(1) { Some(crate::util::call("gather_nd", &[dy, idx], &[])?) } else { None };
                Ok(vec![dl, dr, None])
            }),
    );
}

pub(super) fn register() {
    register_scatter_set();
    registry::register(
        OpDef::new("gather_nd")
            .doc("Gathers elements or slices of `data` at the index tuples in the columns of `indices`, of shape (M, Y0, ..., Y(K-1)): the output, of shape (Y0, ..., Y(K-1), XM, ..., X(N-1)), is data[indices[0, y], ..., indices[M-1, y]] at y. Negative indices count from the end; others out of range raise IndexError. The gradient adds up over repeated indices.")
            .arguments(&["data", "indices"])
            .infer_shape(|_, ins, outs| {
                let (Some(d), Some(i)) = (&ins[0], &ins[1]) else { return Ok(()) };
                set_shape(&mut outs[0], gathered_shape("gather_nd", d, i)?, "the output of gather_nd")
            })
            .infer_type(lhs_dtype)
            .forward(|ctx, ins, outs| {
                let (data, out) = (&ins[0], &outs[0]);
                if let Some(done) = gather_integer_elements(ctx.req[0], data, &ins[1], out) {
                    return done;
                }
                let (offs, inner) = row_offsets("gather_nd", data.shape(), &ins[1])?;
                if ctx.req[0] == Req::Null || inner == 0 {
                    return Ok(());
                }
                oxnet_core::with_dtype!(data.dtype(), T => gather(ctx.req[0], data.as_slice::<T>()?, &offs, inner, out.as_mut_slice::<T>()?));
                Ok(())
            })
            .grad_rule(|g| {
                let d = crate::util::call(
                    "_backward_gather_nd",
                    &[&g.out_grads[0], &g.inputs[1]],
                    &[("shape", ints_attr(g.inputs[0].shape()))],
                )?;
                Ok(vec![Some(d), None])
            }),
    );
    register_scatter(
        "scatter_nd",
        false,
        "Scatters the rows of `data` into zeros of `shape` at the index tuples in the columns of `indices` (gather_nd's layout); with repeated indices one of the rows wins.",
    );
    register_scatter(
        "_backward_gather_nd",
        true,
        "Gradient helper of gather_nd: zeros of `shape` into which the rows of `data` are added at the index tuples in the columns of `indices` (repeated indices accumulate).",
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke1, NDArray, Req};

    fn idx(v: &[f64], shape: &[usize]) -> NDArray {
        NDArray::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn gathers_elements_and_rows() {
        let d = iota(&[2, 3]);
        let y = invoke1("gather_nd", &[&d, &idx(&[0., 1., -1., 1., 0., 2.], &[2, 3])], &[]).unwrap();
        assert_eq!(vals(&y), vec![1., 3., 5.]);
        let y = invoke1("gather_nd", &[&d, &idx(&[1., 0., -2.], &[1, 3])], &[]).unwrap();
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(vals(&y), vec![3., 4., 5., 0., 1., 2., 0., 1., 2.]);
        for bad in [3., -4.] {
            let e = err_msg(invoke1("gather_nd", &[&d, &idx(&[0., bad], &[2, 1])], &[]));
            assert!(e.contains("IndexError") && e.contains("axis 1 with size 3"), "{e}");
        }
        let e = err_msg(invoke1("gather_nd", &[&d, &idx(&[0., 0., 0.], &[3, 1])], &[]));
        assert!(e.contains("gather_nd") && e.contains("rank"), "{e}");
    }

    #[test]
    fn scatter_and_accumulating_gradient() {
        let s = invoke1(
            "scatter_nd",
            &[&idx(&[1., 2., 3.], &[3]), &idx(&[0., 0., 1., 1., 1., 2.], &[2, 3])],
            &[("shape", "(2, 3)".into())],
        )
        .unwrap();
        assert_eq!(vals(&s), vec![0., 2., 0., 0., 0., 3.]);
        let d = iota(&[2, 3]);
        d.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            invoke1("gather_nd", &[&d, &idx(&[1., 1., 0., 2., 2., 0.], &[2, 3])], &[]).unwrap()
        };
        y.backward().unwrap();
        assert_eq!(vals(&d.grad().unwrap()), vec![1., 0., 0., 0., 0., 2.]);
    }

    #[test]
    fn many_elements_gather_across_chunks() {
        // more index pairs than one parallel chunk, negative ones included
        let data = iota(&[30, 40]);
        let n = 200_003;
        let rows: Vec<i64> = (0..n).map(|j| (j * 7 % 60) as i64 - 30).collect();
        let cols: Vec<i64> = (0..n).map(|j| (j * 13 % 40) as i64).collect();
        let idx = NDArray::from_vec([rows.clone(), cols.clone()].concat(), &[2, n]).unwrap();
        let got = vals(&invoke1("gather_nd", &[&data, &idx], &[]).unwrap());
        let want: Vec<f64> =
            rows.iter().zip(&cols).map(|(&r, &c)| ((r.rem_euclid(30)) * 40 + c) as f64).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn scatter_set_keeps_what_it_does_not_index() {
        // MXNet's documented example: rows (1, 0) and (1, 1) and (0, 0) of a 2x2 of ones
        let lhs = NDArray::from_vec(vec![1.0f64; 4], &[2, 2]).unwrap();
        let rhs = idx(&[2., 3., 0.], &[3]);
        let indices = idx(&[1., 1., 0., 0., 1., 0.], &[2, 3]);
        let y = invoke1("_scatter_set_nd", &[&lhs, &rhs, &indices], &[("shape", "(2, 2)".into())]).unwrap();
        assert_eq!(vals(&y), vec![0., 1., 2., 3.]);
        // rows of a matrix, in place
        let m = iota(&[3, 2]);
        let rows = idx(&[7., 8., 9., 10.], &[2, 2]);
        oxnet_core::invoke_into(
            &oxnet_core::registry::get("_scatter_set_nd").unwrap(),
            &[&m, &rows, &idx(&[2., 0.], &[1, 2])],
            &oxnet_core::registry::get("_scatter_set_nd")
                .unwrap()
                .parse_attrs(&[("shape", "(3, 2)".into())])
                .unwrap(),
            std::slice::from_ref(&m),
            &[Req::Write],
        )
        .unwrap();
        assert_eq!(vals(&m), vec![9., 10., 2., 3., 7., 8.]);
        let e = invoke1(
            "_scatter_set_nd",
            &[&lhs, &rhs, &idx(&[2., 0., 0.], &[1, 3])],
            &[("shape", "(2, 2)".into())],
        );
        assert!(e.unwrap_err().to_string().contains("_scatter_set_nd"));
        OpChecker::new("_scatter_set_nd", &[iota(&[3, 2]), idx(&[0.5, -1.5], &[1, 2]), idx(&[2.], &[1, 1])])
            .attr("shape", "(3, 2)")
            .no_grad(&[2])
            .run()
            .unwrap();
    }

    #[test]
    fn gradients() {
        let i = idx(&[1., 0., 1., 2., 0., 2.], &[2, 3]);
        OpChecker::new("gather_nd", &[sample(&[2, 3, 2]), i.clone()]).no_grad(&[1]).run().unwrap();
        OpChecker::new("scatter_nd", &[sample(&[3, 2]), idx(&[1., 0., 2.], &[1, 3])])
            .attr("shape", "(3, 2)")
            .no_grad(&[1])
            .run()
            .unwrap();
        OpChecker::new("_backward_gather_nd", &[sample(&[3, 2]), i.clone()])
            .attr("shape", "(2, 3, 2)")
            .no_grad(&[1])
            .run()
            .unwrap();
        check_second_order("gather_nd", &[sample(&[2, 3, 2]), i], &[]);
    }
}
