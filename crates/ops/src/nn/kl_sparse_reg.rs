//! `IdentityAttachKLSparseReg`: the identity forward whose backward adds
//! the gradient of a KL-divergence sparseness penalty on the mean
//! activation of each unit (Hinton's practical guide, p. 11), as MXNet
//! 1.9.1 defines it. Meant to follow a sigmoid.
//!
//! For data (N, D) the backward pass first moves the auxiliary state
//! `moving_avg` (D,) towards the batch mean of each column,
//! `moving = momentum·moving + (1 - momentum)·mean`, then returns
//! `dx = dy + penalty·(-target / moving + (1 - target) / (1 - moving))`
//! per column (`target` is `sparseness_target`).

use oxnet_core::attrs::Attrs;
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrKind, AttrSpec, BackwardArgs, BackwardDeps, Error, NDArray, OpContext, OpDef, Req, Result,
};

const OP: &str = "IdentityAttachKLSparseReg";

struct Params {
    target: f64,
    penalty: f64,
    momentum: f64,
}

fn params(attrs: &Attrs) -> Result<Params> {
    let p = Params {
        target: attrs.float("sparseness_target")?,
        penalty: attrs.float("penalty")?,
        momentum: attrs.float("momentum")?,
    };
    for (name, v) in [("sparseness_target", p.target), ("momentum", p.momentum)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(Error::attr(name, format!("{OP}: must lie in [0, 1], got {v}")));
        }
    }
    Ok(p)
}

/// (N, D) of the 2-D data.
fn rows_cols(shape: &[usize]) -> Result<(usize, usize)> {
    match *shape {
        [n, d] => Ok((n, d)),
        _ => Err(Error::Shape(format!("{OP}: data must be 2-D (batch, units), got shape {shape:?}"))),
    }
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let p = params(ctx.attrs)?;
    let missing = || Error::Autograd(format!("{OP}: the backward kernel lacks a saved array"));
    let dy = args.out_grads[0].as_ref().ok_or_else(missing)?;
    let data = args.inputs[0].as_ref().ok_or_else(missing)?;
    let moving = args.inputs[1].as_ref().ok_or_else(missing)?;
    let (n, d) = rows_cols(data.shape())?;
    let x = data.to_vec::<f64>()?;
    let mut avg = moving.to_vec::<f64>()?;
    for (j, m) in avg.iter_mut().enumerate() {
        let mean = (0..n).map(|i| x[i * d + j]).sum::<f64>() / n.max(1) as f64;
        *m = p.momentum * *m + (1.0 - p.momentum) * mean;
    }
    oxnet_core::store::store(
        Req::Write,
        moving,
        &NDArray::from_vec(avg.clone(), &[d])?.astype(moving.dtype())?,
    )?;
    let extra: Vec<f64> =
        avg.iter().map(|m| p.penalty * (-p.target / m + (1.0 - p.target) / (1.0 - m))).collect();
    let dx: Vec<f64> = dy.to_vec::<f64>()?.iter().enumerate().map(|(k, g)| g + extra[k % d.max(1)]).collect();
    oxnet_core::store::store(ctx.req[0], &grads[0], &NDArray::from_vec(dx, &[n, d])?.astype(data.dtype())?)?;
    // the moving average gets no gradient
    if ctx.req.get(1) == Some(&Req::Write) {
        grads[1].fill(0.0)?;
    }
    Ok(())
}

pub(super) fn register() {
    registry::register(
        OpDef::new(OP)
            .doc(
                "The identity on (batch, units) data whose backward adds a KL sparseness penalty: \
                 moving_avg (an auxiliary state) moves to the batch mean of each unit, \
                 moving = momentum·moving + (1 - momentum)·mean, and the gradient gains \
                 penalty·(-target/moving + (1 - target)/(1 - moving)). Use after a sigmoid.",
            )
            .attr(AttrSpec::optional("sparseness_target", AttrKind::Float, 0.1, "The sparseness target."))
            .attr(AttrSpec::optional("penalty", AttrKind::Float, 0.001, "The weight of the penalty."))
            .attr(AttrSpec::optional("momentum", AttrKind::Float, 0.9, "The momentum of the moving average."))
            .arguments(&["data"])
            .aux_states(&["moving_avg"])
            .mutate_inputs(|_| vec![1])
            .prepare(|attrs| {
                params(attrs)?;
                Ok(std::sync::Arc::new(()))
            })
            .infer_shape(|_, ins, outs| {
                let Some(x) = ins[0].clone() else { return Ok(()) };
                let (_, d) = rows_cols(&x)?;
                crate::shape_ops::set_shape(&mut ins[1], Shape::from_slice(&[d]), "moving_avg")?;
                crate::shape_ops::set_shape(&mut outs[0], x, "the output")
            })
            .accepts_strided()
            .forward(|ctx, ins, outs| oxnet_core::store::store(ctx.req[0], &outs[0], &ins[0]))
            .backward(|_| BackwardDeps { out_grads: vec![0], inputs: vec![0, 1], outputs: vec![] }, backward),
    );
}

#[cfg(test)]
mod tests {
    use oxnet_core::{autograd, invoke, NDArray, Req};

    #[test]
    fn backward_moves_the_average_and_adds_the_penalty() {
        let x = NDArray::from_vec(vec![0.2f64, 0.6, 0.4, 0.8], &[2, 2]).unwrap();
        let moving = NDArray::from_vec(vec![0.5f64, 0.5], &[2]).unwrap();
        x.attach_grad(Req::Write).unwrap();
        let attrs = [("penalty", 0.01.into()), ("momentum", 0.5.into()), ("sparseness_target", 0.2.into())];
        let y = {
            let _r = autograd::record();
            invoke("IdentityAttachKLSparseReg", &[&x, &moving], &attrs).unwrap().remove(0)
        };
        assert_eq!(y.to_vec::<f64>().unwrap(), x.to_vec::<f64>().unwrap());
        let head = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        autograd::backward(&[&y], &[Some(&head)], Default::default()).unwrap();
        // column means 0.3 and 0.7: moving = 0.5·0.5 + 0.5·mean = 0.4 and 0.6
        let m = moving.to_vec::<f64>().unwrap();
        assert!((m[0] - 0.4).abs() < 1e-15 && (m[1] - 0.6).abs() < 1e-15, "{m:?}");
        let extra = |m: f64| 0.01 * (-0.2 / m + 0.8 / (1.0 - m));
        let want = [1.0 + extra(0.4), 2.0 + extra(0.6), 3.0 + extra(0.4), 4.0 + extra(0.6)];
        for (g, w) in x.grad().unwrap().to_vec::<f64>().unwrap().iter().zip(want) {
            assert!((g - w).abs() < 1e-14, "{g} vs {w}");
        }
    }

    #[test]
    fn data_must_be_a_matrix() {
        let x = NDArray::from_vec(vec![0.5f64; 8], &[2, 2, 2]).unwrap();
        let e = invoke(
            "IdentityAttachKLSparseReg",
            &[&x, &NDArray::from_vec(vec![0.5f64; 2], &[2]).unwrap()],
            &[],
        );
        assert!(e.unwrap_err().to_string().contains("2-D"));
    }
}
