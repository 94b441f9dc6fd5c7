//! Tests of channel-last `Pooling` (NWC, NHWC, NDHWC): values and
//! gradients MXNet 1.9.1 computed, agreement with the channel-first call
//! on permuted data, gradients by central differences.

use crate::conv::layout::{array_to_first, shape_to_last};
use oxnet_core::check::{assert_close, compare, OpChecker};
use oxnet_core::{autograd, invoke1, AttrValue, DType, NDArray, Req};

fn close(what: &str, got: &NDArray, want: &[f64]) {
    compare("Pooling", what, &got.to_vec::<f64>().unwrap(), want, 1e-6, 1e-6).unwrap();
}

/// `1, 2, ..., n` in `shape`.
fn counting(shape: &[usize], dtype: DType) -> NDArray {
    let v: Vec<f64> = (1..=shape.iter().product::<usize>()).map(|v| v as f64).collect();
    NDArray::from_vec(v, shape).unwrap().astype(dtype).unwrap()
}

/// The output and data gradient of `Pooling` on `x` with head gradient
/// `head` (`1..=n` in order when `None`).
fn run(x: &NDArray, attrs: &[(&str, AttrValue)], head: Option<&NDArray>) -> (NDArray, NDArray) {
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("Pooling", &[x], attrs).unwrap()
    };
    let counting = counting(y.shape(), y.dtype());
    autograd::backward(&[&y], &[Some(head.unwrap_or(&counting))], Default::default()).unwrap();
    (y, x.grad().unwrap())
}

