//! Tests of softmax's `dtype` and `use_length`, and of `SoftmaxActivation`.

use oxnet_core::autograd;
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray, Req};

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}: element {i} is {g}, expected {w}");
    }
}

/// Softmax of a slice by hand.
fn softmax(v: &[f64]) -> Vec<f64> {
    let m = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = v.iter().map(|x| (x - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

#[test]
fn dtype_sets_the_output_dtype() {
    let x = arr(&[0.1, -0.7, 1.3, 0.2, 2.0, -1.1], &[2, 3]);
    let want = invoke1("softmax", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
    let h = x.astype(DType::F16).unwrap();
    let y = invoke1("softmax", &[&h], &[("dtype", "float32".into())]).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    // computed in float32 from the float16 values
    let hv = h.to_vec::<f64>().unwrap();
    let want16: Vec<f64> = hv.chunks(3).flat_map(softmax).collect();
    close(&y.to_vec::<f64>().unwrap(), &want16, 1e-6, "f16 -> f32");
    let y = invoke1("log_softmax", &[&x], &[("dtype", "float16".into())]).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    let y = invoke1("softmin", &[&x.astype(DType::F32).unwrap()], &[("dtype", "float64".into())]).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    let xs = x.to_vec::<f64>().unwrap();
    let neg: Vec<f64> = xs.iter().map(|v| -(*v as f32) as f64).collect();
    close(
        &y.to_vec::<f64>().unwrap(),
        &neg.chunks(3).flat_map(softmax).collect::<Vec<_>>(),
        1e-12,
        "softmin",
    );
    close(
        &invoke1("softmax", &[&x], &[("dtype", AttrValue::None)]).unwrap().to_vec::<f64>().unwrap(),
        &want,
        0.0,
        "None",
    );
    // the gradient comes back in the input's dtype
    let xf = x.astype(DType::F32).unwrap();
    xf.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("softmax", &[&xf], &[("dtype", "float64".into())]).unwrap()
    };
    let w = arr(&[1.0, 2.0, 3.0, -1.0, 0.5, 2.0], &[2, 3]);
    autograd::backward(&[&y], &[Some(&w)], Default::default()).unwrap();
    let gx = xf.grad().unwrap();
    assert_eq!(gx.dtype(), DType::F32);
    let e = invoke("softmax", &[&x], &[("dtype", "int32".into())]).unwrap_err().to_string();
    assert!(e.contains("dtype"), "{e}");
}

#[test]
fn use_length_masks_each_slice() {
    // (2, 4, 2), softmax over axis 1 with lengths of shape (2, 2)
    let xv: Vec<f64> = (0..16).map(|i| ((i * 7 % 11) as f64) * 0.3 - 1.0).collect();
    let x = arr(&xv, &[2, 4, 2]);
    let lens = [1i32, 4, 3, 0];
    let l = NDArray::from_vec(lens.to_vec(), &[2, 2]).unwrap();
    let y = invoke1("softmax", &[&x, &l], &[("axis", 1i64.into()), ("use_length", true.into())]).unwrap();
    let yv = y.to_vec::<f64>().unwrap();
    let mut want = vec![0.0; 16];
    for o in 0..2 {
        for j in 0..2 {
            let n = lens[o * 2 + j] as usize;
            let at = |i: usize| o * 8 + i * 2 + j;
            let s = softmax(&(0..n).map(|i| xv[at(i)]).collect::<Vec<_>>());
            for (i, v) in s.iter().enumerate() {
                want[at(i)] = *v;
            }
        }
    }
    close(&yv, &want, 1e-15, "masked softmax");
    // gradient: y (w - sum(w y)) inside each length, zero beyond
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("softmax", &[&x, &l], &[("axis", 1i64.into()), ("use_length", true.into())]).unwrap()
    };
    let w = arr(&(0..16).map(|i| i as f64 * 0.1).collect::<Vec<_>>(), &[2, 4, 2]);
    autograd::backward(&[&y], &[Some(&w)], Default::default()).unwrap();
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    for o in 0..2 {
        for j in 0..2 {
            let n = lens[o * 2 + j] as usize;
            let at = |i: usize| o * 8 + i * 2 + j;
            let yy: Vec<f64> = (0..4).map(|i| want[at(i)]).collect();
            let ww: Vec<f64> = (0..4).map(|i| w.to_vec::<f64>().unwrap()[at(i)]).collect();
            let dot: f64 = yy.iter().zip(&ww).map(|(a, b)| a * b).sum();
            for i in 0..4 {
                let expect = if i < n { yy[i] * (ww[i] - dot) } else { 0.0 };
                assert!((g[at(i)] - expect).abs() < 1e-14, "grad at ({o}, {i}, {j})");
            }
        }
    }
    // errors: float lengths, a wrong length shape, length on log_softmax
    let e = invoke(
        "softmax",
        &[&x, &arr(&[1.0; 4], &[2, 2])],
        &[("axis", 1i64.into()), ("use_length", true.into())],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("length") && e.contains("integer"), "{e}");
    let bad = NDArray::from_vec(vec![1i32; 3], &[3]).unwrap();
    let e = invoke("softmax", &[&x, &bad], &[("axis", 1i64.into()), ("use_length", true.into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("length"), "{e}");
    let e = invoke("log_softmax", &[&x], &[("use_length", true.into())]).unwrap_err().to_string();
    assert!(e.contains("use_length"), "{e}");
}

#[test]
fn softmax_activation_modes() {
    let xv: Vec<f64> = (0..12).map(|i| i as f64 / 5.0).collect();
    let x = arr(&xv, &[2, 3, 2]);
    let inst = invoke1("SoftmaxActivation", &[&x], &[]).unwrap().to_vec::<f64>().unwrap();
    close(&inst, &xv.chunks(2).flat_map(softmax).collect::<Vec<_>>(), 1e-15, "instance");
    let chan =
        invoke1("SoftmaxActivation", &[&x], &[("mode", "channel".into())]).unwrap().to_vec::<f64>().unwrap();
    let want_c = invoke1("softmax", &[&x], &[("axis", 1i64.into())]).unwrap().to_vec::<f64>().unwrap();
    close(&chan, &want_c, 0.0, "channel");
    assert!((chan[0] - 0.21198273).abs() < 1e-7, "MXNet's value");
    OpChecker::new("SoftmaxActivation", std::slice::from_ref(&x)).run().unwrap();
    OpChecker::new("SoftmaxActivation", std::slice::from_ref(&x)).attr("mode", "channel").run().unwrap();
    let e = invoke("SoftmaxActivation", &[&arr(&[1.0, 2.0], &[2])], &[("mode", "channel".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("mode"), "{e}");
}

#[test]
fn norm_out_dtype() {
    let x = arr(&[3.0, -4.0, 1.0, 2.0, -2.0, 1.0], &[2, 3]);
    let y = invoke1(
        "norm",
        &[&x.astype(DType::F16).unwrap()],
        &[("axis", AttrValue::Ints(vec![1])), ("out_dtype", "float32".into())],
    )
    .unwrap();
    assert_eq!(y.dtype(), DType::F32);
    close(&y.to_vec::<f64>().unwrap(), &[26f64.sqrt(), 3.0], 1e-6, "l2");
    let y = invoke1("norm", &[&x], &[("ord", 1i64.into()), ("out_dtype", "int32".into())]).unwrap();
    assert_eq!((y.dtype(), y.to_vec::<i32>().unwrap()), (DType::I32, vec![13]));
    let xf = x.astype(DType::F32).unwrap();
    xf.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("norm", &[&xf], &[("axis", AttrValue::Ints(vec![1])), ("out_dtype", "float64".into())])
            .unwrap()
    };
    assert_eq!(y.dtype(), DType::F64);
    y.backward().unwrap();
    let g = xf.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    let xs = x.to_vec::<f64>().unwrap();
    let want: Vec<f64> =
        xs.iter().enumerate().map(|(i, v)| v / if i < 3 { 26f64.sqrt() } else { 3.0 }).collect();
    close(&g.to_vec::<f64>().unwrap(), &want, 1e-6, "norm gradient");
    let e = invoke("norm", &[&x], &[("out_dtype", "uint8".into())]).unwrap_err().to_string();
    assert!(e.contains("out_dtype"), "{e}");
}
