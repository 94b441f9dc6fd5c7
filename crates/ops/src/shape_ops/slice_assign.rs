//! `_slice_assign` (alias `_crop_assign`) and `_slice_assign_scalar`
//! (alias `_crop_assign_scalar`): a copy of the input with one slice
//! (`begin:end:step` per axis, as `slice` reads them) replaced by an array
//! or a scalar. MXNet calls them with `out=` the input to assign in place,
//! which works here too. MXNet 1.9.1 declares no gradient for them; here
//! the input's gradient is the incoming one with the slice zeroed and the
//! assigned array's is the slice of it.

use super::set_shape;
use super::slice::{params, slice_attrs, sliced_shape};
use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, GradCtx, NDArray, OpContext, OpDef, Req, Result,
};

/// What goes into the slice.
enum Value<'a> {
    Array(&'a NDArray),
    Scalar(f64),
}

/// Writes `lhs` with its slice replaced by `value` into `out` under `req`.
fn assign(ctx: &OpContext, lhs: &NDArray, value: Value, out: &NDArray) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let specs = params(ctx.attrs)?.specs;
    // an assigned array that lives in the output is read before the output is written
    let copied = match &value {
        Value::Array(r) if r.shares_storage(out) => Some(r.copy()?),
        _ => None,
    };
    let value = match (&copied, value) {
        (Some(c), _) => Value::Array(c),
        (None, v) => v,
    };
    let target = if req == Req::Add { lhs.copy()? } else { out.clone() };
    let in_place =
        lhs.shares_storage(&target) && lhs.offset() == target.offset() && lhs.strides() == target.strides();
    if !in_place {
        target.assign_from(lhs)?;
    }
    let view = target.slice(&specs)?;
    match value {
        Value::Array(r) => view.assign_from(r)?,
        Value::Scalar(s) => view.fill(s)?,
    }
    if req == Req::Add {
        store(Req::Add, out, &target)?;
    }
    Ok(())
}

/// The slice attributes of a call, to pass on to `slice` and `_slice_assign_scalar`.
fn slice_attr_list(a: &Attrs) -> Result<Vec<(&'static str, AttrValue)>> {
    Ok(vec![
        ("begin", AttrValue::Str(a.str("begin")?.to_string())),
        ("end", AttrValue::Str(a.str("end")?.to_string())),
        ("step", AttrValue::Str(a.str("step")?.to_string())),
    ])
}

/// The incoming gradient with the slice zeroed.
fn zero_slice(g: &GradCtx) -> Result<NDArray> {
    let mut attrs = slice_attr_list(g.attrs)?;
    attrs.push(("scalar", AttrValue::Float(0.0)));
    call("_slice_assign_scalar", &[&g.out_grads[0]], &attrs)
}

fn assign_grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let needs = |i: usize| g.needs_grad.get(i).copied().unwrap_or(false);
    let dl = if needs(0) { Some(zero_slice(g)?) } else { None };
    let dr =
        if needs(1) { Some(call("slice", &[&g.out_grads[0]], &slice_attr_list(g.attrs)?)?) } else { None };
    Ok(vec![dl, dr])
}

