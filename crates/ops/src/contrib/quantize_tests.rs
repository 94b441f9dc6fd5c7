//! Values worked out by hand from the formulas in MXNet 1.9.1's kernels.

use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray};

fn f32s(v: &[f32], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn one(v: f32) -> NDArray {
    f32s(&[v], &[1])
}

fn range_of(outs: &[NDArray]) -> (f32, f32) {
    (outs[1].to_vec::<f32>().unwrap()[0], outs[2].to_vec::<f32>().unwrap()[0])
}

#[test]
fn int8_is_zero_centred_and_round_trips() {
    // test_operator's test_quantization_op: 0.1392·127 + 0.5 = 18.18 -> 18, ...
    let a = f32s(&[0.1392, 0.5928, 0.6027, 0.8579], &[2, 2]);
    let outs =
        invoke("_contrib_quantize", &[&a, &one(0.0), &one(1.0)], &[("out_type", "int8".into())]).unwrap();
    assert_eq!((outs[0].dtype(), outs[0].shape()), (DType::I8, &[2usize, 2][..]));
    assert_eq!(outs[0].to_vec::<i8>().unwrap(), vec![18, 75, 77, 109]);
    assert_eq!(range_of(&outs), (-1.0, 1.0));
    let back = invoke1("_contrib_dequantize", &[&outs[0], &outs[1], &outs[2]], &[]).unwrap();
    assert_eq!(back.dtype(), DType::F32);
    let want: Vec<f32> = [18.0f32, 75.0, 77.0, 109.0].iter().map(|q| q * (1.0 / 127.0)).collect();
    for (g, w) in back.to_vec::<f32>().unwrap().iter().zip(&want) {
        assert!((g - w).abs() < 1e-7, "{g} vs {w}");
    }
    // magnitudes beyond the range saturate at ±127
    let outs = invoke(
        "_contrib_quantize",
        &[&f32s(&[-3.0, 3.0], &[2]), &one(-1.0), &one(0.5)],
        &[("out_type", "int8".into())],
    )
    .unwrap();
    assert_eq!(outs[0].to_vec::<i8>().unwrap(), vec![-127, 127]);
}

#[test]
fn uint8_is_affine_and_saturates() {
    // the default out_type is uint8: (x - 0)·255 + 0.5, truncated
    let x = f32s(&[0.0, 0.5, 1.0, -1.0, 2.0], &[5]);
    let outs = invoke("_contrib_quantize", &[&x, &one(0.0), &one(1.0)], &[]).unwrap();
    assert_eq!(outs[0].dtype(), DType::U8);
    assert_eq!(outs[0].to_vec::<u8>().unwrap(), vec![0, 128, 255, 0, 255]);
    assert_eq!(range_of(&outs), (0.0, 1.0));
    // q·(max - min)/255 + min
    let q = NDArray::from_vec(vec![0u8, 128, 255], &[3]).unwrap();
    let back = invoke1("_contrib_dequantize", &[&q, &one(-1.0), &one(1.0)], &[]).unwrap();
    let got = back.to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip([-1.0f32, 128.0 * 2.0 / 255.0 - 1.0, 1.0]) {
        assert!((g - w).abs() < 1e-6, "{got:?}");
    }
}

#[test]
fn quantize_v2_measures_or_takes_the_calibrated_range() {
    // measured range (-2, 1): r = 2, scale 63.5
    let x = f32s(&[-2.0, 1.0, 0.5], &[3]);
    let outs = invoke("_contrib_quantize_v2", &[&x], &[]).unwrap();
    assert_eq!(outs[0].to_vec::<i8>().unwrap(), vec![-127, 64, 32]);
    assert_eq!(range_of(&outs), (-2.0, 2.0));
    // `auto` with a calibrated minimum >= 0 is uint8: 1·255/4 + 0.5 = 64.25
    let calib = [
        ("out_type", AttrValue::from("auto")),
        ("min_calib_range", 0.0.into()),
        ("max_calib_range", 4.0.into()),
    ];
    let outs = invoke("_contrib_quantize_v2", &[&f32s(&[1.0, 4.0], &[2])], &calib).unwrap();
    assert_eq!((outs[0].dtype(), outs[0].to_vec::<u8>().unwrap()), (DType::U8, vec![64, 255]));
    assert_eq!(range_of(&outs), (0.0, 4.0));
    // codes pass through with their dtype's range
    let codes = NDArray::from_vec(vec![-5i8, 7], &[2]).unwrap();
    let outs = invoke("_contrib_quantize_v2", &[&codes], &[]).unwrap();
    assert_eq!(outs[0].to_vec::<i8>().unwrap(), vec![-5, 7]);
    assert_eq!(range_of(&outs), (-127.0, 127.0));
}

#[test]
fn requantize_narrows_int32_codes() {
    // range (-1, 1): the codes are 1, -0.5 and 0
    let q = NDArray::from_vec(vec![i32::MAX, -(1 << 30), 0], &[3]).unwrap();
    let outs = invoke("_contrib_requantize", &[&q, &one(-1.0), &one(1.0)], &[]).unwrap();
    assert_eq!(outs[0].to_vec::<i8>().unwrap(), vec![127, -64, 0]);
    assert_eq!(range_of(&outs).1, 1.0);
    let calib = [("min_calib_range", AttrValue::from(-2.0)), ("max_calib_range", 2.0.into())];
    let outs = invoke("_contrib_requantize", &[&q, &one(-1.0), &one(1.0)], &calib).unwrap();
    assert_eq!(outs[0].to_vec::<i8>().unwrap(), vec![64, -32, 0]);
    assert_eq!(range_of(&outs), (-2.0, 2.0));
}

#[test]
fn bad_inputs_are_errors_naming_the_operator() {
    let x64 = NDArray::from_vec(vec![0.5f64], &[1]).unwrap();
    let e = invoke("_contrib_quantize", &[&x64, &one(0.0), &one(1.0)], &[]).unwrap_err().to_string();
    assert!(e.contains("_contrib_quantize") && e.contains("float32"), "{e}");
    let e = invoke1("_contrib_dequantize", &[&one(1.0), &one(0.0), &one(1.0)], &[]).unwrap_err().to_string();
    assert!(e.contains("_contrib_dequantize") && e.contains("int8"), "{e}");
    let two = f32s(&[0.0, 1.0], &[2]);
    let e = invoke("_contrib_quantize", &[&one(0.5), &two, &one(1.0)], &[]).unwrap_err().to_string();
    assert!(e.contains("min_range"), "{e}");
    let q = NDArray::from_vec(vec![1i32], &[1]).unwrap();
    let e = invoke("_contrib_requantize", &[&q, &one(0.0), &one(1.0)], &[("out_type", "uint8".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("_contrib_requantize") && e.contains("out_type"), "{e}");
    let e = invoke("_contrib_quantize_v2", &[&one(1.0)], &[("min_calib_range", "low".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("min_calib_range"), "{e}");
}
