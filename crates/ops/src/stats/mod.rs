//! Statistics of an array's values: `moments` (mean and variance over
//! axes) and `_histogram` (counts over uniform or given bins; `mx.nd.histogram`
//! and `mx.sym.histogram` are its front-end wrappers).
//!
//! moments is written with operator calls (mean, broadcast arithmetic), and
//! so is its gradient: d mean = g_mean / n and d var = g_var · 2 (x − mean) / n
//! broadcast back over the reduced axes, n the count of reduced elements.
//! The histogram has no gradient, as in MXNet.

mod histogram;

use crate::util::call;
use oxnet_core::store::store;
use oxnet_core::{registry, AttrKind, AttrSpec, AttrValue, Attrs, Error, NDArray, OpDef, Result};

/// Registers this module's operators.
pub(crate) fn register() {
    register_moments();
    histogram::register();
}

/// The `mean` attributes of moments' reduction (`keepdims` as given).
fn mean_attrs(attrs: &Attrs, keepdims: bool) -> Result<Vec<(&'static str, AttrValue)>> {
    let mut a = vec![("keepdims", AttrValue::Bool(keepdims))];
    if let Some(axes) = attrs.opt_ints("axes")? {
        a.push(("axis", AttrValue::Ints(axes.to_vec())));
    }
    Ok(a)
}

/// (mean kept as length-1 axes, variance kept the same way) of `x`.
fn moments_kept(x: &NDArray, attrs: &Attrs) -> Result<(NDArray, NDArray)> {
    let mean = call("mean", &[x], &mean_attrs(attrs, true)?)?;
    let centred = call("broadcast_sub", &[x, &mean], &[])?;
    let var = call("mean", &[&call("square", &[&centred], &[])?], &mean_attrs(attrs, true)?)?;
    Ok((mean, var))
}

fn register_moments() {
    registry::register(
        OpDef::new("moments")
            .doc("The mean and variance of the data over `axes` (all axes when None); keepdims keeps the reduced axes with extent 1.")
            .attr(AttrSpec::optional("axes", AttrKind::OptInts, AttrValue::None, "Array of ints. Axes along which to compute mean and variance."))
            .attr(AttrSpec::optional("keepdims", AttrKind::Bool, false, "produce moments with the same dimensionality as the input."))
            .outputs(&["mean", "var"])
            .infer_shape(|attrs, ins, outs| {
                let Some(x) = &ins[0] else { return Ok(()) };
                let s = reduced_shape(x, attrs)?;
                crate::shape_ops::set_shape(&mut outs[0], s.clone(), "the mean of moments")?;
                crate::shape_ops::set_shape(&mut outs[1], s, "the variance of moments")
            })
            .infer_type(|_, ins, outs| {
                let t = ins[0].or(outs[0]).or(outs[1]);
                if let Some(t) = t {
                    ins[0] = Some(t);
                    outs[0] = Some(t);
                    outs[1] = Some(t);
                }
                Ok(())
            })
            .forward(|ctx, ins, outs| {
                let (mean, var) = moments_kept(&ins[0], ctx.attrs)?;
                store(ctx.req[0], &outs[0], &mean.reshape_to(outs[0].shape())?)?;
                store(ctx.req[1], &outs[1], &var.reshape_to(outs[1].shape())?)
            })
            .grad_rule(|g| {
                let x = &g.inputs[0];
                let mean = call("mean", &[x], &mean_attrs(g.attrs, true)?)?;
                let kept = mean.shape().to_vec();
                let n = (x.size() / mean.size().max(1)).max(1) as f64;
                let as_kept = |a: &NDArray| -> Result<NDArray> {
                    if a.shape() == kept.as_slice() {
                        Ok(a.clone())
                    } else {
                        call("reshape", &[a], &[("shape", crate::shape_ops::ints_attr(&kept))])
                    }
                };
                let (gm, gv) = (as_kept(&g.out_grads[0])?, as_kept(&g.out_grads[1])?);
                let centred = call("broadcast_sub", &[x, &mean], &[])?;
                let dv = call("broadcast_mul", &[&centred, &gv], &[])?;
                let dv = call("_mul_scalar", &[&dv], &[("scalar", AttrValue::Float(2.0 / n))])?;
                let dm = call("_mul_scalar", &[&gm], &[("scalar", AttrValue::Float(1.0 / n))])?;
                Ok(vec![Some(call("broadcast_add", &[&dv, &dm], &[])?)])
            }),
    );
}

/// The shape of moments' outputs.
fn reduced_shape(x: &[usize], attrs: &Attrs) -> Result<oxnet_core::Shape> {
    let keep = attrs.bool("keepdims")?;
    let axes: Vec<usize> = match attrs.opt_ints("axes")? {
        None => (0..x.len()).collect(),
        Some(a) => {
            let mut v = Vec::with_capacity(a.len());
            for &ax in a {
                let ax = oxnet_core::shape::normalize_axis(ax, x.len())
                    .map_err(|e| Error::attr("axes", format!("moments: {e}")))?;
                if v.contains(&ax) {
                    return Err(Error::attr("axes", format!("moments: axis {ax} is given twice in {a:?}")));
                }
                v.push(ax);
            }
            v
        }
    };
    let mut out = oxnet_core::Shape::new();
    for (i, d) in x.iter().enumerate() {
        if !axes.contains(&i) {
            out.push(*d);
        } else if keep {
            out.push(1);
        }
    }
    if out.is_empty() {
        // as MXNet's reductions: a full reduction without keepdims has shape (1,)
        out.push(1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::shape_ops::testutil::*;
    use oxnet_core::check::OpChecker;
    use oxnet_core::invoke;

    #[test]
    fn mean_and_variance() {
        let x = iota(&[2, 3]);
        let outs = invoke("moments", &[&x], &[("axes", "(1,)".into())]).unwrap();
        assert_eq!(outs[0].shape(), &[2]);
        assert_eq!(vals(&outs[0]), vec![1., 4.]);
        assert_eq!(vals(&outs[1]), vec![2. / 3., 2. / 3.]);
        let outs = invoke("moments", &[&x], &[("axes", "(0,)".into()), ("keepdims", true.into())]).unwrap();
        assert_eq!(outs[0].shape(), &[1, 3]);
        assert_eq!(vals(&outs[1]), vec![2.25; 3]);
        let outs = invoke("moments", &[&x], &[]).unwrap();
        assert_eq!((outs[0].shape(), vals(&outs[0])), (&[1usize][..], vec![2.5]));
        let e = err_msg(invoke("moments", &[&x], &[("axes", "(2,)".into())]));
        assert!(e.contains("moments") && e.contains("axes"), "{e}");
    }

    #[test]
    fn gradients() {
        OpChecker::new("moments", &[sample(&[2, 3, 2])]).attr("axes", "(0, 2)").run().unwrap();
        OpChecker::new("moments", &[sample(&[3, 2])])
            .attr("axes", "(1,)")
            .attr("keepdims", true)
            .run()
            .unwrap();
        OpChecker::new("moments", &[sample(&[3, 2])]).run().unwrap();
    }
}
