//! `LeakyReLU` with act_type `prelu` and `rrelu`, and `Embedding`: values
//! against hand-computed numbers, gradients against central differences
//! (the op checker), second order, shape and dtype inference with unknown
//! weight / gamma shapes, and errors.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{invoke, invoke1, random, registry, AttrValue, DType, NDArray, Req, Shape};
use oxnet_ops as _; // the built-in operators these tests call

/// Tests here draw from the process-wide generator (random inputs, the op
/// checker's projections, rrelu's slopes) and one reseeds it to compare two
/// runs: each test holds this lock so that no other draws in between.
static RNG_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    RNG_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_slice(v, shape).unwrap()
}

fn vals(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(what: &str, got: &[f64], want: &[f64]) {
    compare("test", what, got, want, 1e-12, 1e-12).unwrap();
}

fn prelu_attrs() -> [(&'static str, AttrValue); 1] {
    [("act_type", "prelu".into())]
}

/// Data (2, 3, 2): batch 0 then batch 1, channels of two elements.
fn prelu_data() -> NDArray {
    arr(&[-1., 2., -3., 4., 0.5, -6., 7., -8., -9., -10., 11., 12.], &[2, 3, 2])
}

/// Runs shape inference of `op` with `attrs` on the given slots.
fn infer(
    op: &str,
    attrs: &[(&str, AttrValue)],
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> oxnet_core::Result<()> {
    let op = registry::get(op).unwrap();
    let attrs = op.parse_attrs(attrs).unwrap();
    (op.infer_shape)(&attrs, ins, outs)
}

/// A gamma layout: its shape, its values, and the slope of element (n, c, ..).
type Layout = (Vec<usize>, Vec<f64>, Box<dyn Fn(usize, usize) -> f64>);

fn shape(s: &[usize]) -> Option<Shape> {
    Some(Shape::from_slice(s))
}

// ----- prelu ------------------------------------------------------------------------

#[test]
fn prelu_per_channel_values_and_gradients() {
    let _rng = rng_lock();
    let x = prelu_data();
    let gamma = arr(&[0.1, 0.2, 0.3], &[3]);
    let y = invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap();
    assert_eq!(y.shape(), &[2, 3, 2]);
    close("prelu (3,)", &vals(&y), &[-0.1, 2., -0.6, 4., 0.5, -1.8, 7., -0.8, -1.8, -2.0, 11., 12.]);
    // gradients with a head of ones: slopes for x, sums of negative parts for gamma
    x.attach_grad(Req::Write).unwrap();
    gamma.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap()
    };
    y.backward().unwrap();
    close("dx", &vals(&x.grad().unwrap()), &[0.1, 1., 0.2, 1., 1., 0.3, 1., 0.1, 0.2, 0.2, 1., 1.]);
    close("dgamma", &vals(&gamma.grad().unwrap()), &[-9., -22., -6.]);
}

#[test]
fn prelu_gamma_layouts_follow_mxnet() {
    let _rng = rng_lock();
    let x = prelu_data();
    let xv = vals(&x);
    // slope of element (n, c, k) for each gamma layout
    let cases: Vec<Layout> = vec![
        (vec![1], vec![0.5], Box::new(|_, _| 0.5)),
        (vec![], vec![0.25], Box::new(|_, _| 0.25)),
        // (2,) does not match axis 1 (extent 3), so it lies along axis 0
        (vec![2], vec![0.1, 0.2], Box::new(|n, _| [0.1, 0.2][n])),
        (vec![2, 1], vec![0.1, 0.2], Box::new(|n, _| [0.1, 0.2][n])),
        (vec![1, 3], vec![0.1, 0.2, 0.3], Box::new(|_, c| [0.1, 0.2, 0.3][c])),
        (vec![2, 3], vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6], Box::new(|n, c| 0.1 * (3 * n + c + 1) as f64)),
    ];
    for (gshape, gv, slope) in cases {
        let gamma = arr(&gv, &gshape);
        let y = vals(&invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap());
        let mut want = Vec::new();
        for n in 0..2 {
            for c in 0..3 {
                for k in 0..2 {
                    let v = xv[(n * 3 + c) * 2 + k];
                    want.push(if v > 0.0 { v } else { slope(n, c) * v });
                }
            }
        }
        compare("prelu", &format!("gamma {gshape:?}"), &y, &want, 1e-12, 1e-12).unwrap();
        OpChecker::new("LeakyReLU", &[x.clone(), gamma.clone()]).attr("act_type", "prelu").run().unwrap();
    }
    // gamma that fits neither axis 1 nor axis 0 is an error naming both shapes
    for bad in [vec![4usize], vec![2, 3, 2], vec![3, 2]] {
        let n: usize = bad.iter().product();
        let gamma = NDArray::from_vec(vec![0.5f64; n], &bad).unwrap();
        let e = invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap_err().to_string();
        assert!(e.contains("gamma") && e.contains("[2, 3, 2]"), "{e}");
    }
}

#[test]
fn prelu_nchw_matches_a_loop_in_every_float_dtype() {
    let _rng = rng_lock();
    let x = NDArray::random_uniform(-1.0, 1.0, &[2, 3, 4, 5], DType::F64).unwrap();
    let gamma = arr(&[0.1, -0.2, 0.7], &[3]);
    let xv = vals(&x);
    let want: Vec<f64> = xv
        .iter()
        .enumerate()
        .map(|(i, &v)| if v > 0.0 { v } else { [0.1, -0.2, 0.7][(i / 20) % 3] * v })
        .collect();
    let y = invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap();
    close("f64", &vals(&y), &want);
    for (dt, tol) in [(DType::F32, 1e-6), (DType::F16, 2e-3), (DType::BF16, 2e-2)] {
        let y = invoke1("LeakyReLU", &[&x.astype(dt).unwrap(), &gamma.astype(dt).unwrap()], &prelu_attrs())
            .unwrap();
        assert_eq!(y.dtype(), dt);
        compare("prelu", &format!("{dt}"), &vals(&y), &want, tol, tol).unwrap();
    }
    // numeric gradients of both inputs on a smaller NCHW input
    let x = NDArray::random_uniform(-1.0, 1.0, &[2, 3, 2, 2], DType::F64).unwrap();
    OpChecker::new("LeakyReLU", &[x, gamma]).attr("act_type", "prelu").run().unwrap();
    // mixed dtypes and integer data are errors
    let e = invoke1(
        "LeakyReLU",
        &[&prelu_data(), &arr(&[0.5], &[1]).astype(DType::F32).unwrap()],
        &prelu_attrs(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("LeakyReLU") && e.contains("float"), "{e}");
}

#[test]
fn prelu_second_order() {
    let _rng = rng_lock();
    let x = prelu_data();
    let gamma = arr(&[0.1, 0.2, 0.3], &[3]);
    x.attach_grad(Req::Write).unwrap();
    gamma.attach_grad(Req::Write).unwrap();
    let v = NDArray::random_uniform(0.5, 1.5, &[2, 3, 2], DType::F64).unwrap();
    let u = NDArray::random_uniform(0.5, 1.5, &[2, 3, 2], DType::F64).unwrap();
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    // d/dgamma of <u, dL/dx> with dL/dx = v·(x > 0 ? 1 : gamma): sum over the channel of u·v·[x <= 0]
    let y = {
        let _r = autograd::record();
        invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap()
    };
    let gx = autograd::grad(&[&y], &[&x], &[Some(&v)], opts).unwrap().remove(0);
    autograd::backward(&[&gx], &[Some(&u)], BackwardOptions::default()).unwrap();
    let (xv, vv, uv) = (vals(&x), vals(&v), vals(&u));
    let mut want = [0.0; 3];
    for i in 0..12 {
        if xv[i] <= 0.0 {
            want[(i / 2) % 3] += uv[i] * vv[i];
        }
    }
    close("d2/dgamma dx", &vals(&gamma.grad().unwrap()), &want);
    // d/dx of <w, dL/dgamma> with dL/dgamma_c = sum v·min(x, 0): w_c·v·[x <= 0]
    let w = arr(&[1.5, -2.0, 0.25], &[3]);
    let y = {
        let _r = autograd::record();
        invoke1("LeakyReLU", &[&x, &gamma], &prelu_attrs()).unwrap()
    };
    let gg = autograd::grad(&[&y], &[&gamma], &[Some(&v)], opts).unwrap().remove(0);
    autograd::backward(&[&gg], &[Some(&w)], BackwardOptions::default()).unwrap();
    let want: Vec<f64> =
        (0..12).map(|i| if xv[i] <= 0.0 { vals(&w)[(i / 2) % 3] * vv[i] } else { 0.0 }).collect();
    close("d2/dx dgamma", &vals(&x.grad().unwrap()), &want);
}

#[test]
fn prelu_names_and_shape_inference() {
    let _rng = rng_lock();
    let op = registry::get("LeakyReLU").unwrap();
    let attrs = op.parse_attrs(&prelu_attrs()).unwrap();
    assert_eq!((op.arguments)(&attrs).unwrap(), vec!["data", "gamma"]);
    assert_eq!((op.outputs)(&attrs).unwrap(), vec!["output"]);
    let leaky = op.parse_attrs(&[]).unwrap();
    assert_eq!((op.arguments)(&leaky).unwrap(), vec!["data"]);
    // an unknown gamma becomes (data.shape[1],)
    let (mut ins, mut outs) = (vec![shape(&[4, 16, 5, 5]), None], vec![None]);
    infer("LeakyReLU", &prelu_attrs(), &mut ins, &mut outs).unwrap();
    assert_eq!(ins[1], shape(&[16]));
    assert_eq!(outs[0], shape(&[4, 16, 5, 5]));
    // a known gamma is kept; the data's shape comes back from the output
    let (mut ins, mut outs) = (vec![None, shape(&[1])], vec![shape(&[2, 3])]);
    infer("LeakyReLU", &prelu_attrs(), &mut ins, &mut outs).unwrap();
    assert_eq!((ins[0].clone(), ins[1].clone()), (shape(&[2, 3]), shape(&[1])));
    // nothing known: nothing filled, no error
    let (mut ins, mut outs) = (vec![None, shape(&[3])], vec![None]);
    infer("LeakyReLU", &prelu_attrs(), &mut ins, &mut outs).unwrap();
    assert_eq!((ins[0].clone(), outs[0].clone()), (None, None));
    // a gamma that cannot lie over the data, and rank-1 data with an unknown gamma, are errors
    let (mut ins, mut outs) = (vec![shape(&[2, 3]), shape(&[4])], vec![None]);
    let e = infer("LeakyReLU", &prelu_attrs(), &mut ins, &mut outs).unwrap_err().to_string();
    assert!(e.contains("gamma"), "{e}");
    let (mut ins, mut outs) = (vec![shape(&[5]), None], vec![None]);
    let e = infer("LeakyReLU", &prelu_attrs(), &mut ins, &mut outs).unwrap_err().to_string();
    assert!(e.contains("gamma") && e.contains("rank"), "{e}");
    // rank-1 data with a given gamma works: (1,) or (n,)
    let x = arr(&[-1., 2., -3.], &[3]);
    let y = invoke1("LeakyReLU", &[&x, &arr(&[0.5], &[1])], &prelu_attrs()).unwrap();
    close("1-d", &vals(&y), &[-0.5, 2., -1.5]);
    let y = invoke1("LeakyReLU", &[&x, &arr(&[0.5, 1., 2.], &[3])], &prelu_attrs()).unwrap();
    close("1-d per element", &vals(&y), &[-0.5, 2., -6.]);
    // gamma missing is an error, not a panic
    let e = invoke("LeakyReLU", &[&x], &prelu_attrs()).unwrap_err().to_string();
    assert!(e.contains("LeakyReLU"), "{e}");
}

// ----- rrelu ------------------------------------------------------------------------

fn rrelu_attrs(lo: f64, hi: f64) -> [(&'static str, AttrValue); 3] {
    [("act_type", "rrelu".into()), ("lower_bound", lo.into()), ("upper_bound", hi.into())]
}

#[test]
fn rrelu_predict_mode_uses_the_mean_slope() {
    let _rng = rng_lock();
    let x = arr(&[-1., 2., 0., -4.], &[2, 2]);
    let outs = {
        let _p = autograd::predict_mode();
        invoke("LeakyReLU", &[&x], &[("act_type", "rrelu".into())]).unwrap()
    };
    assert_eq!(outs.len(), 2, "rrelu shows its mask, as MXNet does");
    let mean = (0.125 + 0.334) / 2.0;
    close("output", &vals(&outs[0]), &[-mean, 2., 0., -4. * mean]);
    close("mask", &vals(&outs[1]), &[mean; 4]);
    let op = registry::get("LeakyReLU").unwrap();
    let attrs = op.parse_attrs(&rrelu_attrs(0.1, 0.3)).unwrap();
    assert_eq!((op.outputs)(&attrs).unwrap(), vec!["output", "mask"]);
    // the predict-mode gradient against central differences
    let x = arr(&[-1.3, 0.7, -0.2, 2.5, -3.0, 0.4], &[2, 3]);
    let head = arr(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record_with(false);
        invoke("LeakyReLU", &[&x], &rrelu_attrs(0.1, 0.3)).unwrap().remove(0)
    };
    autograd::backward(&[&y], &[Some(&head)], BackwardOptions::default()).unwrap();
    let loss = |v: Vec<f64>| -> f64 {
        let _p = autograd::predict_mode();
        let y = invoke("LeakyReLU", &[&arr(&v, &[2, 3])], &rrelu_attrs(0.1, 0.3)).unwrap().remove(0);
        vals(&y).iter().zip(vals(&head)).map(|(a, b)| a * b).sum()
    };
    let base = vals(&x);
    let numeric: Vec<f64> = (0..6)
        .map(|j| {
            let (mut p, mut m) = (base.clone(), base.clone());
            p[j] += 1e-6;
            m[j] -= 1e-6;
            (loss(p) - loss(m)) / 2e-6
        })
        .collect();
    compare("rrelu", "predict-mode gradient", &vals(&x.grad().unwrap()), &numeric, 1e-6, 1e-8).unwrap();
}

#[test]
fn rrelu_train_mode_draws_slopes_in_bounds() {
    let _rng = rng_lock();
    let n = 20_000;
    let x = NDArray::from_vec(vec![-2.0f32; n], &[n]).unwrap();
    random::seed(7);
    let outs = {
        let _t = autograd::train_mode();
        invoke("LeakyReLU", &[&x], &rrelu_attrs(0.1, 0.3)).unwrap()
    };
    let (y, mask) = (outs[0].to_vec::<f32>().unwrap(), outs[1].to_vec::<f32>().unwrap());
    assert!(mask.iter().all(|m| (0.1..0.3).contains(m)), "slopes leave [0.1, 0.3)");
    let mean = mask.iter().map(|m| *m as f64).sum::<f64>() / n as f64;
    assert!((mean - 0.2).abs() < 0.003, "mean slope {mean}");
    let var = mask.iter().map(|m| (*m as f64 - mean).powi(2)).sum::<f64>() / n as f64;
    assert!((var - 0.04 / 12.0).abs() < 3e-4, "variance {var}");
    for (v, m) in y.iter().zip(&mask) {
        assert_eq!(*v, -2.0 * m);
    }
    // positive inputs pass through; draws repeat after reseeding
    random::seed(7);
    let again = {
        let _t = autograd::train_mode();
        invoke("LeakyReLU", &[&x], &rrelu_attrs(0.1, 0.3)).unwrap()
    };
    assert_eq!(again[1].to_vec::<f32>().unwrap(), mask);
    // the train-mode gradient is the slope drawn (1 above zero)
    let x = arr(&[-1., 3., -2., 0.5, -0.1, -7.], &[6]);
    x.attach_grad(Req::Write).unwrap();
    let outs = {
        let _r = autograd::record();
        invoke("LeakyReLU", &[&x], &rrelu_attrs(0.1, 0.3)).unwrap()
    };
    outs[0].backward().unwrap();
    let m = vals(&outs[1]);
    let want: Vec<f64> = vals(&x).iter().zip(&m).map(|(v, s)| if *v > 0.0 { 1.0 } else { *s }).collect();
    close("rrelu dx", &vals(&x.grad().unwrap()), &want);
}

// ----- Embedding --------------------------------------------------------------------

fn emb_attrs(input_dim: i64, output_dim: i64) -> [(&'static str, AttrValue); 2] {
    [("input_dim", input_dim.into()), ("output_dim", output_dim.into())]
}

fn weight43() -> NDArray {
    arr(&(0..12).map(f64::from).collect::<Vec<_>>(), &[4, 3])
}

#[test]
fn embedding_values_clip_and_gradient_accumulates() {
    let _rng = rng_lock();
    let w = weight43();
    // -1.5 truncates to -1 and clips to 0; 0.7 -> 0; 3.9 -> 3; 7 clips to 3
    let d = arr(&[-1.5, 0.7, 3.9, 7.], &[2, 2]);
    let y = invoke1("Embedding", &[&d, &w], &emb_attrs(4, 3)).unwrap();
    assert_eq!(y.shape(), &[2, 2, 3]);
    close("rows", &vals(&y), &[0., 1., 2., 0., 1., 2., 9., 10., 11., 9., 10., 11.]);
    w.attach_grad(Req::Write).unwrap();
    d.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("Embedding", &[&d, &w], &emb_attrs(4, 3)).unwrap()
    };
    let head = arr(&(0..12).map(f64::from).collect::<Vec<_>>(), &[2, 2, 3]);
    autograd::backward(&[&y], &[Some(&head)], BackwardOptions::default()).unwrap();
    close("dweight", &vals(&w.grad().unwrap()), &[3., 5., 7., 0., 0., 0., 0., 0., 0., 15., 17., 19.]);
    close("ddata", &vals(&d.grad().unwrap()), &[0.; 4]);
    // the gradient against central differences, with repeated indices
    let idx = arr(&[2., 0., 2., 3., 1., 2.], &[3, 2]);
    let w = NDArray::random_uniform(-1.0, 1.0, &[4, 5], DType::F64).unwrap();
    OpChecker::new("Embedding", &[idx.clone(), w.clone()])
        .attr("input_dim", 4i64)
        .attr("output_dim", 5i64)
        .no_grad(&[0])
        .run()
        .unwrap();
    OpChecker::new("Embedding", &[idx.astype(DType::I32).unwrap(), w])
        .attr("input_dim", 4i64)
        .attr("output_dim", 5i64)
        .attr("sparse_grad", true)
        .run()
        .unwrap();
}

#[test]
fn embedding_dtypes_and_ranks() {
    let _rng = rng_lock();
    let w = weight43();
    for idt in [DType::I32, DType::I64, DType::U8, DType::F16, DType::F32] {
        let d = arr(&[2., 0., 2.], &[3]).astype(idt).unwrap();
        let y = invoke1("Embedding", &[&d, &w.astype(DType::F32).unwrap()], &emb_attrs(4, 3)).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[3usize, 3][..], DType::F32));
        close(&format!("{idt} indices"), &vals(&y), &[6., 7., 8., 0., 1., 2., 6., 7., 8.]);
    }
    // a 0-d index gives one row; the weight's dtype wins over the attribute
    let y = invoke1(
        "Embedding",
        &[&NDArray::scalar(1i32), &w.astype(DType::F16).unwrap()],
        &[("input_dim", 4i64.into()), ("output_dim", 3i64.into()), ("dtype", "float64".into())],
    )
    .unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[3usize][..], DType::F16));
    close("0-d", &vals(&y), &[3., 4., 5.]);
    // rank-3 indices
    let d = arr(&[3., 2., 1., 0., 0., 1., 2., 3.], &[2, 2, 2]);
    let y = invoke1("Embedding", &[&d, &w], &emb_attrs(4, 3)).unwrap();
    assert_eq!(y.shape(), &[2, 2, 2, 3]);
    assert_eq!(vals(&y)[..3], [9., 10., 11.]);
}

