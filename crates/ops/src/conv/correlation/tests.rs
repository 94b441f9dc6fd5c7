//! Tests of `Correlation`: hand-computed values, values MXNet 1.9.1
//! computed, gradients by central differences, the hidden outputs and
//! errors.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{invoke, invoke1, registry, AttrValue, DType, NDArray, Req};

const OP: &str = "Correlation";

/// The sample values of a `shape` input (as the fixtures' generator made them).
fn sample(shape: &[usize], salt: usize) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n).map(|i| ((i + salt) * 37 % 211) as f64 / 20.0 - 5.0).collect()
}

/// The head gradient for an output of `shape`.
fn head(shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n).map(|j| (j * 13 % 29) as f64 / 8.0 - 1.5).collect()
}

fn arr(v: Vec<f64>, shape: &[usize], dtype: DType) -> NDArray {
    NDArray::from_vec(v, shape).unwrap().astype(dtype).unwrap()
}

fn raw<'a>(attrs: &[(&'a str, &'a str)]) -> Vec<(&'a str, AttrValue)> {
    attrs.iter().map(|(k, v)| (*k, AttrValue::from(*v))).collect()
}

/// The output and both input gradients of a call on `a` and `b` under
/// autograd with the head gradient [`head`].
fn run(a: &NDArray, b: &NDArray, attrs: &[(&str, &str)]) -> (NDArray, Vec<f64>, Vec<f64>) {
    a.attach_grad(Req::Write).unwrap();
    b.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1(OP, &[a, b], &raw(attrs)).unwrap()
    };
    let dy = arr(head(y.shape()), y.shape(), y.dtype());
    autograd::backward(&[&y], &[Some(&dy)], BackwardOptions::default()).unwrap();
    let g = |x: &NDArray| x.grad().unwrap().to_vec::<f64>().unwrap();
    (y.clone(), g(a), g(b))
}

#[test]
fn ones_correlate_where_the_shifted_patch_stays_inside() {
    // 3 x 3 ones padded by 1: output (i, j) of displacement (dy, dx) reads
    // the second map at (i + dy, j + dx), inside exactly when that is in 0..3
    let x = arr(vec![1.0; 9], &[1, 1, 3, 3], DType::F32);
    let attrs = [("kernel_size", "1"), ("max_displacement", "1"), ("pad_size", "1")];
    let y = invoke1(OP, &[&x, &x], &raw(&attrs)).unwrap();
    assert_eq!(y.shape(), &[1, 9, 3, 3]);
    let v = y.to_vec::<f32>().unwrap();
    for q in 0..9 {
        let (dy, dx) = (q as i32 / 3 - 1, q as i32 % 3 - 1);
        for i in 0..3 {
            for j in 0..3 {
                let inside = (0..3).contains(&(i + dy)) && (0..3).contains(&(j + dx));
                assert_eq!(
                    v[(q as usize * 3 + i as usize) * 3 + j as usize],
                    inside as i32 as f32,
                    "q={q} ({i}, {j})"
                );
            }
        }
    }
    // absolute differences: 0 inside, |1 - 0| = 1 against the padding
    let mut abs = raw(&attrs);
    abs.push(("is_multiply", AttrValue::from("False")));
    let d = invoke1(OP, &[&x, &x], &abs).unwrap().to_vec::<f32>().unwrap();
    assert!(d.iter().zip(&v).all(|(a, b)| a + b == 1.0), "{d:?}");
}

