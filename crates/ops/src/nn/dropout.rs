//! `Dropout`: random zeroing in train mode, identity otherwise.
//!
//! Like MXNet, the operator has a second (hidden) output `mask` holding, for
//! each element, `1/(1-p)` where the element was kept and `0` where it was
//! dropped (all ones when inactive); `output = data * mask` and the gradient
//! is `grad * mask`. With `axes`, the mask has extent 1 on those axes and is
//! broadcast (variational dropout).

use super::mul;
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{broadcast_strides, normalize_axis, numel, Shape};
use oxnet_core::store::store_slice;
use oxnet_core::strided::for_each_offsets;
use oxnet_core::{
    registry, AttrKind, AttrSpec, Element, Error, FloatElement, GradCtx, NDArray, OpContext, OpDef, Req,
    Result,
};
use rand::RngCore;
use std::sync::Arc;

fn prob(attrs: &Attrs) -> Result<f64> {
    let p = attrs.float("p")?;
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::attr("p", format!("must lie in [0, 1], got {p}")));
    }
    Ok(p)
}

fn mask_shape(data: &[usize], attrs: &Attrs) -> Result<Shape> {
    let mut s = Shape::from_slice(data);
    for &a in attrs.ints("axes")? {
        s[normalize_axis(a, data.len())?] = 1;
    }
    Ok(s)
}

/// Whether this call drops anything.
fn active(ctx: &OpContext, p: f64) -> Result<bool> {
    Ok(p > 0.0 && (ctx.is_train || ctx.attrs.str("mode")? == "always"))
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let p = prob(ctx.attrs)?;
    let (x, out, mask_out) = (&inputs[0], &outputs[0], &outputs[1]);
    let mshape = mask_shape(x.shape(), ctx.attrs)?;
    let on = active(ctx, p)?;
    oxnet_core::with_float_dtype!(x.dtype(), T => {
        let n_mask = numel(&mshape);
        let mask: Vec<T> = if on {
            let keep = 1.0 - p;
            // p = 1 scales by 1/0: every element is 0·∞, NaN, as in MXNet 1.9.1
            let table = if keep > 0.0 { [T::zero(), T::from_f64(1.0 / keep)] } else { [T::from_f64(f64::NAN); 2] };
            // keep when a uniform 53-bit draw u·2⁻⁵³ falls below 1-p
            let threshold = (keep * (1u64 << 53) as f64).ceil() as u64;
            let mut flags = vec![0u8; n_mask];
            ctx.with_rng(|rng| {
                for f in flags.iter_mut() {
                    *f = ((rng.next_u64() >> 11) < threshold) as u8;
                }
            });
            flags.iter().map(|&f| table[f as usize]).collect()
        } else {
            vec![T::one(); n_mask]
        };
        let mul1 = |a: T, b: T| T::from_compute(a.to_compute() * b.to_compute());
        if ctx.req[0] != Req::Null {
            let xs = x.as_slice::<T>()?;
            let full = mshape.as_slice() == x.shape();
            if full && ctx.req[0] == Req::Write {
                for ((o, &v), &m) in out.as_mut_slice::<T>()?.iter_mut().zip(xs).zip(&mask) {
                    *o = mul1(v, m);
                }
            } else {
                let mut y = Vec::with_capacity(xs.len());
                if full {
                    y.extend(xs.iter().zip(&mask).map(|(&v, &m)| mul1(v, m)));
                } else {
                    let ms = broadcast_strides(&mshape, &oxnet_core::shape::contiguous_strides(&mshape), x.shape())?;
                    let xst = oxnet_core::shape::contiguous_strides(x.shape());
                    for_each_offsets(x.shape(), [&xst[..], &ms[..]], [0, 0], |[i, j]| {
                        y.push(mul1(xs[i as usize], mask[j as usize]));
                    });
                }
                store_slice(ctx.req[0], out.as_mut_slice::<T>()?, &y);
            }
        }
        store_slice(ctx.req[1], mask_out.as_mut_slice::<T>()?, &mask);
    });
    Ok(())
}

