//! The loss-output operators against values computed with MXNet 1.9.1
//! (`exe.backward()` / `autograd` on the same inputs).

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray, Req};

const X: [f32; 6] = [1., 2., 3., 0.5, -1., 2.];

fn arr(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn vals(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "{got:?} vs {want:?}");
    }
}

/// Output, and the gradients of every input after a backward pass whose
/// head gradient is 5 everywhere (which these operators ignore).
fn run(op: &str, inputs: &[NDArray], attrs: &[(&str, AttrValue)]) -> (Vec<f64>, Vec<Vec<f64>>) {
    for x in inputs {
        x.attach_grad(Req::Write).unwrap();
    }
    let refs: Vec<&NDArray> = inputs.iter().collect();
    let y = {
        let _r = autograd::record();
        invoke1(op, &refs, attrs).unwrap()
    };
    let head = NDArray::from_vec(vec![5.0f32; y.size()], y.shape()).unwrap().astype(y.dtype()).unwrap();
    autograd::backward(&[&y], &[Some(&head)], BackwardOptions::default()).unwrap();
    (vals(&y), inputs.iter().map(|x| vals(&x.grad().unwrap())).collect())
}

fn f(v: f64) -> AttrValue {
    AttrValue::Float(v)
}

fn s(v: &str) -> AttrValue {
    AttrValue::Str(v.into())
}

const SOFTMAX: [f64; 6] = [0.09003057, 0.24472848, 0.66524094, 0.17529039, 0.03911257, 0.78559703];

#[test]
fn make_loss_gradients() {
    let x = || arr(&X, &[2, 3]);
    let (y, g) = run("MakeLoss", &[x()], &[]);
    close(&y, &X.map(f64::from));
    close(&g[0], &[1.0; 6]);
    let (_, g) = run("MakeLoss", &[x()], &[("grad_scale", f(2.)), ("normalization", s("batch"))]);
    close(&g[0], &[1.0; 6]);
    // MXNet: 4 elements exceed 0.9, 3 exceed 1.0, none exceeds 10 (counted as 1)
    for (thresh, want) in [(0.9, 0.5), (1.0, 2.0 / 3.0), (10.0, 2.0)] {
        let (_, g) = run(
            "MakeLoss",
            &[x()],
            &[("grad_scale", f(2.)), ("normalization", s("valid")), ("valid_thresh", f(thresh))],
        );
        close(&g[0], &[want; 6]);
    }
    let (y, g) = run("make_loss", &[x()], &[]);
    close(&y, &X.map(f64::from));
    close(&g[0], &[1.0; 6]);
    let e = invoke1("MakeLoss", &[&x()], &[("normalization", s("all"))]).unwrap_err().to_string();
    assert!(e.contains("normalization"), "{e}");
}

#[test]
fn softmax_output_class_labels() {
    let x = || arr(&X, &[2, 3]);
    let (y, g) = run("SoftmaxOutput", &[x(), arr(&[2., 0.], &[2])], &[]);
    close(&y, &SOFTMAX);
    close(&g[0], &[0.09003057, 0.24472848, -0.33475906, -0.8247096, 0.03911257, 0.78559703]);
    close(&g[1], &[0., 0.]);
    let (_, g) = run(
        "SoftmaxOutput",
        &[x(), arr(&[2., 0.], &[2])],
        &[("grad_scale", f(3.)), ("normalization", s("batch"))],
    );
    close(&g[0], &[0.13504586, 0.36709273, -0.50213861, -1.23706436, 0.05866886, 1.17839551]);
    // ignored instances give zeros; 'valid' counts the others
    let (_, g) = run(
        "SoftmaxOutput",
        &[x(), arr(&[2., 1.], &[2])],
        &[("use_ignore", true.into()), ("ignore_label", f(1.)), ("normalization", s("valid"))],
    );
    close(&g[0], &[0.09003057, 0.24472848, -0.33475906, 0., 0., 0.]);
    // 1.7 reads as class 1 (labels outside the classes are errors: see below)
    let (_, g) = run("SoftmaxOutput", &[x(), arr(&[1.7, 0.2], &[2])], &[]);
    close(&g[0], &[0.09003057, -0.75527155, 0.66524094, -0.8247096, 0.03911257, 0.78559703]);
    let (_, g) = run("SoftmaxOutput", &[x(), arr(&[2., 1.], &[2])], &[("smooth_alpha", f(0.3))]);
    close(&g[0], &[-0.05996943, 0.09472847, -0.03475904, 0.02529038, -0.66088742, 0.63559699]);
    // out_grad multiplies by the output (MXNet's backward node sees it in the head gradient's place)
    let (_, g) = run("SoftmaxOutput", &[x(), arr(&[2., 1.], &[2])], &[("out_grad", true.into())]);
    close(&g[0], &[0.0081055, 0.05989203, -0.22269543, 0.03072672, -0.03758278, 0.6171627]);
}

