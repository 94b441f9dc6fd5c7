//! `FullyConnected`: `out = data·weightᵀ + bias`.

use super::{dot_op, fmt_shape, gemm_arrays, reshape_op};
use crate::partial_shape::{merge, merge_dim, product, show};
use crate::util::{call, call_into};
use oxnet_core::attrs::Attrs;
use oxnet_core::shape::{numel, Shape};
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, Error, FloatElement, GradCtx, NDArray, OpContext, OpDef, Req,
    Result,
};

struct Params {
    num_hidden: usize,
    no_bias: bool,
    flatten: bool,
}

fn params(attrs: &Attrs) -> Result<Params> {
    let num_hidden = attrs.int("num_hidden")?;
    if num_hidden < 1 {
        return Err(Error::attr("num_hidden", format!("must be at least 1, got {num_hidden}")));
    }
    Ok(Params {
        num_hidden: num_hidden as usize,
        no_bias: attrs.bool("no_bias")?,
        flatten: attrs.bool("flatten")?,
    })
}

/// `data` as a matrix: `(rows, in_features)` and the number of leading axes
/// forming the rows.
fn data_matrix(data: &[usize], flatten: bool) -> Result<(usize, usize, usize)> {
    if data.is_empty() {
        return Err(Error::Shape("FullyConnected needs data of rank >= 1, got a 0-d array".into()));
    }
    let split = if flatten { 1 } else { data.len() - 1 };
    Ok((numel(&data[..split]), numel(&data[split..]), split))
}

fn out_shape(data: &[usize], p: &Params) -> Shape {
    let mut s: Shape =
        if p.flatten { Shape::from_slice(&data[..1]) } else { Shape::from_slice(&data[..data.len() - 1]) };
    s.push(p.num_hidden);
    s
}

fn fill_or_check(slot: &mut Option<Shape>, want: Shape, what: &str, data: &[usize]) -> Result<()> {
    match slot {
        Some(have) if *have != want => Err(Error::Shape(format!(
            "FullyConnected: {what} has shape {}, but data of shape {} with num_hidden={} needs {}",
            fmt_shape(have),
            fmt_shape(data),
            want.first().copied().unwrap_or(0),
            fmt_shape(&want)
        ))),
        _ => {
            *slot = Some(want);
            Ok(())
        }
    }
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = params(attrs)?;
    let Some(data) = ins[0].clone() else {
        // Without data only the parameter shapes' first axis is known.
        if let Some(w) = &ins[1] {
            if w.len() != 2 || w[0] != p.num_hidden {
                return Err(Error::Shape(format!(
                    "FullyConnected: weight has shape {}, expected (num_hidden={}, in_features)",
                    fmt_shape(w),
                    p.num_hidden
                )));
            }
        }
        return Ok(());
    };
    let (_, k, _) = data_matrix(&data, p.flatten)?;
    fill_or_check(&mut ins[1], Shape::from_slice(&[p.num_hidden, k]), "weight", &data)?;
    if !p.no_bias {
        fill_or_check(&mut ins[2], Shape::from_slice(&[p.num_hidden]), "bias", &data)?;
    }
    let o = out_shape(&data, &p);
    match &outs[0] {
        Some(have) if *have != o => Err(Error::Shape(format!(
            "FullyConnected: the output has shape {}, data of shape {} gives {}",
            fmt_shape(have),
            fmt_shape(&data),
            fmt_shape(&o)
        ))),
        _ => {
            outs[0] = Some(o);
            Ok(())
        }
    }
}

/// FullyConnected's inference over partial shapes (0 = unknown extent): the
/// weight's and bias's shapes from data's known axes, data's leading axes
/// from the output's, and one unknown feature axis of data from the weight.
fn infer_shape_partial(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let p = params(attrs)?;
    // a given weight is checked now; the parameters are filled (as in
    // MXNet) only once data's rank is known
    merge(&mut ins[1].clone(), &[p.num_hidden, 0], "FullyConnected: weight")?;
    if ins[0].is_none() && !p.flatten {
        // without flattening, data has the output's rank
        if let Some(o) = &outs[0] {
            ins[0] = Some(o.iter().copied().take(o.len().saturating_sub(1)).chain([0]).collect());
        }
    }
    let Some(mut data) = ins[0].clone() else { return Ok(()) };
    if !p.no_bias {
        merge(&mut ins[2], &[p.num_hidden], "FullyConnected: bias")?;
    }
    let (_, _, split) = data_matrix(&data, p.flatten)?;
    let out = out_shape(&data, &p);
    merge(&mut outs[0], &out, "FullyConnected: the output")?;
    let o = outs[0].clone().unwrap_or_default();
    for (d, &od) in data[..split].iter_mut().zip(&o) {
        *d = merge_dim(*d, od, "FullyConnected: data's leading axes and the output's")?;
    }
    let features = &mut data[split..];
    let in_features = ins[1].as_ref().map_or(0, |w| w[1]);
    let unknown: Vec<usize> = (0..features.len()).filter(|&i| features[i] == 0).collect();
    if let ([only], true) = (unknown.as_slice(), in_features != 0) {
        let rest: usize = features.iter().filter(|&&d| d != 0).product();
        if in_features % rest != 0 {
            return Err(Error::Shape(format!(
                "FullyConnected: weight has {in_features} input features, which data of shape {} cannot have",
                show(&data)
            )));
        }
        features[*only] = in_features / rest;
    }
    merge(&mut ins[1], &[p.num_hidden, product(&data[split..])], "FullyConnected: weight")?;
    ins[0] = Some(data);
    Ok(())
}