pub(super) fn register() {
    registry::register(
        slice_attrs(
            OpDef::new("_slice_assign").alias("_crop_assign").doc(
                "Returns `lhs` with the slice begin:end:step (as `slice` reads it) replaced by \
                 `rhs`, which must have the slice's shape and lhs's dtype. Called with out=lhs \
                 it assigns in place.",
            ),
            true,
        )
        .arguments(&["lhs", "rhs"])
        .infer_shape(|attrs, ins, outs| {
            let Some(l) = ins[0].clone().or_else(|| outs[0].clone()) else { return Ok(()) };
            let piece = sliced_shape(&l, &params(attrs)?.specs)?;
            set_shape(&mut ins[1], piece, "_slice_assign: rhs (the slice of lhs)")?;
            set_shape(&mut ins[0], l.clone(), "_slice_assign: lhs")?;
            set_shape(&mut outs[0], l, "_slice_assign: the output")
        })
        .accepts_strided()
        .forward(|ctx, ins, outs| {
            let [lhs, rhs] = ins else {
                return Err(Error::Invalid(format!("`{}` takes lhs and rhs", ctx.op_name)));
            };
            assign(ctx, lhs, Value::Array(rhs), &outs[0])
        })
        .grad_rule(assign_grad),
    );
    registry::register(
        slice_attrs(
            OpDef::new("_slice_assign_scalar").alias("_crop_assign_scalar").doc(
                "Returns `data` with every element of the slice begin:end:step (as `slice` \
                 reads it) set to `scalar` (converted to data's dtype). Called with out=data \
                 it assigns in place.",
            ),
            true,
        )
        .attr(AttrSpec::optional("scalar", AttrKind::Float, 0.0, "The value to assign."))
        .infer_shape(|attrs, ins, outs| {
            let Some(x) = ins[0].clone().or_else(|| outs[0].clone()) else { return Ok(()) };
            sliced_shape(&x, &params(attrs)?.specs)?;
            set_shape(&mut ins[0], x.clone(), "_slice_assign_scalar: data")?;
            set_shape(&mut outs[0], x, "_slice_assign_scalar: the output")
        })
        .accepts_strided()
        .forward(|ctx, ins, outs| {
            let [x] = ins else {
                return Err(Error::Invalid(format!("`{}` takes one input", ctx.op_name)));
            };
            assign(ctx, x, Value::Scalar(ctx.attrs.float("scalar")?), &outs[0])
        })
        .grad_rule(|g| {
            let d = if g.needs_grad.first().copied().unwrap_or(false) { Some(zero_slice(g)?) } else { None };
            Ok(vec![d])
        }),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke1, invoke_into, registry, AttrValue, DType, NDArray, Req};

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.into())
    }

    #[test]
    fn assigns_an_array_into_a_strided_slice() {
        let x = NDArray::full(&[3, 4], 1.0, DType::F32, oxnet_core::Device::Cpu).unwrap();
        let r = NDArray::from_vec(vec![5.0f32, 6.0], &[1, 2]).unwrap();
        let attrs = [("begin", s("(1, None)")), ("end", s("(2, None)")), ("step", s("(1, 2)"))];
        let y = invoke1("_slice_assign", &[&x, &r], &attrs).unwrap();
        #[rustfmt::skip]
        let want = vec![1., 1., 1., 1.,  5., 1., 6., 1.,  1., 1., 1., 1.];
        assert_eq!(y.to_vec::<f32>().unwrap(), want);
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0; 12], "the input is untouched");
        let e = invoke1(
            "_crop_assign",
            &[&x, &NDArray::zeros(&[2, 2], DType::F32, oxnet_core::Device::Cpu).unwrap()],
            &attrs,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rhs") && e.contains("[1, 2]") && e.contains("[2, 2]"), "{e}");
    }

    #[test]
    fn assigns_in_place_with_out_as_the_input() {
        // as test_ndarray_crop: out= the input itself
        let x = NDArray::full(&[2, 3, 4], 1.0, DType::F32, oxnet_core::Device::Cpu).unwrap();
        let z = NDArray::zeros(&[2, 1, 3], DType::F32, oxnet_core::Device::Cpu).unwrap();
        let op = registry::get("_crop_assign").unwrap();
        let attrs = op.parse_attrs(&[("begin", s("(0, 0, 0)")), ("end", s("(2, 1, 3)"))]).unwrap();
        invoke_into(&op, &[&x, &z], &attrs, std::slice::from_ref(&x), &[Req::Write]).unwrap();
        let v = x.to_vec::<f32>().unwrap();
        for (i, got) in v.iter().enumerate() {
            let (j, k) = ((i / 4) % 3, i % 4);
            assert_eq!(*got, if j == 0 && k < 3 { 0.0 } else { 1.0 }, "element {i}");
        }
        let op = registry::get("_crop_assign_scalar").unwrap();
        let attrs = op
            .parse_attrs(&[("scalar", 5.0.into()), ("begin", s("(0, 0, 0)")), ("end", s("(2, 1, 3)"))])
            .unwrap();
        invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&x), &[Req::Write]).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap()[..4], [5., 5., 5., 1.]);
    }

    #[test]
    fn scalar_with_negative_steps_and_integer_dtypes() {
        let x = NDArray::full(&[3, 4], 1.0, DType::F32, oxnet_core::Device::Cpu).unwrap();
        let attrs = [
            ("scalar", 3.0.into()),
            ("begin", s("(None, -1)")),
            ("end", s("(None, 0)")),
            ("step", s("(None, -2)")),
        ];
        let y = invoke1("_slice_assign_scalar", &[&x], &attrs).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [1., 3., 1., 3.].repeat(3));
        let i = NDArray::from_vec(vec![1i32; 6], &[2, 3]).unwrap();
        let y = invoke1(
            "_crop_assign_scalar",
            &[&i],
            &[("scalar", 2.7.into()), ("begin", s("(0,)")), ("end", s("(1,)"))],
        )
        .unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i32>().unwrap()), (DType::I32, vec![2, 2, 2, 1, 1, 1]));
    }

    #[test]
    fn gradients_split_at_the_slice() {
        let x = NDArray::from_vec((0..12).map(|v| v as f64 * 0.5).collect::<Vec<_>>(), &[3, 4]).unwrap();
        let r = NDArray::from_vec(vec![-1.0f64, -2.0], &[2, 1]).unwrap();
        let attrs = [("begin", s("(1, 2)")), ("end", s("(3, 3)"))];
        x.attach_grad(Req::Write).unwrap();
        r.attach_grad(Req::Write).unwrap();
        let y = {
            let _rec = autograd::record();
            invoke1("_slice_assign", &[&x, &r], &attrs).unwrap()
        };
        let og = NDArray::from_vec((1..=12).map(|v| v as f64).collect::<Vec<_>>(), &[3, 4]).unwrap();
        autograd::backward(&[&y], &[Some(&og)], Default::default()).unwrap();
        #[rustfmt::skip]
        let want = vec![1., 2., 3., 4.,  5., 6., 0., 8.,  9., 10., 0., 12.];
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), want);
        assert_eq!(r.grad().unwrap().to_vec::<f64>().unwrap(), vec![7., 11.]);
        let mut c = OpChecker::new("_slice_assign", &[x.clone(), r]);
        for (k, v) in &attrs {
            c = c.attr(k, v.clone());
        }
        c.run().unwrap();
        OpChecker::new("_slice_assign_scalar", &[x])
            .attr("scalar", 4.0)
            .attr("begin", "(None, 1)")
            .attr("end", "(2, None)")
            .attr("step", "(1, 2)")
            .run()
            .unwrap();
    }
}
