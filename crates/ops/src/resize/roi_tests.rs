//! Tests of `ROIPooling` and `_contrib_ROIAlign` beyond the MXNet values of
//! [`super::tests`]: gradients by central differences, regions off the
//! data or naming no image, errors.

use super::tests::{arr, raw, sample};
use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke1, DType, NDArray, Req};

const POOL: &str = "ROIPooling";
const ALIGN: &str = "_contrib_ROIAlign";

fn rois(rows: &[[f64; 5]], dtype: DType) -> NDArray {
    arr(rows.iter().flatten().copied().collect(), &[rows.len(), 5], dtype)
}

fn data(shape: &[usize], dtype: DType) -> NDArray {
    arr(sample(shape, 0), shape, dtype)
}

#[test]
fn roi_pooling_example_of_mxnet() {
    // the example of MXNet's documentation
    let x = arr((0..48).map(f64::from).collect(), &[1, 1, 8, 6], DType::F32);
    let r = rois(&[[0., 0., 0., 4., 4.]], DType::F32);
    let pool = |scale: &str| {
        let attrs = [("pooled_size", "(2, 2)"), ("spatial_scale", scale)];
        invoke1(POOL, &[&x, &r], &raw(&attrs)).unwrap().to_vec::<f32>().unwrap()
    };
    assert_eq!(pool("1.0"), [14., 16., 26., 28.]);
    assert_eq!(pool("0.7"), [7., 9., 19., 21.]);
}

#[test]
fn region_gradients_match_central_differences() {
    let x = data(&[2, 2, 6, 7], DType::F64);
    let r = rois(&[[0., 1.1, 1.1, 6.2, 5.2], [1., 0.3, 2.1, 4.2, 5.9], [1., 3.1, 1.1, 5.2, 3.2]], DType::F64);
    OpChecker::new(POOL, &[x.clone(), r.clone()])
        .attr("pooled_size", "(3, 2)")
        .attr("spatial_scale", 1.0)
        .no_grad(&[1])
        .run()
        .unwrap();
    for (sr, aligned) in [(-1, false), (2, false), (0, true), (3, true)] {
        OpChecker::new(ALIGN, &[x.clone(), r.clone()])
            .attr("pooled_size", "(2, 3)")
            .attr("spatial_scale", 0.9)
            .attr("sample_ratio", sr)
            .attr("aligned", aligned)
            .no_grad(&[1])
            .run()
            .unwrap();
    }
    let ps = data(&[2, 8, 4, 5], DType::F64);
    OpChecker::new(ALIGN, &[ps, r])
        .attr("pooled_size", "(2, 2)")
        .attr("spatial_scale", 1.0)
        .attr("position_sensitive", true)
        .no_grad(&[1])
        .run()
        .unwrap();
}

#[test]
fn rois_take_a_zero_gradient_and_missing_images_give_zero() {
    for op in [POOL, ALIGN] {
        let x = data(&[2, 1, 5, 5], DType::F32);
        let r = rois(&[[0., 0., 0., 3., 3.], [2., 0., 0., 3., 3.], [-1., 0., 0., 3., 3.]], DType::F32);
        x.attach_grad(Req::Write).unwrap();
        r.attach_grad(Req::Write).unwrap();
        let y = {
            let _rec = autograd::record();
            invoke1(op, &[&x, &r], &raw(&[("pooled_size", "(2, 2)"), ("spatial_scale", "1")])).unwrap()
        };
        let v = y.to_vec::<f32>().unwrap();
        assert!(v[..4].iter().all(|&a| a != 0.0), "{op}: {v:?}");
        assert_eq!(&v[4..], &[0.0; 8], "{op}");
        y.backward().unwrap();
        assert!(r.grad().unwrap().to_vec::<f32>().unwrap().iter().all(|&g| g == 0.0), "{op}");
        let g = x.grad().unwrap().to_vec::<f32>().unwrap();
        assert!(g[25..].iter().all(|&g| g == 0.0), "{op}: the second image is read by no valid region");
        assert!(g[..25].iter().any(|&g| g != 0.0), "{op}");
    }
}

#[test]
fn region_dtypes() {
    for dt in [DType::F32, DType::F64, DType::F16] {
        let (x, r) = (data(&[1, 2, 4, 4], dt), rois(&[[0., 0., 0., 2., 3.]], dt));
        for op in [POOL, ALIGN] {
            let y =
                invoke1(op, &[&x, &r], &raw(&[("pooled_size", "(2, 2)"), ("spatial_scale", "1")])).unwrap();
            assert_eq!((y.shape(), y.dtype()), (&[1usize, 2, 2, 2][..], dt), "{op}");
        }
    }
    let (x, r) = (data(&[1, 2, 4, 4], DType::F64), rois(&[[0., 0., 0., 2., 3.]], DType::F32));
    for op in [POOL, ALIGN] {
        let e =
            invoke1(op, &[&x, &r], &raw(&[("pooled_size", "(2, 2)"), ("spatial_scale", "1")])).unwrap_err();
        assert!(e.to_string().contains("dtype"), "{e}");
    }
}

