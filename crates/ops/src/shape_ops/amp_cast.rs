//! The casts of MXNet's automatic mixed precision: `amp_cast` (one array)
//! and `amp_multicast` (several arrays to one float width). As MXNet
//! 1.9.1's, both cast only the dtypes AMP mixes (float32, float16,
//! bfloat16) and pass any other dtype (float64 included) through.

use super::store_view;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, DType, Error, NDArray, OpDef, Result};

/// `x` as `dtype` (through `cast`, which is differentiable).
fn cast(x: &NDArray, dtype: DType) -> Result<NDArray> {
    crate::util::call("cast", &[x], &[("dtype", AttrValue::DType(dtype))])
}

/// The gradient of a cast: the output gradient cast back to each input's dtype.
fn cast_back(g: &oxnet_core::GradCtx) -> Result<Vec<Option<NDArray>>> {
    g.inputs
        .iter()
        .zip(g.out_grads)
        .zip(g.needs_grad)
        .map(|((x, dy), need)| if *need { cast(dy, x.dtype()).map(Some) } else { Ok(None) })
        .collect()
}

/// The dtypes AMP casts between; others (float64, integers) pass through.
fn is_amp_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F16 | DType::BF16)
}

/// The dtype `amp_multicast` casts its AMP-float inputs to, by MXNet
/// 1.9.1's rule. Widest: float32 when any input (or a known output) is
/// float32, else the first input's dtype (float64 first widens everything
/// to float64, as in MXNet); where MXNet would take a non-float first input
/// (and cast floats to an integer type, a bug) the first AMP float is taken.
/// Narrowest (`cast_narrow`): the last float16 or bfloat16 among them, else
/// float32.
fn common_float(ins: &[DType], outs: &[Option<DType>], narrow: bool) -> DType {
    let all = || ins.iter().copied().chain(outs.iter().flatten().copied());
    if narrow {
        return all().filter(|d| matches!(d, DType::F16 | DType::BF16)).last().unwrap_or(DType::F32);
    }
    if all().any(|d| d == DType::F32) {
        return DType::F32;
    }
    match ins.first() {
        Some(&d) if d.is_float() => d,
        _ => ins.iter().copied().find(|d| is_amp_float(*d)).unwrap_or(DType::F32),
    }
}

fn num_outputs(attrs: &Attrs) -> Result<usize> {
    match attrs.int("num_outputs")? {
        n if n >= 1 => Ok(n as usize),
        n => Err(Error::attr("num_outputs", format!("must be at least 1, got {n}"))),
    }
}

fn numbered(prefix: &str, attrs: &Attrs) -> Result<Vec<String>> {
    Ok((0..num_outputs(attrs)?).map(|i| format!("{prefix}{i}")).collect())
}