#[test]
fn softmax_output_probability_labels_and_layouts() {
    let x = || arr(&X, &[2, 3]);
    let p = arr(&[0.2, 0.3, 0.5, 1., 0., 0.], &[2, 3]);
    let (_, g) = run("SoftmaxOutput", &[x(), p], &[("grad_scale", f(2.)), ("normalization", s("batch"))]);
    close(&g[0], &[-0.21993886, -0.11054307, 0.33048189, -1.64941919, 0.07822514, 1.57119405]);
    let x3: Vec<f32> = (0..12).map(|i| i as f32 / 5.0).collect();
    let x3 = || arr(&x3, &[2, 3, 2]);
    let lab = || arr(&[2., 1., 0., 0.], &[2, 2]);
    let col = [0.21198273, 0.31624106, 0.47177625];
    let (y, g) = run("SoftmaxOutput", &[x3(), lab()], &[("multi_output", true.into())]);
    close(
        &y,
        &[col[0], col[0], col[1], col[1], col[2], col[2], col[0], col[0], col[1], col[1], col[2], col[2]],
    );
    // divided by the spatial size (2)
    let want = [
        0.10599136,
        0.10599136,
        0.15812053,
        -0.34187949,
        -0.26411188,
        0.23588812,
        -0.39400864,
        -0.39400864,
        0.15812053,
        0.15812051,
        0.23588812,
        0.23588812,
    ];
    close(&g[0], &want);
    // smoothing does not apply with multi_output
    let (_, g) =
        run("SoftmaxOutput", &[x3(), lab()], &[("multi_output", true.into()), ("smooth_alpha", f(0.2))]);
    close(&g[0], &want);
    let (_, g) =
        run("SoftmaxOutput", &[x3(), lab()], &[("multi_output", true.into()), ("normalization", s("batch"))]);
    close(&g[0], &want.map(|v| v / 2.0));
    let (_, g) = run(
        "SoftmaxOutput",
        &[x3(), lab()],
        &[
            ("multi_output", true.into()),
            ("normalization", s("valid")),
            ("use_ignore", true.into()),
            ("ignore_label", f(0.)),
        ],
    );
    let mut w = want;
    w[6..].iter_mut().for_each(|v| *v = 0.0);
    close(&g[0], &w);
    // preserve_shape: softmax over the last axis; 'batch' divides by the label's size
    let pl = || arr(&[1., 1., 0., 0., 1., 1.], &[2, 3]);
    let (y, g) = run("SoftmaxOutput", &[x3(), pl()], &[("preserve_shape", true.into())]);
    let (a, b) = (0.45016599, 0.54983401);
    close(&y, &[a, b, a, b, a, b, a, b, a, b, a, b]);
    close(&g[0], &[a, -a, a, -a, -b, b, -b, b, a, -a, a, -a]);
    let (_, g) = run(
        "SoftmaxOutput",
        &[x3(), pl()],
        &[("preserve_shape", true.into()), ("normalization", s("batch"))],
    );
    close(&g[0], &[a, -a, a, -a, -b, b, -b, b, a, -a, a, -a].map(|v| v / 6.0));
}

#[test]
fn regression_outputs() {
    let x = || arr(&X, &[2, 3]);
    let (y, g) = run(
        "LinearRegressionOutput",
        &[x(), arr(&[0., 1., 2., 3., 4., 5.], &[2, 3])],
        &[("grad_scale", f(2.))],
    );
    close(&y, &X.map(f64::from));
    close(&g[0], &[0.66666669, 0.66666669, 0.66666669, -1.66666675, -3.33333349, -2.0]);
    close(&g[1], &[0.; 6]);
    let (_, g) = run("LinearRegressionOutput", &[arr(&[1., 2.], &[2, 1]), arr(&[0.5, 3.], &[2])], &[]);
    close(&g[0], &[0.5, -1.0]);
    let (y, g) = run("LogisticRegressionOutput", &[x(), arr(&[0., 1., 1., 1., 0., 0.], &[2, 3])], &[]);
    close(&y, &[0.7310586, 0.88079703, 0.95257413, 0.62245935, 0.26894143, 0.88079703]);
    close(&g[0], &[0.24368620, -0.03973433, -0.01580862, -0.12584689, 0.08964714, 0.29359901]);
    // equal values count as -1
    let (_, g) = run(
        "MAERegressionOutput",
        &[x(), arr(&[1., 1., 2., 3., -1., 5.], &[2, 3])],
        &[("grad_scale", f(2.))],
    );
    let t = 2.0 / 3.0;
    close(&g[0], &[-t, t, t, -t, -t, -t]);
    let e = invoke1("LinearRegressionOutput", &[&x(), &arr(&[1., 2.], &[2])], &[]).unwrap_err().to_string();
    assert!(e.contains("label") && e.contains("[2, 3]"), "{e}");
}

