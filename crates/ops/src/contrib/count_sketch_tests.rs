//! Tests of `_contrib_count_sketch`: MXNet's example, collisions, ranks,
//! gradients against central differences and the closed form, errors.

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke, invoke1, AttrValue, DType, NDArray, Req};

const OP: &str = "_contrib_count_sketch";

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn dim(out_dim: i64) -> [(&'static str, AttrValue); 1] {
    [("out_dim", AttrValue::Int(out_dim))]
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "at {i}: {g} vs {w}");
    }
}

#[test]
fn mxnet_example() {
    let x = arr(&[1.2, 2.5, 3.4, 3.2, 5.7, 6.6], &[2, 3]);
    let h = arr(&[0.0, 3.0, 4.0], &[1, 3]);
    let s = arr(&[1.0, -1.0, 1.0], &[1, 3]);
    let y = invoke1(OP, &[&x, &h, &s], &dim(5)).unwrap();
    assert_eq!(y.shape(), &[2, 5]);
    assert_close(&y.to_vec::<f64>().unwrap(), &[1.2, 0.0, 0.0, -2.5, 3.4, 3.2, 0.0, 0.0, -5.7, 6.6]);
    // float32 the same, within float32 rounding
    let y32 = invoke1(OP, &[&x, &h, &s].map(|a| a.astype(DType::F32).unwrap()).each_ref(), &dim(5)).unwrap();
    assert_eq!(y32.dtype(), DType::F32);
    for (a, b) in y32.to_vec::<f64>().unwrap().iter().zip(y.to_vec::<f64>().unwrap()) {
        assert!((a - b).abs() < 1e-6);
    }
}

#[test]
fn colliding_buckets_add_up_and_any_rank_works() {
    // features 0, 1 and 3 share bucket 1; bucket 0 and 2 get one feature each, bucket 3 none
    let h = arr(&[1.0, 1.0, 0.0, 1.0, 2.0], &[1, 5]);
    let s = arr(&[1.0, -1.0, 1.0, 0.5, -2.0], &[1, 5]);
    let row = |x: &[f64]| [x[2], x[0] - x[1] + 0.5 * x[3], -2.0 * x[4], 0.0];
    let x: Vec<f64> = (0..20).map(|i| i as f64 * 0.25 - 2.0).collect();
    let want: Vec<f64> = x.chunks(5).flat_map(row).collect();
    for shape in [vec![4usize, 5], vec![2, 1, 2, 5], vec![2, 2, 5]] {
        let y = invoke1(OP, &[&arr(&x, &shape), &h, &s], &dim(4)).unwrap();
        let mut out = shape.clone();
        *out.last_mut().unwrap() = 4;
        assert_eq!(y.shape(), &out[..]);
        assert_close(&y.to_vec::<f64>().unwrap(), &want);
    }
    let y = invoke1(OP, &[&arr(&x[..5], &[5]), &h, &s], &dim(4)).unwrap();
    assert_eq!(y.shape(), &[4]);
    assert_close(&y.to_vec::<f64>().unwrap(), &want[..4]);
}

#[test]
fn many_rows_run_in_parallel_tasks() {
    let (rows, in_dim, out_dim) = (300usize, 97usize, 13usize);
    let x: Vec<f64> = (0..rows * in_dim).map(|i| ((i * 31 % 89) as f64) / 10.0 - 4.0).collect();
    let hv: Vec<f64> = (0..in_dim).map(|j| ((j * 7 + 3) % out_dim) as f64).collect();
    let sv: Vec<f64> = (0..in_dim).map(|j| if j % 3 == 0 { -1.0 } else { 1.0 }).collect();
    let y =
        invoke1(OP, &[&arr(&x, &[rows, in_dim]), &arr(&hv, &[1, in_dim]), &arr(&sv, &[1, in_dim])], &dim(13))
            .unwrap();
    let mut want = vec![0.0; rows * out_dim];
    for i in 0..rows {
        for j in 0..in_dim {
            want[i * out_dim + hv[j] as usize] += sv[j] * x[i * in_dim + j];
        }
    }
    assert_close(&y.to_vec::<f64>().unwrap(), &want);
}