fn grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    if !g.needs_grad[0] {
        return Ok(vec![None]);
    }
    Ok(vec![Some(mul(&g.out_grads[0], &g.outputs[1])?)])
}

pub(super) fn register() {
    registry::register(
        OpDef::new("Dropout")
            .doc(
                "Dropout: in train mode (or with mode='always') each element is zeroed with \
                 probability p and kept ones are scaled by 1/(1-p); otherwise the identity. The \
                 second output `mask` holds the factors applied (1/(1-p) or 0). `axes` shares \
                 one draw along the given axes. Draws come from oxnet's global generator \
                 (reproducible after `random::seed`).",
            )
            .attr(AttrSpec::optional("p", AttrKind::Float, 0.5, "Fraction of the input that gets dropped."))
            .attr(AttrSpec::optional(
                "mode",
                AttrKind::Choice(vec!["training", "always"]),
                "training",
                "Drop only in train mode, or always.",
            ))
            .attr(AttrSpec::optional(
                "axes",
                AttrKind::Ints,
                Vec::<i64>::new(),
                "Axes along which the mask is shared.",
            ))
            .attr(AttrSpec::optional(
                "cudnn_off",
                AttrKind::Bool,
                false,
                "Accepted for compatibility; ignored.",
            ))
            .outputs(&["output", "mask"])
            .visible_outputs(1)
            .prepare(|attrs| {
                prob(attrs)?;
                Ok(Arc::new(()))
            })
            .infer_shape(|attrs, ins, outs| {
                let Some(data) = ins[0].clone().or_else(|| outs[0].clone()) else {
                    return Ok(());
                };
                let mshape = mask_shape(&data, attrs)?;
                let fill = |slot: &mut Option<Shape>, want: Shape, what: &str| match slot {
                    Some(have) if *have != want => Err(Error::Shape(format!(
                        "Dropout: {what} has shape {:?}, expected {:?}",
                        have.as_slice(),
                        want.as_slice()
                    ))),
                    _ => {
                        *slot = Some(want);
                        Ok(())
                    }
                };
                fill(&mut ins[0], data.clone(), "data")?;
                fill(&mut outs[0], data, "output")?;
                fill(&mut outs[1], mshape, "mask")
            })
            .resource(oxnet_core::Resource::Random)
            .forward(forward)
            .grad_rule(grad),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::{autograd, invoke, invoke1, AttrValue, DType, Device};

    fn data(n: usize) -> NDArray {
        NDArray::random_uniform(0.5, 1.5, &[n], DType::F32).unwrap()
    }

    #[test]
    fn identity_in_predict_mode() {
        let _generator = crate::random::generator();
        let x = data(1000);
        let _m = autograd::predict_mode();
        let outs = invoke("Dropout", &[&x], &[("p", 0.5.into())]).unwrap();
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
        assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![1.0; 1000]);
    }

    #[test]
    fn train_mode_drops_about_p_and_scales_the_rest() {
        let _generator = crate::random::generator();
        let n = 100_000;
        let x = data(n);
        let xv = x.to_vec::<f32>().unwrap();
        for p in [0.3, 0.5, 0.8] {
            let outs = {
                let _t = autograd::train_mode();
                invoke("Dropout", &[&x], &[("p", p.into())]).unwrap()
            };
            let y = outs[0].to_vec::<f32>().unwrap();
            let m = outs[1].to_vec::<f32>().unwrap();
            let dropped = y.iter().filter(|v| **v == 0.0).count() as f64 / n as f64;
            assert!((dropped - p).abs() < 0.01, "p={p}: dropped {dropped}");
            let scale = 1.0 / (1.0 - p) as f32;
            for i in 0..n {
                if y[i] != 0.0 {
                    assert!(
                        (y[i] - xv[i] * scale).abs() <= 1e-6 * y[i].abs(),
                        "{} vs {}",
                        y[i],
                        xv[i] * scale
                    );
                    assert_eq!(m[i], scale);
                } else {
                    assert_eq!(m[i], 0.0);
                }
            }
        }
        // p = 1 gives NaN (0·(1/0)) as MXNet 1.9.1; mode=always works outside train mode
        let y = invoke1("Dropout", &[&x], &[("p", 1.0.into()), ("mode", "always".into())]).unwrap();
        assert!(y.to_vec::<f32>().unwrap().iter().all(|v| v.is_nan()));
        let y = invoke1("Dropout", &[&x], &[("p", 0.5.into()), ("mode", "always".into())]).unwrap();
        let dropped = y.to_vec::<f32>().unwrap().iter().filter(|v| **v == 0.0).count() as f64 / n as f64;
        assert!((dropped - 0.5).abs() < 0.01);
    }

    #[test]
    fn gradient_is_grad_times_mask() {
        let _generator = crate::random::generator();
        let x = NDArray::random_uniform(-1.0, 1.0, &[50], DType::F64).unwrap();
        x.attach_grad(Req::Write).unwrap();
        let outs = {
            let _r = autograd::record();
            invoke("Dropout", &[&x], &[("p", 0.4.into())]).unwrap()
        };
        let g = NDArray::random_uniform(-1.0, 1.0, &[50], DType::F64).unwrap();
        autograd::backward(&[&outs[0]], &[Some(&g)], Default::default()).unwrap();
        let (gx, gv, m) = (
            x.grad().unwrap().to_vec::<f64>().unwrap(),
            g.to_vec::<f64>().unwrap(),
            outs[1].to_vec::<f64>().unwrap(),
        );
        assert!(m.contains(&0.0) && m.iter().any(|v| (*v - 1.0 / 0.6).abs() < 1e-12));
        for i in 0..50 {
            assert!((gx[i] - gv[i] * m[i]).abs() < 1e-12);
        }
        // predict-mode gradient is the identity
        let outs = {
            let _r = autograd::record_with(false);
            invoke("Dropout", &[&x], &[("p", 0.4.into())]).unwrap()
        };
        autograd::backward(&[&outs[0]], &[Some(&g)], Default::default()).unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), gv);
    }

    #[test]
    fn op_checks() {
        let _generator = crate::random::generator();
        let x = NDArray::random_uniform(-1.0, 1.0, &[3, 4], DType::F64).unwrap();
        OpChecker::new("Dropout", std::slice::from_ref(&x)).attr("p", 0.0).run().unwrap();
        OpChecker::new("Dropout", std::slice::from_ref(&x))
            .attr("p", 0.0)
            .attr("axes", AttrValue::Ints(vec![0]))
            .run()
            .unwrap();
        let h = x.astype(DType::F16).unwrap();
        let y = invoke1("Dropout", &[&h], &[]).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<f32>().unwrap()), (DType::F16, h.to_vec::<f32>().unwrap()));
    }

    #[test]
    fn axes_share_the_mask() {
        let _generator = crate::random::generator();
        let x = NDArray::ones(&[200, 30], DType::F32, Device::Cpu).unwrap();
        let outs = invoke(
            "Dropout",
            &[&x],
            &[("p", 0.5.into()), ("mode", "always".into()), ("axes", AttrValue::Ints(vec![1]))],
        )
        .unwrap();
        assert_eq!(outs[1].shape(), &[200, 1]);
        let y = outs[0].to_vec::<f32>().unwrap();
        for r in 0..200 {
            let row = &y[r * 30..(r + 1) * 30];
            assert!(row.iter().all(|v| *v == row[0]) && (row[0] == 0.0 || row[0] == 2.0));
        }
        assert!(y.contains(&0.0) && y.contains(&2.0));
    }

    #[test]
    fn errors() {
        let _generator = crate::random::generator();
        let x = data(4);
        assert!(invoke1("Dropout", &[&x], &[("p", 1.5.into())]).unwrap_err().to_string().contains("`p`"));
        assert!(invoke1("Dropout", &[&x], &[("mode", "sometimes".into())]).is_err());
        assert!(invoke1("Dropout", &[&x], &[("axes", AttrValue::Ints(vec![3]))])
            .unwrap_err()
            .to_string()
            .contains("axis 3"));
        let i = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
        assert!(invoke1("Dropout", &[&i], &[]).unwrap_err().to_string().contains("int32"));
    }
}