#[test]
fn svm_output() {
    let x = || arr(&X, &[2, 3]);
    let (y, g) = run("SVMOutput", &[x(), arr(&[2., 0.], &[2])], &[]);
    close(&y, &X.map(f64::from));
    close(&g[0], &[4., 6., 0., -1., 0., 6.]);
    let lin = [("use_linear", true.into()), ("margin", f(2.)), ("regularization_coefficient", f(0.5))];
    let (_, g) = run("SVMOutput", &[x(), arr(&[2., 0.], &[2])], &lin);
    close(&g[0], &[0.5, 0.5, 0., -0.5, 0.5, 0.5]);
    let l2 = [("margin", f(2.)), ("regularization_coefficient", f(0.5))];
    let (_, g) = run("SVMOutput", &[x(), arr(&[1., 0.], &[2])], &l2);
    close(&g[0], &[3., 0., 5., -1.5, 1., 4.]);
}

#[test]
fn inference_and_errors() {
    let x = arr(&X, &[2, 3]);
    // dtypes: the label must have data's
    let e = invoke1("SoftmaxOutput", &[&x, &arr(&[2., 0.], &[2]).astype(DType::I32).unwrap()], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("label") && e.contains("int32"), "{e}");
    let xi = x.astype(DType::I32).unwrap();
    let e = invoke1("LinearRegressionOutput", &[&xi, &xi], &[]).unwrap_err().to_string();
    assert!(e.contains("floating-point"), "{e}");
    let e = invoke1("SoftmaxOutput", &[&x, &arr(&[2., 0., 1.], &[3])], &[]).unwrap_err().to_string();
    assert!(e.contains("label") && e.contains("[3]"), "{e}");
    let e = invoke1("SoftmaxOutput", &[&x, &arr(&[2., 0.], &[2])], &[("smooth_alpha", f(1.5))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("smooth_alpha"), "{e}");
    let e = invoke1("SoftmaxOutput", &[&x, &arr(&[2., 0., 1.], &[3])], &[("multi_output", true.into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("multi_output"), "{e}");
    // float64 runs in float64
    let y = invoke(
        "SoftmaxOutput",
        &[&x.astype(DType::F64).unwrap(), &arr(&[2., 0.], &[2]).astype(DType::F64).unwrap()],
        &[],
    )
    .unwrap();
    assert_eq!(y[0].dtype(), DType::F64);
    close(&vals(&y[0]), &SOFTMAX);
}

#[test]
fn labels_outside_the_classes_are_errors_unless_ignored() {
    let x = arr(&X, &[2, 3]);
    let label = arr(&[2., 7.], &[2]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("SoftmaxOutput", &[&x, &label], &[]).unwrap()
    };
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("SoftmaxOutput") && e.contains("label 7") && e.contains("3 classes"), "{e}");
    // ignored, it gives no gradient
    let (_, grads) =
        run("SoftmaxOutput", &[x, label], &[("use_ignore", true.into()), ("ignore_label", f(7.))]);
    assert_eq!(&grads[0][3..], &[0.0; 3]);
}

#[test]
fn partial_shape_inference() {
    use oxnet_core::{registry, Shape};
    // MXNet 1.9.1: data (0, 10) (batch unknown) gives label (0,); (4, 0, 3) gives (4, 0)
    for op in ["SoftmaxOutput", "SVMOutput"] {
        let def = registry::get(op).unwrap();
        let partial = def.infer_shape_partial.clone().expect("partial inference");
        let attrs = def.parse_attrs(&[]).unwrap();
        for (data, label) in [(&[0usize, 10][..], &[0usize][..]), (&[4, 0, 3], &[4, 0])] {
            let mut ins = vec![Some(Shape::from_slice(data)), None];
            let mut outs = vec![None];
            partial(&attrs, &mut ins, &mut outs).unwrap();
            assert_eq!(ins[1].as_deref(), Some(label), "{op}");
            assert_eq!(outs[0].as_deref(), Some(data), "{op}");
        }
        // a known label that agrees is kept; one that conflicts is an error
        let mut ins = vec![Some(Shape::from_slice(&[0, 10])), Some(Shape::from_slice(&[4]))];
        partial(&attrs, &mut ins, &mut [None]).unwrap();
        assert_eq!(ins[1].as_deref(), Some(&[4usize][..]), "{op}");
        let mut bad = vec![Some(Shape::from_slice(&[4, 10])), Some(Shape::from_slice(&[3]))];
        let e = partial(&attrs, &mut bad, &mut [None]).unwrap_err().to_string();
        assert!(e.contains(op) && e.contains("label"), "{e}");
    }
}
