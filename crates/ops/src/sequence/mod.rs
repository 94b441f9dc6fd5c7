//! The sequence operators: `SequenceMask`, `SequenceReverse` and
//! `SequenceLast`, over data laid out (max_sequence_length, batch, ...)
//! (`axis` 0) or (batch, max_sequence_length, ...) (`axis` 1), with an
//! optional second input `sequence_length` (batch,) when
//! `use_sequence_length` is set (else every sequence has the full length).
//!
//! SequenceMask writes `value` past each sequence's end; its gradient is the
//! output gradient masked with 0. SequenceReverse reverses each sequence's
//! first `length` steps, a permutation that is its own inverse and so its
//! own gradient. SequenceLast gathers step length - 1 of each sequence; its
//! gradient helper `_backward_SequenceLast` writes rows back there (and its
//! gradient is SequenceLast). All gradients are operator calls.

use crate::shape_ops::{ints_attr, set_shape};
use crate::util::call;
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Element, Error, NDArray, OpDef, Req, Result,
};

/// Registers this module's operators.
pub(crate) fn register() {
    register_mask();
    register_reverse();
    register_last();
}

/// The layout of a call: (steps, batch, inner) and the sequence axis.
#[derive(Clone, Copy)]
struct Layout {
    steps: usize,
    batch: usize,
    inner: usize,
    axis: usize,
}

impl Layout {
    fn of(op: &str, shape: &[usize], attrs: &Attrs, max_axis: usize) -> Result<Layout> {
        let axis = attrs.int("axis")?;
        if axis < 0 || axis as usize > max_axis {
            let allowed = if max_axis == 0 { "0" } else { "0 or 1" };
            return Err(Error::attr(
                "axis",
                format!("{op}: the sequence axis must be {allowed}, got {axis}"),
            ));
        }
        let axis = axis as usize;
        if shape.len() < 2 {
            return Err(Error::Shape(format!(
                "{op}: the data must have at least 2 axes, got shape {shape:?}"
            )));
        }
        let (steps, batch) = if axis == 0 { (shape[0], shape[1]) } else { (shape[1], shape[0]) };
        Ok(Layout { steps, batch, inner: shape[2..].iter().product(), axis })
    }

    /// The offset of step `t` of sequence `b`.
    fn at(&self, t: usize, b: usize) -> usize {
        if self.axis == 0 {
            (t * self.batch + b) * self.inner
        } else {
            (b * self.steps + t) * self.inner
        }
    }
}

