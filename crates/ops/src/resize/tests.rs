//! Tests of `UpSampling` and `_contrib_BilinearResize2D`, and of every
//! operator of this folder against values MXNet 1.9.1 computed.

use super::mx_values::{MxCase, F32, F64};
use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{invoke1, AttrValue, DType, NDArray, Req};

/// The sample values of a `shape` input: distinct for up to 211 elements.
pub(super) fn sample(shape: &[usize], salt: usize) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n).map(|i| ((i + salt) * 37 % 211) as f64 / 20.0 - 5.0).collect()
}

/// The head gradient for an output of `shape`.
pub(super) fn head(shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n).map(|j| (j * 13 % 29) as f64 / 8.0 - 1.5).collect()
}

pub(super) fn arr(v: Vec<f64>, shape: &[usize], dtype: DType) -> NDArray {
    NDArray::from_vec(v, shape).unwrap().astype(dtype).unwrap()
}

pub(super) fn raw<'a>(attrs: &[(&'a str, &'a str)]) -> Vec<(&'a str, AttrValue)> {
    attrs.iter().map(|(k, v)| (*k, AttrValue::from(*v))).collect()
}

/// Runs a case under autograd: the output and every input's gradient.
fn run(c: &MxCase, dtype: DType) -> (NDArray, Vec<Vec<f64>>) {
    let inputs: Vec<NDArray> = c
        .inputs
        .iter()
        .map(|i| arr(i.values.map_or_else(|| sample(i.shape, i.salt), |v| v.to_vec()), i.shape, dtype))
        .collect();
    for x in &inputs {
        x.attach_grad(Req::Write).unwrap();
    }
    let refs: Vec<&NDArray> = inputs.iter().collect();
    let y = {
        let _r = autograd::record();
        invoke1(c.op, &refs, &raw(c.attrs)).unwrap_or_else(|e| panic!("{}: {e}", c.key))
    };
    let dy = arr(head(y.shape()), y.shape(), dtype);
    autograd::backward(&[&y], &[Some(&dy)], BackwardOptions::default()).unwrap();
    let grads = inputs.iter().map(|x| x.grad().unwrap().to_vec::<f64>().unwrap()).collect();
    (y, grads)
}

fn check_cases(cases: &[MxCase], dtype: DType, tol: f64) {
    for c in cases {
        let (y, grads) = run(c, dtype);
        assert_eq!(y.shape(), c.out_shape, "{}", c.key);
        assert_eq!(y.dtype(), dtype, "{}", c.key);
        compare(c.key, "output", &y.to_vec::<f64>().unwrap(), c.out, tol, tol).unwrap();
        for (i, (g, want)) in grads.iter().zip(c.grads).enumerate() {
            compare(c.key, &format!("gradient of input {i}"), g, want, tol, tol).unwrap();
        }
    }
}

#[test]
fn float32_values_and_gradients_match_mxnet() {
    check_cases(F32, DType::F32, 1e-6);
}

#[test]
fn float64_values_and_gradients_match_mxnet() {
    check_cases(F64, DType::F64, 1e-12);
}

fn up(inputs: &[&NDArray], attrs: &[(&str, &str)]) -> oxnet_core::Result<NDArray> {
    invoke1("UpSampling", inputs, &raw(attrs))
}