#[test]
fn values_and_gradients_computed_by_mxnet() {
    #[rustfmt::skip]
    let x = [3., -1., 0.5, 2., -2., 4., 1., 0., 5., -3., 2.5, 1.5, -0.5, 6., 2., -4., 0., 3.];
    let x = NDArray::from_vec(x.to_vec(), &[1, 3, 3, 2]).unwrap().astype(DType::F32).unwrap();
    let attrs = |extra: &[(&'static str, AttrValue)]| {
        let mut a: Vec<(&str, AttrValue)> = vec![("kernel", "(2, 2)".into()), ("layout", "NHWC".into())];
        a.extend(extra.iter().cloned());
        a
    };
    // avg, stride 1, pad 1, padding not counted; head gradient 1..=32
    let (y, dx) = run(
        &x,
        &attrs(&[("pad", "(1, 1)".into()), ("pool_type", "avg".into()), ("count_include_pad", false.into())]),
        None,
    );
    assert_eq!(y.shape(), &[1, 4, 4, 2]);
    #[rustfmt::skip]
    close("avg values", &y, &[
        3.0, -1.0, 1.75, 0.5, -0.75, 3.0, -2.0, 4.0, 2.0, -0.5, 2.375, -0.5, 1.5, 1.125, 0.25, 2.75,
        0.25, 3.0, 1.875, -0.25, 2.375, -0.625, 1.25, 2.25, -0.5, 6.0, 0.75, 1.0, 1.0, -0.5, 0.0, 3.0,
    ]);
    #[rustfmt::skip]
    close("avg gradient", &dx, &[
        9.75, 12.0, 10.0, 11.5, 20.25, 22.5, 20.5, 22.0, 16.0, 17.0, 27.5, 29.0, 51.75, 54.0, 38.0,
        39.5, 62.25, 64.5,
    ]);
    // max, stride 2, pad 1, 'full' (windows wholly in the padding give the
    // lowest float); head gradient 1..=18
    let (y, dx) = run(
        &x,
        &attrs(&[
            ("pad", "(1, 1)".into()),
            ("stride", "(2, 2)".into()),
            ("pooling_convention", "full".into()),
        ]),
        None,
    );
    let lo = f32::MIN as f64;
    #[rustfmt::skip]
    close("max values", &y, &[
        3.0, -1.0, 0.5, 4.0, lo, lo, 1.0, 6.0, 5.0, 3.0, lo, lo, lo, lo, lo, lo, lo, lo,
    ]);
    #[rustfmt::skip]
    close("max gradient", &dx, &[
        1.0, 2.0, 3.0, 0.0, 0.0, 4.0, 7.0, 0.0, 9.0, 0.0, 0.0, 0.0, 0.0, 8.0, 0.0, 0.0, 0.0, 10.0,
    ]);
    // global sum
    let (y, dx) = run(&x, &attrs(&[("global_pool", true.into()), ("pool_type", "sum".into())]), None);
    assert_eq!(y.shape(), &[1, 1, 1, 2]);
    close("sum values", &y, &[11.5, 8.5]);
    close("sum gradient", &dx, &[1., 2., 1., 2., 1., 2., 1., 2., 1., 2., 1., 2., 1., 2., 1., 2., 1., 2.]);
    // NWC lp (p = 2), head gradient of ones
    let x = NDArray::from_vec(vec![1.0f32, 2., 3., -1., 0.5, 4., 2., 1.], &[1, 4, 2]).unwrap();
    let lp = [
        ("kernel", "(2,)".into()),
        ("stride", "(2,)".into()),
        ("pool_type", "lp".into()),
        ("p_value", 2.into()),
        ("layout", "NWC".into()),
    ];
    let ones = NDArray::from_vec(vec![1.0f32; 4], &[1, 2, 2]).unwrap();
    let (y, dx) = run(&x, &lp, Some(&ones));
    close("lp values", &y, &[3.1622777, 2.2360680, 2.0615528, 4.1231055]);
    #[rustfmt::skip]
    close("lp gradient", &dx, &[
        0.31622776, 0.89442718, 0.94868326, -0.44721359, 0.24253564, 0.97014254, 0.97014254, 0.24253564,
    ]);
}

fn to_last(a: &NDArray) -> NDArray {
    let mut axes = vec![0];
    axes.extend(2..a.ndim());
    axes.push(1);
    a.transpose(Some(&axes)).unwrap().copy().unwrap()
}

#[test]
fn matches_channel_first_in_1d_2d_3d() {
    for (shape, layout, kernel, stride, pad) in [
        (&[2, 3, 7][..], "NWC", "(3,)", "(2,)", "(1,)"),
        (&[2, 3, 5, 6][..], "NHWC", "(3, 2)", "(2, 1)", "(1, 0)"),
        (&[1, 2, 4, 5, 3][..], "NDHWC", "(2, 3, 2)", "(1, 2, 1)", "(0, 1, 1)"),
    ] {
        for pool_type in ["max", "avg", "sum", "lp"] {
            for convention in ["valid", "full"] {
                let attrs: Vec<(&str, AttrValue)> = vec![
                    ("kernel", kernel.into()),
                    ("stride", stride.into()),
                    ("pad", pad.into()),
                    ("pool_type", pool_type.into()),
                    ("p_value", 3.into()),
                    ("pooling_convention", convention.into()),
                ];
                let x = NDArray::random_uniform(0.1, 1.0, shape, DType::F64).unwrap();
                let (y, dx) = run(&x, &attrs, None);
                let mut attrs_last = attrs.clone();
                attrs_last.push(("layout", layout.into()));
                let (y_last, dx_last) =
                    run(&to_last(&x), &attrs_last, Some(&to_last(&counting(y.shape(), y.dtype()))));
                assert_eq!(y_last.shape(), &shape_to_last(y.shape())[..]);
                assert_close(&array_to_first(&y_last).unwrap(), &y, 1e-12, 1e-12).unwrap();
                assert_close(&array_to_first(&dx_last).unwrap(), &dx, 1e-12, 1e-12).unwrap();
            }
        }
    }
}

#[test]
fn gradients_match_central_differences() {
    let x = NDArray::random_uniform(0.1, 1.0, &[2, 4, 3, 2], DType::F64).unwrap();
    for pool_type in ["avg", "lp"] {
        OpChecker::new("Pooling", std::slice::from_ref(&x))
            .attr("kernel", "(2, 2)")
            .attr("pad", "(1, 0)")
            .attr("pool_type", pool_type)
            .attr("p_value", 2)
            .attr("layout", "NHWC")
            .run()
            .unwrap();
    }
}