#[test]
fn region_errors_name_the_attribute_and_shapes() {
    let x = data(&[1, 2, 6, 6], DType::F32);
    let r = rois(&[[0., 0., 0., 4., 4.]], DType::F32);
    for op in [POOL, ALIGN] {
        let err = |inputs: &[&NDArray], attrs: &[(&str, &str)]| {
            let e = invoke1(op, inputs, &raw(attrs)).unwrap_err().to_string();
            assert!(e.contains(op), "{e}");
            e
        };
        let ok = [("pooled_size", "(2, 2)"), ("spatial_scale", "0.5")];
        let four = arr(vec![0.; 8], &[2, 4], DType::F32);
        let e = err(&[&x, &four], &ok);
        assert!(e.contains("rois") && e.contains("(2, 4)"), "{e}");
        let flat = arr(vec![0.; 5], &[5], DType::F32);
        let e = err(&[&x, &flat], &ok);
        assert!(e.contains("rois") && e.contains("(5,)"), "{e}");
        let e = err(&[&arr(vec![0.; 12], &[2, 6], DType::F32), &r], &ok);
        assert!(e.contains("data") && e.contains("(2, 6)"), "{e}");
        let e = err(&[&x, &r], &[("pooled_size", "(2,)"), ("spatial_scale", "0.5")]);
        assert!(e.contains("pooled_size") && e.contains("2 entries"), "{e}");
        let e = err(&[&x, &r], &[("pooled_size", "(0, 2)"), ("spatial_scale", "0.5")]);
        assert!(e.contains("pooled_size") && e.contains("positive"), "{e}");
        let e = err(&[&x, &r], &[("pooled_size", "(2, 2)"), ("spatial_scale", "2")]);
        assert!(e.contains("spatial_scale") && e.contains('2'), "{e}");
        let e = err(&[&x, &r], &[("pooled_size", "(2, 2)")]);
        assert!(e.contains("spatial_scale"), "{e}");
    }
    let attrs = [("pooled_size", "(2, 2)"), ("spatial_scale", "1"), ("position_sensitive", "True")];
    let e = invoke1(ALIGN, &[&data(&[1, 6, 4, 4], DType::F32), &r], &raw(&attrs)).unwrap_err().to_string();
    assert!(e.contains("position_sensitive") && e.contains("(1, 6, 4, 4)"), "{e}");
    let flat_roi = rois(&[[0., 2., 2., 2., 4.]], DType::F32);
    let attrs = [("pooled_size", "(2, 2)"), ("spatial_scale", "1"), ("aligned", "True")];
    let e = invoke1(ALIGN, &[&x, &flat_roi], &raw(&attrs)).unwrap_err().to_string();
    assert!(e.contains("aligned") && e.contains("region 0"), "{e}");
}

#[test]
fn empty_and_extreme_regions() {
    let attrs = raw(&[("pooled_size", "(2, 2)"), ("spatial_scale", "1")]);
    for op in [POOL, ALIGN] {
        let x = data(&[2, 2, 4, 4], DType::F32);
        let none = arr(vec![], &[0, 5], DType::F32);
        assert_eq!(invoke1(op, &[&x, &none], &attrs).unwrap().shape(), &[0, 2, 2, 2], "{op}");
        let flat = arr(vec![], &[2, 2, 0, 4], DType::F32);
        let r = rois(&[[0., 0., 0., 2., 2.]], DType::F32);
        let y = invoke1(op, &[&flat, &r], &attrs).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [0.0; 8], "{op}");
        let huge = rois(&[[0., -1e30, -1e18, 1e30, 1e18]], DType::F64);
        let x64 = data(&[2, 2, 4, 4], DType::F64);
        let mut one = raw(&[("pooled_size", "(1, 1)"), ("spatial_scale", "1")]);
        if op == ALIGN {
            one.push(("sample_ratio", "2".into()));
        }
        assert_eq!(invoke1(op, &[&x64, &huge], &one).unwrap().shape(), &[1, 2, 1, 1], "{op}");
    }
    // an adaptive grid over a huge region would not end: an error suggests sample_ratio
    let x = data(&[1, 1, 4, 4], DType::F32);
    let e =
        invoke1(ALIGN, &[&x, &rois(&[[0., 0., 0., 1e30, 2.]], DType::F32)], &attrs).unwrap_err().to_string();
    assert!(e.contains("region 0") && e.contains("sample_ratio"), "{e}");
}