#[test]
fn a_three_by_three_patch_averages_over_patch_and_channels() {
    // data1 = 1, data2 = 2 on 2 channels of 3 x 3, kernel 3, no displacement:
    // one output, the mean of 1·2 over 3·3·2 products
    let a = arr(vec![1.0; 18], &[1, 2, 3, 3], DType::F64);
    let b = arr(vec![2.0; 18], &[1, 2, 3, 3], DType::F64);
    let attrs = [("kernel_size", "3"), ("max_displacement", "0")];
    let (y, ga, gb) = run(&a, &b, &attrs);
    assert_eq!(y.shape(), &[1, 1, 1, 1]);
    assert_eq!(y.to_vec::<f64>().unwrap(), [2.0]);
    // head gradient -1.5: d/da = -1.5·2/18, d/db = -1.5·1/18
    assert!(ga.iter().all(|g| (g + 1.5 * 2.0 / 18.0).abs() < 1e-15), "{ga:?}");
    assert!(gb.iter().all(|g| (g + 1.5 / 18.0).abs() < 1e-15), "{gb:?}");
}

/// A call MXNet 1.9.1 computed on inputs `sample(shape, 0)` and
/// `sample(shape, 5)` with head gradient `head`, in float64.
struct Fixture {
    attrs: &'static [(&'static str, &'static str)],
    shape: &'static [usize],
    out_shape: &'static [usize],
    out: &'static [f64],
    grad1: &'static [f64],
    grad2: &'static [f64],
}

/// Values computed by MXNet 1.9.1 (`mx.nd.Correlation` under autograd).
#[rustfmt::skip]
const MXNET: &[Fixture] = &[
    Fixture {
        attrs: &[("kernel_size", "3"), ("max_displacement", "1"), ("stride1", "2"), ("stride2", "1"),
                 ("pad_size", "1"), ("is_multiply", "True")],
        shape: &[1, 2, 4, 4],
        out_shape: &[1, 9, 1, 1],
        out: &[3.9295833333333343, 0.8091666666666668, -2.6652777777777787, -0.9595833333333336, 3.729861111111112,
               6.67763888888889, -2.4361111111111104, -4.406805555555556, -2.10375],
        grad1: &[0.5204861111111112, -0.24479166666666669, -0.34895833333333337, 0.0, -0.31458333333333344,
                 -0.6399305555555556, 0.7597222222222223, 0.0, -0.26874999999999993, 0.782638888888889,
                 -0.6749999999999999, 0.0, 0.0, 0.0, 0.0, 0.0, 0.11145833333333334, 0.4329861111111111,
                 -0.2572916666666667, 0.0, 0.45486111111111116, -0.7375000000000003, -0.6565972222222222, 0.0,
                 -0.15868055555555546, 0.025694444444444464, 0.7659722222222222, 0.0, 0.0, 0.0, 0.0, 0.0],
        grad2: &[-0.6756944444444444, 0.5847222222222224, 0.3923611111111111, -0.3875, 0.13020833333333345,
                 -0.0788194444444445, -0.39722222222222225, 0.3961805555555556, 0.03020833333333331,
                 -0.33090277777777777, 0.5819444444444445, -0.2569444444444444, 0.10277777777777775,
                 0.07673611111111113, -0.12569444444444444, 0.10243055555555555, 0.012152777777777735,
                 0.04548611111111096, -0.1996527777777778, 0.5100694444444445, 0.15868055555555552,
                 -0.6159722222222223, 0.51875, -0.16944444444444445, -0.09791666666666662, 0.1270833333333333,
                 -0.046874999999999986, 0.10937500000000001, 0.10277777777777777, 0.0055555555555555775,
                 -0.08298611111111114, 0.031250000000000014],
    },
    // the output width is ceil(3 / 2) = 2
    Fixture {
        attrs: &[("kernel_size", "1"), ("max_displacement", "2"), ("stride1", "2"), ("stride2", "2"),
                 ("pad_size", "1"), ("is_multiply", "False")],
        shape: &[1, 1, 4, 5],
        out_shape: &[1, 9, 1, 2],
        out: &[4.45, 0.75, 4.45, 0.75, 4.45, 0.75, 4.45, 5.550000000000001, 9.25, 1.2999999999999998,
               2.4000000000000004, 0.75, 4.45, 2.95, 6.65, 3.9000000000000004, 0.20000000000000018, 0.75],
        grad1: &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -3.75, 0.0, -2.625, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                 0.0, 0.0],
        grad2: &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.375, 0.0, 1.625, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
                 -0.25, 0.0],
    },
];