#[test]
fn nearest_upsampling_repeats_elements() {
    let x = arr(vec![1., 2., 3., 4.], &[1, 1, 2, 2], DType::F32);
    let y = up(&[&x], &[("scale", "2"), ("sample_type", "nearest"), ("num_args", "1")]).unwrap();
    assert_eq!(y.shape(), &[1, 1, 4, 4]);
    let want = [1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.];
    assert_eq!(y.to_vec::<f32>().unwrap(), want);
    let one = up(&[&x], &[("scale", "1"), ("sample_type", "nearest"), ("num_args", "1")]).unwrap();
    assert_eq!(one.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
}

#[test]
fn upsampling_gradients_match_central_differences() {
    let x = |shape: &[usize], salt| arr(sample(shape, salt), shape, DType::F64);
    let nearest = |c: OpChecker| c.attr("sample_type", "nearest");
    nearest(OpChecker::new("UpSampling", &[x(&[2, 2, 2, 3], 0)]).attr("scale", 2).attr("num_args", 1))
        .run()
        .unwrap();
    for mode in ["concat", "sum"] {
        nearest(OpChecker::new(
            "UpSampling",
            &[x(&[1, 2, 2, 2], 0), x(&[1, 2, 1, 1], 5), x(&[1, 2, 4, 4], 9)],
        ))
        .attr("scale", 2)
        .attr("num_args", 3)
        .attr("multi_input_mode", mode)
        .run()
        .unwrap();
    }
    for (s, k) in [(2, 4), (3, 5)] {
        OpChecker::new("UpSampling", &[x(&[2, 2, 2, 3], 0), x(&[2, 1, k, k], 3)])
            .attr("scale", s)
            .attr("sample_type", "bilinear")
            .attr("num_filter", 2)
            .attr("num_args", 2)
            .run()
            .unwrap();
    }
}

#[test]
fn upsampling_arguments_and_shapes() {
    let op = oxnet_core::registry::get("UpSampling").unwrap();
    let names = |attrs: &[(&str, &str)]| (op.arguments)(&op.parse_attrs(&raw(attrs)).unwrap()).unwrap();
    assert_eq!(
        names(&[("scale", "2"), ("sample_type", "nearest"), ("num_args", "3")]),
        ["arg0", "arg1", "arg2"]
    );
    let bil = [("scale", "3"), ("sample_type", "bilinear"), ("num_args", "1"), ("num_filter", "4")];
    assert_eq!(names(&bil), ["data", "weight"]);
    let attrs = op.parse_attrs(&raw(&bil)).unwrap();
    let init = (op.input_var_attrs.as_ref().unwrap())(&attrs, "weight");
    assert_eq!(init, vec![("__init__".to_string(), r#"["bilinear", {}]"#.to_string())]);
    // the weight's shape is inferred: (C, 1, 2s - s % 2, 2s - s % 2)
    let mut ins = vec![Some(oxnet_core::Shape::from_slice(&[2, 4, 3, 5])), None];
    let mut outs = vec![None];
    (op.infer_shape)(&attrs, &mut ins, &mut outs).unwrap();
    assert_eq!(ins[1].as_ref().unwrap().as_slice(), &[4, 1, 5, 5]);
    assert_eq!(outs[0].as_ref().unwrap().as_slice(), &[2, 4, 9, 15]);
}

#[test]
fn upsampling_errors_name_the_attribute_and_shapes() {
    let x = arr(sample(&[1, 2, 4, 4], 0), &[1, 2, 4, 4], DType::F32);
    let err = |inputs: &[&NDArray], attrs: &[(&str, &str)]| up(inputs, attrs).unwrap_err().to_string();
    let e = err(&[&x], &[("scale", "0"), ("sample_type", "nearest"), ("num_args", "1")]);
    assert!(e.contains("UpSampling") && e.contains("scale") && e.contains('0'), "{e}");
    let e = err(&[&x], &[("scale", "2"), ("sample_type", "cubic"), ("num_args", "1")]);
    assert!(e.contains("sample_type") && e.contains("cubic"), "{e}");
    let e = err(&[&x], &[("scale", "2"), ("num_args", "1")]);
    assert!(e.contains("sample_type"), "{e}");
    let flat = arr(vec![1.; 6], &[1, 2, 3], DType::F32);
    let e = err(&[&flat], &[("scale", "2"), ("sample_type", "nearest"), ("num_args", "1")]);
    assert!(e.contains("4-d") && e.contains("(1, 2, 3)"), "{e}");
    let odd = arr(vec![1.; 8], &[1, 2, 1, 4], DType::F32);
    let e = err(&[&x, &odd], &[("scale", "2"), ("sample_type", "nearest"), ("num_args", "2")]);
    assert!(e.contains("input 1") && e.contains("(1, 2, 1, 4)"), "{e}");
    let three = arr(vec![1.; 12], &[1, 3, 2, 2], DType::F32);
    let sum = [("scale", "2"), ("sample_type", "nearest"), ("num_args", "2"), ("multi_input_mode", "sum")];
    let e = err(&[&x, &three], &sum);
    assert!(e.contains("sum") && e.contains("(1, 3, 2, 2)"), "{e}");
    let w = arr(vec![1.; 32], &[2, 1, 4, 4], DType::F32);
    let e = err(&[&x, &w], &[("scale", "2"), ("sample_type", "bilinear"), ("num_args", "2")]);
    assert!(e.contains("num_filter"), "{e}");
    let e = err(
        &[&x, &w],
        &[("scale", "2"), ("sample_type", "bilinear"), ("num_args", "2"), ("num_filter", "3")],
    );
    assert!(e.contains("num_filter") && e.contains("(1, 2, 4, 4)"), "{e}");
    let bad_w = arr(vec![1.; 18], &[2, 1, 3, 3], DType::F32);
    let e = err(
        &[&x, &bad_w],
        &[("scale", "2"), ("sample_type", "bilinear"), ("num_args", "2"), ("num_filter", "2")],
    );
    assert!(e.contains("weight") && e.contains("(2, 1, 3, 3)"), "{e}");
    let e = err(&[&x], &[("scale", "4294967296"), ("sample_type", "nearest"), ("num_args", "1")]);
    assert!(e.contains("too large") && e.contains("(1, 2, 4, 4)"), "{e}");
    let ints = x.astype(DType::I32).unwrap();
    let e = err(&[&ints], &[("scale", "2"), ("sample_type", "nearest"), ("num_args", "1")]);
    assert!(e.contains("floating"), "{e}");
}

fn resize(inputs: &[&NDArray], attrs: &[(&str, &str)]) -> oxnet_core::Result<NDArray> {
    invoke1("_contrib_BilinearResize2D", inputs, &raw(attrs))
}

#[test]
fn bilinear_resize_output_sizes() {
    let x = arr(sample(&[1, 2, 5, 4], 0), &[1, 2, 5, 4], DType::F32);
    let shape = |attrs: &[(&str, &str)]| resize(&[&x], attrs).unwrap().shape().to_vec();
    assert_eq!(shape(&[]), [1, 2, 1, 1]);
    assert_eq!(shape(&[("height", "3"), ("width", "6")]), [1, 2, 3, 6]);
    assert_eq!(shape(&[("scale_height", "0.3"), ("scale_width", "1.75")]), [1, 2, 1, 7]);
    // as in MXNet, scale_width alone is not read in mode 'size'
    assert_eq!(shape(&[("scale_width", "2"), ("height", "2")]), [1, 2, 2, 1]);
    assert_eq!(shape(&[("mode", "odd_scale"), ("scale_height", "2"), ("scale_width", "0.5")]), [1, 2, 9, 2]);
    assert_eq!(shape(&[("mode", "to_even_down")]), [1, 2, 4, 4]);
    assert_eq!(shape(&[("mode", "to_even_up")]), [1, 2, 6, 4]);
    assert_eq!(shape(&[("mode", "to_odd_down")]), [1, 2, 5, 3]);
    assert_eq!(shape(&[("mode", "to_odd_up")]), [1, 2, 5, 5]);
    let like = arr(vec![0.; 3 * 7 * 2], &[3, 1, 7, 2], DType::F32);
    assert_eq!(resize(&[&x, &like], &[("mode", "like")]).unwrap().shape(), [1, 2, 7, 2]);
    // the same size copies
    let same = resize(&[&x], &[("height", "5"), ("width", "4"), ("align_corners", "False")]).unwrap();
    assert_eq!(same.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
}

#[test]
fn bilinear_resize_matches_mxnet_align_corners_example() {
    // the example of MXNet's test_bilinear_resize_op
    let x = arr(vec![64., 32., 32., 64., 50., 100.], &[1, 1, 3, 2], DType::F32);
    let y = resize(&[&x], &[("height", "6"), ("width", "4"), ("align_corners", "False")]).unwrap();
    let want = [
        64.0, 56.0, 40.0, 32.0, 56.0, 52.0, 44.0, 40.0, 40.0, 44.0, 52.0, 56.0, 36.5, 45.625, 63.875, 73.0,
        45.5, 56.875, 79.625, 91.0, 50.0, 62.5, 87.5, 100.0,
    ];
    compare("resize", "align_corners=False", &y.to_vec::<f64>().unwrap(), &want, 1e-6, 1e-4).unwrap();
    let y = resize(&[&x], &[("height", "6"), ("width", "4")]).unwrap();
    let want = [
        64.0, 53.333, 42.667, 32.0, 51.2, 49.067, 46.933, 44.8, 38.4, 44.8, 51.2, 57.6, 35.6, 47.467, 59.333,
        71.2, 42.8, 57.067, 71.333, 85.6, 50.0, 66.667, 83.333, 100.0,
    ];
    compare("resize", "align_corners=True", &y.to_vec::<f64>().unwrap(), &want, 0.0, 1e-3).unwrap();
}

#[test]
fn bilinear_resize_gradients_match_central_differences() {
    let x = arr(sample(&[2, 2, 3, 4], 0), &[2, 2, 3, 4], DType::F64);
    for attrs in [
        vec![("height", "5"), ("width", "7")],
        vec![("height", "2"), ("width", "3"), ("align_corners", "False")],
        vec![("height", "6"), ("width", "2"), ("align_corners", "False")],
        vec![("mode", "odd_scale"), ("scale_height", "2"), ("scale_width", "0.5")],
        vec![("mode", "to_odd_up")],
    ] {
        let mut c = OpChecker::new("_contrib_BilinearResize2D", std::slice::from_ref(&x));
        for (k, v) in attrs {
            c = c.attr(k, v);
        }
        c.run().unwrap();
    }
    let like = arr(sample(&[1, 1, 4, 5], 3), &[1, 1, 4, 5], DType::F64);
    OpChecker::new("_contrib_BilinearResize2D", &[x, like]).attr("mode", "like").no_grad(&[1]).run().unwrap();
}

#[test]
fn bilinear_resize_errors_name_the_attribute_and_shapes() {
    let x = arr(sample(&[1, 2, 3, 4], 0), &[1, 2, 3, 4], DType::F32);
    let err = |inputs: &[&NDArray], attrs: &[(&str, &str)]| resize(inputs, attrs).unwrap_err().to_string();
    let e = err(&[&x], &[("mode", "scale")]);
    assert!(e.contains("mode") && e.contains("scale"), "{e}");
    let e = err(&[&x], &[("scale_height", "0"), ("scale_width", "1")]);
    assert!(
        e.contains("_contrib_BilinearResize2D") && e.contains("scale_height") && e.contains("positive"),
        "{e}"
    );
    let e = err(&[&x], &[("scale_height", "2")]);
    assert!(e.contains("scale_width"), "{e}");
    let e = err(&[&x], &[("mode", "odd_scale"), ("scale_width", "2")]);
    assert!(e.contains("scale_height") && e.contains("odd_scale"), "{e}");
    let e = err(&[&x], &[("height", "0")]);
    assert!(e.contains("height"), "{e}");
    let flat = arr(vec![1.; 24], &[2, 3, 4], DType::F32);
    let e = err(&[&flat], &[("height", "2")]);
    assert!(e.contains("4-d") && e.contains("(2, 3, 4)"), "{e}");
    let like = arr(vec![1.; 6], &[2, 3], DType::F32);
    let e = err(&[&x, &like], &[("mode", "like")]);
    assert!(e.contains("like") && e.contains("(2, 3)"), "{e}");
    assert!(resize(&[&x], &[("mode", "like")]).is_err());
    let e = err(&[&x], &[("height", "4294967296"), ("width", "4294967296")]);
    assert!(e.contains("too large"), "{e}");
}