pub(super) fn register() {
    registry::register(
        OpDef::new("amp_cast")
            .doc(
                "Casts between float dtypes for automatic mixed precision: a float input becomes \
                 `dtype`, any other input passes unchanged.",
            )
            .attr(AttrSpec::required("dtype", AttrKind::DType, "The float dtype to cast to."))
            .infer_type(|attrs, ins, outs| {
                let dt = attrs.dtype("dtype")?.ok_or_else(|| Error::attr("dtype", "required"))?;
                let Some(x) = ins[0] else { return Ok(()) };
                outs[0] = Some(if is_amp_float(x) { dt } else { x });
                Ok(())
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| store_view(ctx.req[0], &outputs[0], &inputs[0]))
            .grad_rule(cast_back),
    );

    registry::register(
        OpDef::new("amp_multicast")
            .doc(
                "Casts `num_outputs` arrays for automatic mixed precision: the float ones to the \
                 widest float dtype among them (the narrowest with `cast_narrow`); the others \
                 pass unchanged.",
            )
            .attr(AttrSpec::required("num_outputs", AttrKind::Int, "Number of inputs (and outputs)."))
            .attr(AttrSpec::optional(
                "cast_narrow",
                AttrKind::Bool,
                false,
                "Cast to the narrowest float dtype instead of the widest.",
            ))
            .arguments_fn(|attrs| numbered("data", attrs))
            .outputs_fn(|attrs| numbered("output", attrs))
            .arity_fn(|attrs| {
                let n = num_outputs(attrs)?;
                Ok([n, 0, n])
            })
            .infer_shape(|_, ins, outs| {
                for (i, o) in ins.iter().zip(outs.iter_mut()) {
                    if let Some(s) = i {
                        *o = Some(s.clone());
                    }
                }
                Ok(())
            })
            .infer_type(|attrs, ins, outs| {
                let known: Option<Vec<DType>> = ins.iter().copied().collect();
                let Some(known) = known else { return Ok(()) };
                let target = common_float(&known, outs, attrs.bool("cast_narrow")?);
                for (d, o) in known.iter().zip(outs.iter_mut()) {
                    *o = Some(if is_amp_float(*d) { target } else { *d });
                }
                Ok(())
            })
            .accepts_strided()
            .forward(|ctx, inputs, outputs| {
                for ((x, out), req) in inputs.iter().zip(outputs).zip(ctx.req) {
                    store_view(*req, out, x)?;
                }
                Ok(())
            })
            .grad_rule(cast_back),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::check::OpChecker;
    use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray};

    fn array(values: &[f64], dtype: DType) -> NDArray {
        NDArray::from_vec(values.to_vec(), &[values.len()]).unwrap().astype(dtype).unwrap()
    }

    #[test]
    fn amp_cast_casts_floats_and_passes_integers() {
        let x = array(&[1.5, 65504.0, 1e6], DType::F32);
        let y = invoke1("amp_cast", &[&x], &[("dtype", "float16".into())]).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        // float16 rounds 1e6 to infinity, as numpy's astype does
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![1.5, 65504.0, f64::INFINITY]);
        let i = array(&[3.0, 4.0], DType::I32);
        let y = invoke1("amp_cast", &[&i], &[("dtype", "float16".into())]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i32>().unwrap()), (DType::I32, vec![3, 4]));
        let y = invoke1("amp_cast", &[&array(&[0.1], DType::F64)], &[("dtype", "float16".into())]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<f64>().unwrap()), (DType::F64, vec![0.1]));
        OpChecker::new("amp_cast", &[array(&[0.5, -1.25, 2.0], DType::F32)])
            .attr("dtype", "float64")
            // float32 outputs: differences over a step float32 resolves
            .eps(1e-2)
            .tol(1e-3, 1e-3)
            .run()
            .unwrap();
    }

    #[test]
    fn amp_multicast_widens_or_narrows_the_float_inputs() {
        let (a, b, c) = (array(&[1.0], DType::F16), array(&[2.0], DType::F32), array(&[3.0], DType::I64));
        let n = ("num_outputs", AttrValue::Int(3));
        let outs = invoke("amp_multicast", &[&a, &b, &c], &[n.clone()]).unwrap();
        assert_eq!(outs.iter().map(|o| o.dtype()).collect::<Vec<_>>(), [DType::F32, DType::F32, DType::I64]);
        assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![2.0]);
        let outs = invoke("amp_multicast", &[&a, &b, &c], &[n, ("cast_narrow", true.into())]).unwrap();
        assert_eq!(outs.iter().map(|o| o.dtype()).collect::<Vec<_>>(), [DType::F16, DType::F16, DType::I64]);
        // MXNet 1.9.1's rule: float64 passes through but, first, sets the width
        let d = array(&[4.0], DType::F64);
        let two = ("num_outputs", AttrValue::Int(2));
        let dt = |xs: &[&NDArray], narrow: bool| {
            let outs = invoke("amp_multicast", xs, &[two.clone(), ("cast_narrow", narrow.into())]).unwrap();
            outs.iter().map(|o| o.dtype()).collect::<Vec<_>>()
        };
        assert_eq!(dt(&[&d, &a], false), [DType::F64, DType::F64]);
        assert_eq!(dt(&[&a, &d], false), [DType::F16, DType::F64]);
        assert_eq!(dt(&[&d, &b], true), [DType::F64, DType::F32]);
        assert_eq!(dt(&[&c, &a], false), [DType::I64, DType::F16]);
        let e =
            invoke("amp_multicast", &[&a], &[("num_outputs", AttrValue::Int(0))]).unwrap_err().to_string();
        assert!(e.contains("num_outputs"), "{e}");
    }
}