#[test]
fn matches_mxnet() {
    for (k, f) in MXNET.iter().enumerate() {
        for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
            let a = arr(sample(f.shape, 0), f.shape, dtype);
            let b = arr(sample(f.shape, 5), f.shape, dtype);
            let (y, g1, g2) = run(&a, &b, f.attrs);
            let what = format!("fixture {k} in {dtype}");
            assert_eq!((y.shape(), y.dtype()), (f.out_shape, dtype), "{what}");
            compare(OP, &format!("{what}: output"), &y.to_vec::<f64>().unwrap(), f.out, tol, tol).unwrap();
            compare(OP, &format!("{what}: gradient of data1"), &g1, f.grad1, tol, tol).unwrap();
            compare(OP, &format!("{what}: gradient of data2"), &g2, f.grad2, tol, tol).unwrap();
        }
    }
}

/// Smooth random values in [0.5, 1.5) of `shape`: differences and products
/// without ties, so that central differences hold for both modes.
fn random(shape: &[usize]) -> NDArray {
    NDArray::random_uniform(0.5, 1.5, shape, DType::F64).unwrap()
}

#[test]
fn gradients_match_central_differences() {
    let cases: &[(&[usize], [i64; 5])] = &[
        // shape, (kernel_size, max_displacement, stride1, stride2, pad_size)
        (&[2, 3, 5, 6], [1, 2, 1, 1, 2]),
        (&[1, 2, 6, 5], [3, 1, 2, 1, 2]),
        (&[1, 2, 7, 7], [3, 2, 2, 2, 1]),
        (&[2, 1, 6, 6], [1, 3, 1, 2, 3]),
    ];
    for (shape, [k, md, s1, s2, pad]) in cases {
        for multiply in [true, false] {
            OpChecker::new(OP, &[random(shape), random(shape)])
                .attr("kernel_size", *k)
                .attr("max_displacement", *md)
                .attr("stride1", *s1)
                .attr("stride2", *s2)
                .attr("pad_size", *pad)
                .attr("is_multiply", multiply)
                .run()
                .unwrap_or_else(|e| {
                    panic!("{shape:?} k={k} md={md} s1={s1} s2={s2} pad={pad} {multiply}: {e}")
                });
        }
    }
}

#[test]
fn hidden_outputs_are_the_padded_inputs_channel_last() {
    let def = registry::get(OP).unwrap();
    assert_eq!(def.visible_outputs, Some(1));
    let a = arr((0..12).map(f64::from).collect(), &[1, 2, 2, 3], DType::F32);
    let b = arr((0..12).map(|v| -f64::from(v)).collect(), &[1, 2, 2, 3], DType::F32);
    let outs = invoke(OP, &[&a, &b], &raw(&[("max_displacement", "0"), ("pad_size", "1")])).unwrap();
    assert_eq!(outs.len(), 3);
    assert_eq!(outs[0].shape(), &[1, 1, 4, 5]);
    assert_eq!(outs[1].shape(), &[1, 4, 5, 2]);
    let t1 = outs[1].to_vec::<f32>().unwrap();
    // padded row 1, column 1 is data (y 0, x 0): channels 0 and 6
    assert_eq!(&t1[(5 + 1) * 2..][..2], &[0.0, 6.0]);
    // padded row 2, column 3 is data (1, 2): channels 5 and 11
    assert_eq!(&t1[(2 * 5 + 3) * 2..][..2], &[5.0, 11.0]);
    assert_eq!(t1.iter().sum::<f32>(), (0..12).sum::<i32>() as f32);
    let t2 = outs[2].to_vec::<f32>().unwrap();
    assert_eq!(&t2[(2 * 5 + 3) * 2..][..2], &[-5.0, -11.0]);
}