#[test]
fn embedding_second_order() {
    let _rng = rng_lock();
    // the weight's gradient is linear in the head gradient: differentiating
    // it with respect to the head gives Embedding applied to the new head
    let idx = arr(&[3., 3., 0.], &[3]);
    let w = NDArray::random_uniform(-1.0, 1.0, &[4, 2], DType::F64).unwrap();
    w.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("Embedding", &[&idx, &w], &emb_attrs(4, 2)).unwrap()
    };
    let v = NDArray::random_uniform(-1.0, 1.0, &[3, 2], DType::F64).unwrap();
    v.attach_grad(Req::Write).unwrap();
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    let gw = autograd::grad(&[&y], &[&w], &[Some(&v)], opts).unwrap().remove(0);
    let u = NDArray::random_uniform(-1.0, 1.0, &[4, 2], DType::F64).unwrap();
    autograd::backward(&[&gw], &[Some(&u)], BackwardOptions::default()).unwrap();
    let want = invoke1("Embedding", &[&idx, &u], &emb_attrs(4, 2)).unwrap();
    close("d2", &vals(&v.grad().unwrap()), &vals(&want));
}

#[test]
fn embedding_shape_and_dtype_inference() {
    let _rng = rng_lock();
    // the weight's shape comes from the attributes, even before the data's
    let (mut ins, mut outs) = (vec![shape(&[2, 5]), None], vec![None]);
    infer("Embedding", &emb_attrs(10, 7), &mut ins, &mut outs).unwrap();
    assert_eq!((ins[1].clone(), outs[0].clone()), (shape(&[10, 7]), shape(&[2, 5, 7])));
    let (mut ins, mut outs) = (vec![None, None], vec![None]);
    infer("Embedding", &emb_attrs(10, 7), &mut ins, &mut outs).unwrap();
    assert_eq!((ins[0].clone(), ins[1].clone(), outs[0].clone()), (None, shape(&[10, 7]), None));
    // backwards from the output
    let (mut ins, mut outs) = (vec![None, None], vec![shape(&[3, 7])]);
    infer("Embedding", &emb_attrs(10, 7), &mut ins, &mut outs).unwrap();
    assert_eq!(ins[0], shape(&[3]));
    // inconsistent shapes are errors naming the attribute values
    let (mut ins, mut outs) = (vec![shape(&[2]), shape(&[9, 7])], vec![None]);
    let e = infer("Embedding", &emb_attrs(10, 7), &mut ins, &mut outs).unwrap_err().to_string();
    assert!(e.contains("weight") && e.contains("[10, 7]"), "{e}");
    let (mut ins, mut outs) = (vec![None, None], vec![shape(&[3, 6])]);
    assert!(infer("Embedding", &emb_attrs(10, 7), &mut ins, &mut outs).is_err());
    // dtypes: the weight's if known, else the attribute
    let op = registry::get("Embedding").unwrap();
    let attrs = op
        .parse_attrs(&[("input_dim", 4i64.into()), ("output_dim", 3i64.into()), ("dtype", "float16".into())])
        .unwrap();
    let (mut ti, mut to) = (vec![Some(DType::I32), None], vec![None]);
    (op.infer_type)(&attrs, &mut ti, &mut to).unwrap();
    assert_eq!((ti[1], to[0]), (Some(DType::F16), Some(DType::F16)));
    let (mut ti, mut to) = (vec![Some(DType::F32), Some(DType::F64)], vec![None]);
    (op.infer_type)(&attrs, &mut ti, &mut to).unwrap();
    assert_eq!((ti[0], to[0]), (Some(DType::F32), Some(DType::F64)));
    let defaults = op.parse_attrs(&emb_attrs(4, 3)).unwrap();
    let (mut ti, mut to) = (vec![Some(DType::I64), None], vec![None]);
    (op.infer_type)(&defaults, &mut ti, &mut to).unwrap();
    assert_eq!(to[0], Some(DType::F32));
}

#[test]
fn embedding_errors() {
    let _rng = rng_lock();
    let w = weight43();
    let d = arr(&[1.], &[1]);
    let e = invoke1("Embedding", &[&d, &w], &emb_attrs(5, 3)).unwrap_err().to_string();
    assert!(e.contains("Embedding") && e.contains("weight"), "{e}");
    let e = invoke1("Embedding", &[&d, &w], &emb_attrs(0, 3)).unwrap_err().to_string();
    assert!(e.contains("input_dim") && e.contains("positive"), "{e}");
    let e = invoke1("Embedding", &[&d, &w], &[("input_dim", 4i64.into())]).unwrap_err().to_string();
    assert!(e.contains("output_dim"), "{e}");
    let e = invoke1("Embedding", &[&d], &emb_attrs(4, 3)).unwrap_err().to_string();
    assert!(e.contains("Embedding"), "{e}");
}