/// Adds `bias` to every row of the `rows x n` matrix `out`.
fn add_bias<T: FloatElement>(out: &mut [T], bias: &[T]) {
    let n = bias.len();
    if n == 0 {
        return;
    }
    for row in out.chunks_exact_mut(n) {
        for (o, b) in row.iter_mut().zip(bias) {
            *o = T::from_compute(o.to_compute() + b.to_compute());
        }
    }
}

fn forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let req = ctx.req[0];
    if req == Req::Null {
        return Ok(());
    }
    let p = params(ctx.attrs)?;
    let (data, weight, out) = (&inputs[0], &inputs[1], &outputs[0]);
    let (m, k, split) = data_matrix(data.shape(), p.flatten)?;
    let n = p.num_hidden;
    oxnet_core::with_float_dtype!(out.dtype(), T => {
        let o = out.as_mut_slice::<T>()?;
        gemm_arrays::<T>(data, (0, split), false, weight, (0, 1), true, o, (1, m, k, n), req == Req::Add)?;
        if !p.no_bias {
            add_bias(o, inputs[2].as_slice::<T>()?);
        }
    });
    Ok(())
}

fn grad(g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let p = params(g.attrs)?;
    let (data, weight, og) = (&g.inputs[0], &g.inputs[1], &g.out_grads[0]);
    let (m, k, _) = data_matrix(data.shape(), p.flatten)?;
    let n = p.num_hidden;
    let mut grads: Vec<Option<NDArray>> = vec![None; g.inputs.len()];
    if m == 0 || k == 0 {
        for (i, x) in g.inputs.iter().enumerate() {
            if g.needs_grad[i] {
                grads[i] = Some(NDArray::zeros_like(x)?);
            }
        }
        return Ok(grads);
    }
    let g2 = reshape_op(og, &[m, n])?;
    if g.needs_grad[0] {
        let dx2 = dot_op(&g2, weight, false, false)?;
        grads[0] = Some(reshape_op(&dx2, data.shape())?);
    }
    // The weight and bias gradients go straight into the variables' buffers
    // when the backward pass offers them (no temporary, no copy).
    let offered = |i: usize, write: &dyn Fn(&NDArray) -> Result<()>| -> Result<bool> {
        match g.grad_into {
            Some(into) => into.compute_into(i, write),
            None => Ok(false),
        }
    };
    let transpose_a = [("transpose_a", AttrValue::Bool(true))];
    let over_batch = [("axis", AttrValue::Int(0))];
    if g.needs_grad[1] {
        let x2 = reshape_op(data, &[m, k])?;
        if !offered(1, &|buf| call_into("dot", &[&g2, &x2], &transpose_a, buf))? {
            grads[1] = Some(dot_op(&g2, &x2, true, false)?);
        }
    }
    if !p.no_bias && g.needs_grad[2] && !offered(2, &|buf| call_into("sum", &[&g2], &over_batch, buf))? {
        grads[2] = Some(call("sum", &[&g2], &over_batch)?);
    }
    Ok(grads)
}