/// Each sequence's length: the second input's values (checked to lie in
/// [`min`, steps]) or the full length.
fn lengths(op: &str, ins: &[NDArray], attrs: &Attrs, l: &Layout, min: usize) -> Result<Vec<usize>> {
    if !attrs.bool("use_sequence_length")? {
        return Ok(vec![l.steps; l.batch]);
    }
    let Some(len) = ins.get(1) else {
        return Err(Error::Invalid(format!(
            "{op}: use_sequence_length is set but no sequence_length was given"
        )));
    };
    if len.size() != l.batch {
        return Err(Error::Shape(format!(
            "{op}: sequence_length must have one entry per sequence ({}), got shape {:?}",
            l.batch,
            len.shape()
        )));
    }
    len.to_vec::<f64>()?
        .into_iter()
        .map(|v| {
            if v.is_nan() || v < min as f64 || v > l.steps as f64 {
                Err(Error::Invalid(format!(
                    "{op}: sequence length {v} is out of range [{min}, {}] (the sequence axis' extent)",
                    l.steps
                )))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

fn common(op: OpDef, axis_doc: &'static str) -> OpDef {
    op.attr(AttrSpec::optional(
        "use_sequence_length",
        AttrKind::Bool,
        false,
        "If set to true, this layer takes in an extra input parameter `sequence_length` to specify variable length sequence",
    ))
    .attr(AttrSpec::optional("axis", AttrKind::Int, 0i64, axis_doc))
    .arguments_fn(|attrs| {
        Ok(if attrs.bool("use_sequence_length")? {
            vec!["data".into(), "sequence_length".into()]
        } else {
            vec!["data".into()]
        })
    })
    .infer_type(|_, ins, outs| {
        if let Some(t) = ins[0].or(outs[0]) {
            ins[0] = Some(t);
            outs[0] = Some(t);
        }
        Ok(())
    })
}

/// Checks the shape of `sequence_length` against the data's batch.
fn check_len_shape(op: &str, attrs: &Attrs, ins: &mut [Option<Shape>], l: &Layout) -> Result<()> {
    if attrs.bool("use_sequence_length")? && ins.len() > 1 {
        set_shape(&mut ins[1], Shape::from_slice(&[l.batch]), &format!("sequence_length of {op}"))?;
    }
    Ok(())
}

/// The inputs of a gradient call: the output gradient and, when used, the lengths.
fn grad_inputs<'a>(g: &'a oxnet_core::op::GradCtx, gy: &'a NDArray) -> Vec<&'a NDArray> {
    let mut v = vec![gy];
    v.extend(g.inputs.get(1));
    v
}

fn same_attrs(attrs: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("use_sequence_length", AttrValue::Bool(attrs.bool("use_sequence_length")?)),
        ("axis", AttrValue::Int(attrs.int("axis")?)),
    ])
}

fn grad_len(g: &oxnet_core::op::GradCtx, d: NDArray) -> Vec<Option<NDArray>> {
    let mut v = vec![Some(d)];
    if g.inputs.len() > 1 {
        v.push(None);
    }
    v
}

fn mask_kernel<T: Element>(req: Req, x: &[T], lens: &[usize], l: &Layout, value: T, out: &mut [T]) {
    for b in 0..l.batch {
        for t in 0..l.steps {
            let o = l.at(t, b);
            let (dst, src) = (&mut out[o..o + l.inner], &x[o..o + l.inner]);
            if t < lens[b] {
                oxnet_core::store::store_slice(req, dst, src);
            } else if req == Req::Add {
                dst.iter_mut().for_each(|d| *d = d.add(value));
            } else {
                dst.fill(value);
            }
        }
    }
}

fn reverse_kernel<T: Element>(req: Req, x: &[T], lens: &[usize], l: &Layout, out: &mut [T]) {
    for b in 0..l.batch {
        for t in 0..l.steps {
            let s = if t < lens[b] { lens[b] - 1 - t } else { t };
            let (o, i) = (l.at(t, b), l.at(s, b));
            oxnet_core::store::store_slice(req, &mut out[o..o + l.inner], &x[i..i + l.inner]);
        }
    }
}

fn register_mask() {
    const OP: &str = "SequenceMask";
    registry::register(
        common(OpDef::new(OP), "The sequence axis. Only values of 0 and 1 are currently supported.")
            .doc("Sets the steps of each sequence past its length (sequence_length, when use_sequence_length) to `value`; data is (max_sequence_length, batch, ...) for axis 0, (batch, max_sequence_length, ...) for axis 1.")
            .attr(AttrSpec::optional("value", AttrKind::Float, 0.0, "The value to be used as a mask."))
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = ins[0].clone() else { return Ok(()) };
                let l = Layout::of(OP, &x, attrs, 1)?;
                check_len_shape(OP, attrs, ins, &l)?;
                set_shape(&mut outs[0], x, "the output of SequenceMask")
            })
            .forward(|ctx, ins, outs| {
                let x = &ins[0];
                let l = Layout::of(OP, x.shape(), ctx.attrs, 1)?;
                let lens = lengths(OP, ins, ctx.attrs, &l, 0)?;
                if ctx.req[0] == Req::Null || l.inner == 0 {
                    return Ok(());
                }
                let v = ctx.attrs.float("value")?;
                oxnet_core::with_dtype!(x.dtype(), T => mask_kernel(ctx.req[0], x.as_slice::<T>()?, &lens, &l, T::from_f64(v), outs[0].as_mut_slice::<T>()?));
                Ok(())
            })
            .grad_rule(|g| {
                let mut attrs = same_attrs(g.attrs)?;
                attrs.push(("value", AttrValue::Float(0.0)));
                let d = call(OP, &grad_inputs(g, &g.out_grads[0]), &attrs)?;
                Ok(grad_len(g, d))
            }),
    );
}

fn register_reverse() {
    const OP: &str = "SequenceReverse";
    registry::register(
        common(OpDef::new(OP), "The sequence axis. Only 0 is currently supported.")
            .doc("Reverses the first `length` steps of each sequence (all steps without use_sequence_length); data is (max_sequence_length, batch, ...).")
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = ins[0].clone() else { return Ok(()) };
                let l = Layout::of(OP, &x, attrs, 0)?;
                check_len_shape(OP, attrs, ins, &l)?;
                set_shape(&mut outs[0], x, "the output of SequenceReverse")
            })
            .forward(|ctx, ins, outs| {
                let x = &ins[0];
                let l = Layout::of(OP, x.shape(), ctx.attrs, 0)?;
                let lens = lengths(OP, ins, ctx.attrs, &l, 0)?;
                if ctx.req[0] == Req::Null || l.inner == 0 {
                    return Ok(());
                }
                oxnet_core::with_dtype!(x.dtype(), T => reverse_kernel(ctx.req[0], x.as_slice::<T>()?, &lens, &l, outs[0].as_mut_slice::<T>()?));
                Ok(())
            })
            .grad_rule(|g| {
                let d = call(OP, &grad_inputs(g, &g.out_grads[0]), &same_attrs(g.attrs)?)?;
                Ok(grad_len(g, d))
            }),
    );
}

