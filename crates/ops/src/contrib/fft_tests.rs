//! Tests of `_contrib_fft` and `_contrib_ifft`: values by hand and against a
//! direct O(d²) DFT, gradients against central differences and against the
//! closed forms, dtypes and errors.

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke, invoke1, AttrValue, DType, Device, NDArray, Req};
use std::f64::consts::PI;

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

/// Deterministic values in (-2, 2).
fn sample(n: usize, salt: usize) -> Vec<f64> {
    (0..n).map(|i| (((i + salt) * 37 % 101) as f64) / 25.0 - 2.0).collect()
}

/// The direct DFT of one complex row `(re, im)` with sign `sign` in the
/// exponent (-1 forward, +1 inverse), unnormalized.
fn dft(re: &[f64], im: &[f64], sign: f64) -> (Vec<f64>, Vec<f64>) {
    let d = re.len();
    let mut out = (vec![0.0; d], vec![0.0; d]);
    for k in 0..d {
        for n in 0..d {
            let a = sign * 2.0 * PI * ((k * n) % d) as f64 / d as f64;
            let (c, s) = (a.cos(), a.sin());
            out.0[k] += re[n] * c - im[n] * s;
            out.1[k] += re[n] * s + im[n] * c;
        }
    }
    out
}

/// `fft` of rows of length `d`, by the direct DFT, interleaved.
fn reference_fft(x: &[f64], d: usize) -> Vec<f64> {
    x.chunks(d)
        .flat_map(|row| {
            let (re, im) = dft(row, &vec![0.0; d], -1.0);
            re.into_iter().zip(im).flat_map(|(a, b)| [a, b]).collect::<Vec<_>>()
        })
        .collect()
}

/// `ifft` of interleaved rows of `2d` numbers, by the direct DFT: real parts.
fn reference_ifft(z: &[f64], d: usize) -> Vec<f64> {
    z.chunks(2 * d)
        .flat_map(|row| {
            let re: Vec<f64> = row.iter().step_by(2).copied().collect();
            let im: Vec<f64> = row.iter().skip(1).step_by(2).copied().collect();
            dft(&re, &im, 1.0).0
        })
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "at {i}: {g} vs {w}");
    }
}

#[test]
fn fft_by_hand() {
    // X = [10, -2 + 2i, -2, -2 - 2i]
    let y = invoke1("_contrib_fft", &[&arr(&[1.0, 2.0, 3.0, 4.0], &[1, 4])], &[]).unwrap();
    assert_eq!(y.shape(), &[1, 8]);
    assert_close(&y.to_vec::<f64>().unwrap(), &[10.0, 0.0, -2.0, 2.0, -2.0, 0.0, -2.0, -2.0], 1e-14);
    // Z_k = i^k -> Re sum_k i^k i^{kn} = [0, 0, 0, 4], not divided by 4
    let z = arr(&[1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0, -1.0], &[8]);
    let y = invoke1("_contrib_ifft", &[&z], &[]).unwrap();
    assert_eq!(y.shape(), &[4]);
    assert_close(&y.to_vec::<f64>().unwrap(), &[0.0, 0.0, 0.0, 4.0], 1e-14);
}

#[test]
fn transforms_match_the_direct_dft() {
    // lengths 1, prime, composite, power of two; ranks 1 to 4
    for (shape, salt) in [(vec![1usize], 1), (vec![3, 7], 2), (vec![2, 3, 12], 3), (vec![2, 1, 2, 16], 4)] {
        let d = *shape.last().unwrap();
        let n: usize = shape.iter().product();
        let x = sample(n, salt);
        let y = invoke1("_contrib_fft", &[&arr(&x, &shape)], &[]).unwrap();
        let mut out_shape = shape.clone();
        *out_shape.last_mut().unwrap() *= 2;
        assert_eq!(y.shape(), &out_shape[..]);
        assert_close(&y.to_vec::<f64>().unwrap(), &reference_fft(&x, d), 1e-12);

        let z = sample(2 * n, salt + 10);
        let w = invoke1("_contrib_ifft", &[&arr(&z, &out_shape)], &[]).unwrap();
        assert_eq!(w.shape(), &shape[..]);
        assert_close(&w.to_vec::<f64>().unwrap(), &reference_ifft(&z, d), 1e-12);
    }
}

#[test]
fn many_rows_run_in_parallel_tasks() {
    // enough work for several tasks, rows that do not divide evenly
    let (rows, d) = (37, 500);
    let x = sample(rows * d, 7);
    let y = invoke1("_contrib_fft", &[&arr(&x, &[rows, d])], &[]).unwrap();
    assert_close(&y.to_vec::<f64>().unwrap(), &reference_fft(&x, d), 1e-10);
    // ifft(fft(x)) = d x
    let back = invoke1("_contrib_ifft", &[&y], &[]).unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = x.iter().map(|v| v * d as f64).collect();
    assert_close(&back, &want, 1e-10);
}