pub(super) fn register() {
    registry::register(
        OpDef::new("FullyConnected")
            .doc(
                "Fully connected layer: `out = data·weightᵀ + bias` with weight of shape \
                 (num_hidden, in_features) and bias (num_hidden,). With `flatten` (default) data \
                 of shape (N, ...) is used as (N, prod(...)); otherwise the product applies to \
                 the last axis. `no_bias` drops the bias input. Weight and bias shapes are \
                 inferred from data.",
            )
            .attr(AttrSpec::required("num_hidden", AttrKind::Int, "Number of output units."))
            .attr(AttrSpec::optional("no_bias", AttrKind::Bool, false, "Whether to omit the bias input."))
            .attr(AttrSpec::optional(
                "flatten",
                AttrKind::Bool,
                true,
                "Whether to collapse all but the first axis of data.",
            ))
            .arguments_fn(|attrs| {
                Ok(if attrs.bool("no_bias")? {
                    vec!["data".into(), "weight".into()]
                } else {
                    vec!["data".into(), "weight".into(), "bias".into()]
                })
            })
            .accepts_strided()
            .infer_shape(infer_shape)
            .infer_shape_partial(infer_shape_partial)
            .forward(|ctx, inputs, outputs| {
                // the bias is read as a slice: make it contiguous
                if inputs.len() > 2 && !inputs[2].is_contiguous() {
                    let mut ins = inputs.to_vec();
                    ins[2] = inputs[2].copy()?;
                    return forward(ctx, &ins, outputs);
                }
                forward(ctx, inputs, outputs)
            })
            .grad_rule(grad),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxnet_core::check::{assert_close, OpChecker};
    use oxnet_core::dispatch::infer_outputs;
    use oxnet_core::{invoke1, DType};

    fn rand(shape: &[usize], dt: DType) -> NDArray {
        NDArray::random_uniform(-1.0, 1.0, shape, dt).unwrap()
    }

    /// out[r][h] = sum_c x[r][c] w[h][c] + b[h], by loops.
    fn reference(
        x: &[f64],
        rows: usize,
        cols: usize,
        w: &[f64],
        b: Option<&[f64]>,
        hidden: usize,
    ) -> Vec<f64> {
        let mut out = vec![0.0; rows * hidden];
        for r in 0..rows {
            for h in 0..hidden {
                let mut s = b.map(|b| b[h]).unwrap_or(0.0);
                for c in 0..cols {
                    s += x[r * cols + c] * w[h * cols + c];
                }
                out[r * hidden + h] = s;
            }
        }
        out
    }

    #[test]
    fn hand_values() {
        let x = NDArray::from_vec(vec![1.0f32, 2., 3., 4.], &[2, 2]).unwrap();
        let w = NDArray::from_vec(vec![1.0f32, 0., 0., 1., 1., 1.], &[3, 2]).unwrap();
        let b = NDArray::from_vec(vec![0.5f32, -0.5, 0.0], &[3]).unwrap();
        let y = invoke1("FullyConnected", &[&x, &w, &b], &[("num_hidden", 3.into())]).unwrap();
        assert_eq!(y.shape(), &[2, 3]);
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.5, 1.5, 3., 3.5, 3.5, 7.]);
        let y = invoke1("FullyConnected", &[&x, &w], &[("num_hidden", 3.into()), ("no_bias", true.into())])
            .unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![1., 2., 3., 3., 4., 7.]);
    }

    #[test]
    fn flatten_and_bias_variants_match_loops_and_gradients() {
        for flatten in [true, false] {
            for no_bias in [false, true] {
                let x = rand(&[2, 3, 4], DType::F64);
                let hidden = 5;
                let cols = if flatten { 12 } else { 4 };
                let rows = 24 / cols;
                let w = rand(&[hidden, cols], DType::F64);
                let b = rand(&[hidden], DType::F64);
                let mut inputs = vec![x.clone(), w.clone()];
                if !no_bias {
                    inputs.push(b.clone());
                }
                let refs: Vec<&NDArray> = inputs.iter().collect();
                let attrs = [
                    ("num_hidden", AttrValue::from(hidden)),
                    ("no_bias", no_bias.into()),
                    ("flatten", flatten.into()),
                ];
                let y = invoke1("FullyConnected", &refs, &attrs).unwrap();
                let want_shape: Vec<usize> = if flatten { vec![2, hidden] } else { vec![2, 3, hidden] };
                assert_eq!(y.shape(), &want_shape[..]);
                let bv = b.to_vec::<f64>().unwrap();
                let want = reference(
                    &x.to_vec().unwrap(),
                    rows,
                    cols,
                    &w.to_vec().unwrap(),
                    (!no_bias).then_some(&bv[..]),
                    hidden,
                );
                oxnet_core::check::compare(
                    "FullyConnected",
                    "values",
                    &y.to_vec().unwrap(),
                    &want,
                    1e-12,
                    1e-12,
                )
                .unwrap();
                OpChecker::new("FullyConnected", &inputs)
                    .attr("num_hidden", hidden)
                    .attr("no_bias", no_bias)
                    .attr("flatten", flatten)
                    .run()
                    .unwrap();
            }
        }
    }

    #[test]
    fn f32_and_half_match_f64() {
        let x = rand(&[8, 20], DType::F64);
        let w = rand(&[6, 20], DType::F64);
        let b = rand(&[6], DType::F64);
        let attrs = [("num_hidden", AttrValue::Int(6))];
        let want = invoke1("FullyConnected", &[&x, &w, &b], &attrs).unwrap();
        for (dt, tol) in [(DType::F32, 1e-5), (DType::BF16, 8e-2), (DType::F16, 2e-2)] {
            let c = |a: &NDArray| a.astype(dt).unwrap();
            let got = invoke1("FullyConnected", &[&c(&x), &c(&w), &c(&b)], &attrs).unwrap();
            assert_eq!(got.dtype(), dt);
            assert_close(&got, &want, tol, tol).unwrap();
        }
    }

    #[test]
    fn infers_weight_and_bias_shapes() {
        let op = registry::get("FullyConnected").unwrap();
        let attrs = op.parse_attrs(&[("num_hidden", 7.into())]).unwrap();
        let mut ins = vec![Some(Shape::from_slice(&[4, 3, 5])), None, None];
        let mut outs = vec![None];
        (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1].as_deref(), Some(&[7usize, 15][..]));
        assert_eq!(ins[2].as_deref(), Some(&[7usize][..]));
        assert_eq!(outs[0].as_deref(), Some(&[4usize, 7][..]));
        let attrs = op
            .parse_attrs(&[("num_hidden", 7.into()), ("flatten", false.into()), ("no_bias", true.into())])
            .unwrap();
        let mut ins = vec![Some(Shape::from_slice(&[4, 3, 5])), None];
        let mut outs = vec![None];
        (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
        assert_eq!(ins[1].as_deref(), Some(&[7usize, 5][..]));
        assert_eq!(outs[0].as_deref(), Some(&[4usize, 3, 7][..]));
        // known shapes are checked, through the dispatcher's inference too
        let attrs = op.parse_attrs(&[("num_hidden", 7.into())]).unwrap();
        let shapes = [Shape::from_slice(&[4, 15]), Shape::from_slice(&[7, 14]), Shape::from_slice(&[7])];
        let e = infer_outputs(&op, &attrs, &shapes, &[DType::F32; 3], 1).unwrap_err().to_string();
        assert!(e.contains("weight") && e.contains("(7, 14)") && e.contains("(7, 15)"), "{e}");
        let shapes = [Shape::from_slice(&[4, 15]), Shape::from_slice(&[7, 15]), Shape::from_slice(&[7])];
        let (s, d) = infer_outputs(&op, &attrs, &shapes, &[DType::F32; 3], 1).unwrap();
        assert_eq!((s[0].as_slice(), d[0]), (&[4usize, 7][..], DType::F32));
    }

    #[test]
    fn errors() {
        let x = rand(&[2, 3], DType::F32);
        let w = rand(&[4, 5], DType::F32);
        let b = rand(&[4], DType::F32);
        let e =
            invoke1("FullyConnected", &[&x, &w, &b], &[("num_hidden", 4.into())]).unwrap_err().to_string();
        assert!(e.contains("(4, 5)") && e.contains("(2, 3)"), "{e}");
        let w = rand(&[4, 3], DType::F32);
        let e = invoke1("FullyConnected", &[&x, &w, &rand(&[3], DType::F32)], &[("num_hidden", 4.into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bias"), "{e}");
        assert!(invoke1("FullyConnected", &[&x, &w], &[("num_hidden", 4.into())]).is_err());
        assert!(invoke1("FullyConnected", &[&x, &w, &b], &[])
            .unwrap_err()
            .to_string()
            .contains("num_hidden"));
        assert!(invoke1("FullyConnected", &[&x, &w, &b], &[("num_hidden", 0.into())]).is_err());
        let xi = NDArray::from_vec(vec![1i32; 6], &[2, 3]).unwrap();
        let wi = NDArray::from_vec(vec![1i32; 12], &[4, 3]).unwrap();
        assert!(invoke1(
            "FullyConnected",
            &[&xi, &wi],
            &[("num_hidden", 4.into()), ("no_bias", true.into())]
        )
        .is_err());
    }

    #[test]
    fn transposed_weight_view_is_not_copied_into_wrong_values() {
        let x = rand(&[3, 4], DType::F32);
        let wt = rand(&[4, 5], DType::F32);
        let w_view = wt.transpose(None).unwrap();
        let got =
            invoke1("FullyConnected", &[&x, &w_view], &[("num_hidden", 5.into()), ("no_bias", true.into())])
                .unwrap();
        let want = invoke1("dot", &[&x, &wt], &[]).unwrap();
        assert_close(&got, &want, 1e-6, 1e-6).unwrap();
    }
}