#[test]
fn gradient_towards_data_only() {
    let x = arr(&[0.3, -1.2, 2.0, 0.7, 1.1, -0.4, 0.9, -2.2], &[2, 4]);
    let h = arr(&[2.0, 0.0, 2.0, 1.0], &[1, 4]);
    let s = arr(&[-1.0, 1.0, 1.0, -1.0], &[1, 4]);
    OpChecker::new(OP, &[x.clone(), h.clone(), s.clone()])
        .attr("out_dim", 3i64)
        .no_grad(&[1, 2])
        .run()
        .unwrap();

    // closed form: dx[i, j] = s[j] g[i, h[j]]; h and s get zeros
    for a in [&x, &h, &s] {
        a.attach_grad(Req::Write).unwrap();
    }
    let y = {
        let _r = autograd::record();
        invoke1(OP, &[&x, &h, &s], &dim(3)).unwrap()
    };
    let g = [1.0, 2.0, 3.0, -4.0, 5.0, -6.0];
    autograd::backward(&[&y], &[Some(&arr(&g, &[2, 3]))], Default::default()).unwrap();
    assert_close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &[-3.0, 1.0, 3.0, -2.0, 6.0, -4.0, -6.0, -5.0]);
    for a in [&h, &s] {
        assert_eq!(a.grad().unwrap().to_vec::<f64>().unwrap(), vec![0.0; 4]);
    }
}

#[test]
fn bad_calls_are_errors() {
    let x = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let s = arr(&[1.0, -1.0], &[1, 2]);
    let err = |ins: &[&NDArray], attrs: &[(&str, AttrValue)]| invoke(OP, ins, attrs).unwrap_err().to_string();
    for (bad, shown) in [(3.0, "3"), (-1.0, "-1"), (1.5, "1.5"), (f64::NAN, "NaN")] {
        let h = arr(&[0.0, bad], &[1, 2]);
        let e = err(&[&x, &h, &s], &dim(3));
        assert!(e.contains(OP) && e.contains("`h`") && e.contains(shown) && e.contains("[0, 3)"), "{e}");
    }
    let h = arr(&[0.0, 1.0], &[1, 2]);
    let e = err(&[&x, &arr(&[0.0, 1.0, 2.0], &[1, 3]), &s], &dim(3));
    assert!(e.contains(OP) && e.contains("`h`") && e.contains("[1, 2]") && e.contains("[1, 3]"), "{e}");
    let e = err(&[&x, &h, &arr(&[1.0, -1.0], &[2])], &dim(3));
    assert!(e.contains("`s`") && e.contains("[1, 2]"), "{e}");
    let e = err(&[&x, &h, &s], &[]);
    assert!(e.contains("out_dim"), "{e}");
    let e = err(&[&x, &h, &s], &dim(0));
    assert!(e.contains("out_dim") && e.contains("positive"), "{e}");
    let e =
        err(&[&x, &h, &s], &[("out_dim", AttrValue::Int(2)), ("processing_batch_size", AttrValue::Int(-1))]);
    assert!(e.contains("processing_batch_size") && e.contains("positive"), "{e}");
    let f16 = [&x, &h, &s].map(|a| a.astype(DType::F16).unwrap());
    let e = err(&f16.each_ref(), &dim(3));
    assert!(e.contains(OP) && e.contains("float16"), "{e}");
    let e = err(&[&x, &h.astype(DType::F32).unwrap(), &s], &dim(3));
    assert!(e.contains("`h`") && e.contains("float32") && e.contains("float64"), "{e}");
    let scalar = NDArray::from_vec(vec![1.0f64], &[]).unwrap();
    let e = err(&[&scalar, &h, &s], &dim(3));
    assert!(e.contains("at least one axis"), "{e}");
}