fn last_kernel<T: Element>(req: Req, x: &[T], lens: &[usize], l: &Layout, out: &mut [T]) {
    for (b, dst) in out.chunks_exact_mut(l.inner).enumerate() {
        let i = l.at(lens[b] - 1, b);
        oxnet_core::store::store_slice(req, dst, &x[i..i + l.inner]);
    }
}

const BACKWARD_LAST: &str = "_backward_SequenceLast";

fn register_last() {
    const OP: &str = "SequenceLast";
    registry::register(
        common(OpDef::new(OP), "The sequence axis. Only values of 0 and 1 are currently supported.")
            .doc("The last step of each sequence (at sequence_length - 1 when use_sequence_length, else the last): (max_sequence_length, batch, ...) becomes (batch, ...) for axis 0, likewise (batch, max_sequence_length, ...) for axis 1.")
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = ins[0].clone() else { return Ok(()) };
                let l = Layout::of(OP, &x, attrs, 1)?;
                check_len_shape(OP, attrs, ins, &l)?;
                let out: Shape = std::iter::once(l.batch).chain(x[2..].iter().copied()).collect();
                set_shape(&mut outs[0], out, "the output of SequenceLast")
            })
            .forward(|ctx, ins, outs| {
                if ins[0].shape()[..2].contains(&0) {
                    return Ok(());
                }
                let x = &ins[0];
                let l = Layout::of(OP, x.shape(), ctx.attrs, 1)?;
                let lens = lengths(OP, ins, ctx.attrs, &l, 1)?;
                if ctx.req[0] == Req::Null || l.inner == 0 {
                    return Ok(());
                }
                oxnet_core::with_dtype!(x.dtype(), T => last_kernel(ctx.req[0], x.as_slice::<T>()?, &lens, &l, outs[0].as_mut_slice::<T>()?));
                Ok(())
            })
            .grad_rule(|g| {
                let mut attrs = same_attrs(g.attrs)?;
                attrs.push(("shape", ints_attr(g.inputs[0].shape())));
                let d = call(BACKWARD_LAST, &grad_inputs(g, &g.out_grads[0]), &attrs)?;
                Ok(grad_len(g, d))
            }),
    );

    registry::register(
        common(OpDef::new(BACKWARD_LAST), "The sequence axis (0 or 1).")
            .doc("Gradient helper of SequenceLast: zeros of `shape` with the rows of the output gradient at each sequence's last step.")
            .attr(AttrSpec::required("shape", AttrKind::Ints, "the shape of SequenceLast's data"))
            .infer_shape(|attrs, ins, outs| {
                let shape: Shape = attrs
                    .ints("shape")?
                    .iter()
                    .map(|d| usize::try_from(*d).map_err(|_| Error::attr("shape", format!("{BACKWARD_LAST}: extent {d} is negative"))))
                    .collect::<Result<_>>()?;
                crate::shape_ops::check_size(&shape, BACKWARD_LAST)?;
                let l = Layout::of(BACKWARD_LAST, &shape, attrs, 1)?;
                check_len_shape(BACKWARD_LAST, attrs, ins, &l)?;
                let g: Shape = std::iter::once(l.batch).chain(shape[2..].iter().copied()).collect();
                set_shape(&mut ins[0], g, "the output gradient of SequenceLast")?;
                set_shape(&mut outs[0], shape, "the gradient of SequenceLast")
            })
            .forward(|ctx, ins, outs| {
                let (g, out) = (&ins[0], &outs[0]);
                let l = Layout::of(BACKWARD_LAST, out.shape(), ctx.attrs, 1)?;
                match ctx.req[0] {
                    Req::Null => return Ok(()),
                    Req::Add => {}
                    _ => out.fill(0.0)?,
                }
                if l.inner == 0 || l.steps == 0 || l.batch == 0 {
                    return Ok(());
                }
                let lens = lengths(BACKWARD_LAST, ins, ctx.attrs, &l, 1)?;
                oxnet_core::with_dtype!(g.dtype(), T => {
                    let (gs, os) = (g.as_slice::<T>()?, out.as_mut_slice::<T>()?);
                    for (b, row) in gs.chunks_exact(l.inner).enumerate() {
                        let i = l.at(lens[b] - 1, b);
                        for (d, v) in os[i..i + l.inner].iter_mut().zip(row) {
                            *d = d.add(*v);
                        }
                    }
                });
                Ok(())
            })
            .grad_rule(|g| {
                let d = call(OP, &grad_inputs(g, &g.out_grads[0]), &same_attrs(g.attrs)?)?;
                Ok(grad_len(g, d))
            }),
    );
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke1, AttrValue, NDArray};

    fn lens(v: &[f64]) -> NDArray {
        NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    fn with_len(axis: i64) -> Vec<(&'static str, AttrValue)> {
        vec![("use_sequence_length", true.into()), ("axis", axis.into())]
    }

    #[test]
    fn mask() {
        // (T=3, N=2): lengths 1 and 3
        let x = iota(&[3, 2]);
        let mut a = with_len(0);
        a.push(("value", (-1.0).into()));
        let y = invoke1("SequenceMask", &[&x, &lens(&[1., 3.])], &a).unwrap();
        assert_eq!(vals(&y), vec![0., 1., -1., 3., -1., 5.]);
        // axis 1: (N=2, T=3)
        let y = invoke1("SequenceMask", &[&x.reshape_to(&[2, 3]).unwrap(), &lens(&[2., 0.])], &with_len(1))
            .unwrap();
        assert_eq!(vals(&y), vec![0., 1., 0., 0., 0., 0.]);
        assert_eq!(vals(&invoke1("SequenceMask", &[&x], &[]).unwrap()), vals(&x));
        let e = err_msg(invoke1("SequenceMask", &[&x, &lens(&[4., 1.])], &with_len(0)));
        assert!(e.contains("SequenceMask") && e.contains("out of range"), "{e}");
        let e = err_msg(invoke1("SequenceMask", &[&x], &[("axis", 2i64.into())]));
        assert!(e.contains("axis") && e.contains("0 or 1"), "{e}");
    }

    #[test]
    fn reverse() {
        let x = iota(&[3, 2]);
        let y = invoke1("SequenceReverse", &[&x], &[]).unwrap();
        assert_eq!(vals(&y), vec![4., 5., 2., 3., 0., 1.]);
        let y = invoke1("SequenceReverse", &[&x, &lens(&[2., 3.])], &with_len(0)).unwrap();
        assert_eq!(vals(&y), vec![2., 5., 0., 3., 4., 1.]);
        let e = err_msg(invoke1("SequenceReverse", &[&x], &[("axis", 1i64.into())]));
        assert!(e.contains("must be 0"), "{e}");
    }

    #[test]
    fn last() {
        let x = iota(&[3, 2, 2]);
        let y = invoke1("SequenceLast", &[&x], &[]).unwrap();
        assert_eq!((y.shape(), vals(&y)), (&[2usize, 2][..], vec![8., 9., 10., 11.]));
        let y = invoke1("SequenceLast", &[&x, &lens(&[1., 2.])], &with_len(0)).unwrap();
        assert_eq!(vals(&y), vec![0., 1., 6., 7.]);
        // axis 1: (N=3, T=2, 2)
        let y = invoke1("SequenceLast", &[&x, &lens(&[1., 2., 2.])], &with_len(1)).unwrap();
        assert_eq!(vals(&y), vec![0., 1., 6., 7., 10., 11.]);
    }

    #[test]
    fn gradients() {
        for op in ["SequenceMask", "SequenceReverse", "SequenceLast"] {
            OpChecker::new(op, &[sample(&[3, 2, 2])]).run().unwrap();
            OpChecker::new(op, &[sample(&[3, 2, 2]), lens(&[2., 1.])])
                .attr("use_sequence_length", true)
                .no_grad(&[1])
                .run()
                .unwrap();
            check_second_order(op, &[sample(&[3, 2]), lens(&[3., 1.])], &with_len(0));
        }
        OpChecker::new("SequenceLast", &[sample(&[2, 3]), lens(&[2., 3.])])
            .attr("use_sequence_length", true)
            .attr("axis", 1i64)
            .no_grad(&[1])
            .run()
            .unwrap();
    }
}