#[test]
fn dtypes() {
    let x = |dt| arr(sample(&[1, 2, 5, 5], 0), &[1, 2, 5, 5], dt);
    for dt in [DType::F16, DType::F32, DType::F64] {
        let y = invoke1(OP, &[&x(dt), &x(dt)], &[]).unwrap();
        assert_eq!((y.shape(), y.dtype()), (&[1usize, 9, 3, 3][..], dt));
    }
    let e = invoke1(OP, &[&x(DType::F32), &x(DType::F64)], &[]).unwrap_err().to_string();
    assert!(e.contains(OP) && e.contains("dtype"), "{e}");
    let e = invoke1(OP, &[&x(DType::I32), &x(DType::I32)], &[]).unwrap_err().to_string();
    assert!(e.contains(OP) && e.contains("floating-point"), "{e}");
}

#[test]
fn errors_name_the_operator_and_the_argument() {
    let x = arr(vec![0.5; 28 * 28], &[1, 1, 28, 28], DType::F32);
    let err = |inputs: &[&NDArray], attrs: &[(&str, &str)]| {
        let e = invoke1(OP, inputs, &raw(attrs)).unwrap_err().to_string();
        assert!(e.contains(OP), "{e}");
        e
    };
    // MXNet's test_invalid_kernel_size and test_valid_kernel_size
    let e = err(&[&x, &x], &[("kernel_size", "28")]);
    assert!(e.contains("kernel_size") && e.contains("odd"), "{e}");
    for k in ["27", "29", "101"] {
        let e = err(&[&x, &x], &[("kernel_size", k)]);
        assert!(e.contains("kernel_size") && e.contains("do not fit"), "{e}");
    }
    assert_eq!(invoke1(OP, &[&x, &x], &raw(&[("kernel_size", "9")])).unwrap().shape(), &[1, 9, 18, 18]);
    let e = err(&[&x, &x], &[("kernel_size", "0")]);
    assert!(e.contains("kernel_size") && e.contains("odd"), "{e}");
    let e = err(&[&x, &x], &[("max_displacement", "14")]);
    assert!(e.contains("max_displacement") && e.contains("do not fit"), "{e}");
    let e = err(&[&x, &x], &[("stride1", "0")]);
    assert!(e.contains("stride1"), "{e}");
    let e = err(&[&x, &x], &[("stride2", "0")]);
    assert!(e.contains("stride2"), "{e}");
    let e = err(&[&x, &x], &[("pad_size", "-1")]);
    assert!(e.contains("pad_size"), "{e}");
    let e = err(&[&x, &x], &[("max_displacement", "9999999999")]);
    assert!(e.contains("max_displacement"), "{e}");
    let other = arr(vec![0.5; 27 * 28], &[1, 1, 27, 28], DType::F32);
    let e = err(&[&x, &other], &[]);
    assert!(e.contains("data1") && e.contains("data2") && e.contains("(1, 1, 27, 28)"), "{e}");
    let flat = arr(vec![0.5; 28 * 28], &[1, 28, 28], DType::F32);
    let e = err(&[&flat, &flat], &[]);
    assert!(e.contains("data1") && e.contains("4-d") && e.contains("(1, 28, 28)"), "{e}");
    let e = err(&[&x, &flat], &[]);
    assert!(e.contains("data2") && e.contains("4-d"), "{e}");
    let e = err(&[&x], &[]);
    assert!(!e.is_empty());
}

#[test]
fn empty_batches_and_channels() {
    let attrs = raw(&[("max_displacement", "1"), ("pad_size", "1")]);
    for shape in [[0, 2, 3, 3], [2, 0, 3, 3]] {
        let x = arr(vec![], &shape, DType::F32);
        let y = invoke1(OP, &[&x, &x], &attrs).unwrap();
        assert_eq!(y.shape(), &[shape[0], 9, 3, 3]);
    }
}