#[test]
fn gradients_match_central_differences() {
    for shape in [vec![5usize], vec![2, 6], vec![2, 1, 3, 4]] {
        let n: usize = shape.iter().product();
        let x = arr(&sample(n, 5), &shape);
        OpChecker::new("_contrib_fft", std::slice::from_ref(&x)).run().unwrap();
        let mut zs = shape.clone();
        *zs.last_mut().unwrap() *= 2;
        let z = arr(&sample(2 * n, 6), &zs);
        OpChecker::new("_contrib_ifft", std::slice::from_ref(&z)).attr("compute_size", 3i64).run().unwrap();
    }
}

/// The input gradient of `op` on `x` for head gradient `head`.
fn input_grad(op: &str, x: &NDArray, head: &NDArray) -> Vec<f64> {
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1(op, &[x], &[]).unwrap()
    };
    autograd::backward(&[&y], &[Some(head)], Default::default()).unwrap();
    x.grad().unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn gradients_are_the_other_transform() {
    // as MXNet's GPU tests check: fft's input gradient is d · Re(numpy ifft(g)),
    // ifft's is the numpy fft of g, interleaved
    let d = 6;
    let x = arr(&sample(2 * d, 8), &[2, d]);
    let g = sample(4 * d, 9);
    let dx = input_grad("_contrib_fft", &x, &arr(&g, &[2, 2 * d]));
    assert_close(&dx, &reference_ifft(&g, d), 1e-12);

    let z = arr(&sample(4 * d, 10), &[2, 2 * d]);
    let g = sample(2 * d, 11);
    let dz = input_grad("_contrib_ifft", &z, &arr(&g, &[2, d]));
    assert_close(&dz, &reference_fft(&g, d), 1e-12);
}

#[test]
fn second_order_gradients_flow() {
    // sum |fft(x)|^2 = d sum x^2 (Parseval): its gradient is 2 d x, whose sum has gradient 2 d
    let d = 4;
    let xv = sample(2 * d, 12);
    let x = arr(&xv, &[2, d]);
    x.attach_grad(Req::Write).unwrap();
    let dx = {
        let _r = autograd::record();
        let y = invoke1("_contrib_fft", &[&x], &[]).unwrap();
        let y2 = invoke1("square", &[&y], &[]).unwrap();
        let opts = autograd::BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
        autograd::grad(&[&y2], &[&x], &[None], opts).unwrap().remove(0)
    };
    let want: Vec<f64> = xv.iter().map(|v| 2.0 * d as f64 * v).collect();
    assert_close(&dx.to_vec::<f64>().unwrap(), &want, 1e-12);
    dx.backward().unwrap();
    assert_close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &[2.0 * d as f64; 8], 1e-12);
}

#[test]
fn float32_and_float16_keep_their_dtype() {
    let x = sample(24, 13);
    let want = reference_fft(&x, 8);
    for (dt, tol) in [(DType::F32, 1e-5), (DType::F16, 3e-3)] {
        let y = invoke1("_contrib_fft", &[&arr(&x, &[3, 8]).astype(dt).unwrap()], &[]).unwrap();
        assert_eq!(y.dtype(), dt);
        let got = y.to_vec::<f64>().unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= tol * 16.0, "{dt}: {g} vs {w}");
        }
        let w = invoke1("_contrib_ifft", &[&y], &[]).unwrap();
        assert_eq!((w.dtype(), w.shape()), (dt, &[3usize, 8][..]));
    }
}

#[test]
fn bad_calls_are_errors() {
    let err =
        |op: &str, x: &NDArray, attrs: &[(&str, AttrValue)]| invoke(op, &[x], attrs).unwrap_err().to_string();
    let scalar = NDArray::from_vec(vec![1.0f64], &[]).unwrap();
    let e = err("_contrib_fft", &scalar, &[]);
    assert!(e.contains("_contrib_fft") && e.contains("at least one axis"), "{e}");
    let e = err("_contrib_ifft", &arr(&[1.0, 2.0, 3.0], &[1, 3]), &[]);
    assert!(e.contains("_contrib_ifft") && e.contains("even") && e.contains("[1, 3]"), "{e}");
    let x = arr(&[1.0, 2.0], &[1, 2]);
    for op in ["_contrib_fft", "_contrib_ifft"] {
        let e = err(op, &x, &[("compute_size", AttrValue::Int(0))]);
        assert!(e.contains(op) && e.contains("compute_size") && e.contains("positive"), "{e}");
        let e = err(op, &x.astype(DType::I32).unwrap(), &[]);
        assert!(e.contains(op) && e.contains("int32") && e.contains("float32"), "{e}");
        let e = err(op, &x.astype(DType::BF16).unwrap(), &[]);
        assert!(e.contains("bfloat16") || e.contains("bf16"), "{e}");
    }
}

#[test]
fn empty_rows_give_empty_outputs() {
    let y = invoke1("_contrib_fft", &[&NDArray::zeros(&[3, 0], DType::F64, Device::Cpu).unwrap()], &[]);
    assert_eq!(y.unwrap().shape(), &[3, 0]);
    let y = invoke1("_contrib_ifft", &[&NDArray::zeros(&[0, 4], DType::F32, Device::Cpu).unwrap()], &[]);
    assert_eq!(y.unwrap().shape(), &[0, 2]);
}
