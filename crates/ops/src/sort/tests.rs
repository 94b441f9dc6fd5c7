//! Tests of `topk`, `sort` and `argsort`: values, indices, masks, shapes
//! and dtypes against MXNet 1.9.1's results; tie and NaN order against
//! numpy's stable sort; gradients and requests by the op checker.

use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke, invoke1, AttrValue, DType, NDArray, Req};

fn a2(v: &[f32], r: usize, c: usize) -> NDArray {
    NDArray::from_vec(v.to_vec(), &[r, c]).unwrap()
}

fn ints(x: &NDArray) -> Vec<i64> {
    x.to_vec::<f64>().unwrap().iter().map(|v| *v as i64).collect()
}

/// 23 values with many ties.
const TIES: [f32; 23] =
    [3., 1., 3., 2., 1., 3., 0., 2., 2., 1., 0., 3., 1., 2., 0., 3., 2., 1., 0., 0., 1., 2., 3.];

#[test]
fn topk_examples_from_mxnet_docs() {
    let x = a2(&[0.3, 0.2, 0.4, 0.1, 0.3, 0.2], 2, 3);
    let y = invoke1("topk", &[&x], &[]).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[2usize, 1][..], DType::F32));
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2., 1.]);
    let v = invoke1("topk", &[&x], &[("ret_typ", "value".into()), ("k", 2i64.into())]).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.4, 0.3, 0.3, 0.2]);
    let v = invoke1(
        "topk",
        &[&x],
        &[("ret_typ", "value".into()), ("k", 2i64.into()), ("is_ascend", true.into())],
    )
    .unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.2, 0.3, 0.1, 0.2]);
    let v = invoke1("topk", &[&x], &[("ret_typ", "value".into()), ("k", 2i64.into()), ("axis", 0i64.into())])
        .unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.3, 0.3, 0.4, 0.1, 0.2, 0.2]);
    let both = invoke("topk", &[&x], &[("ret_typ", "both".into()), ("k", 2i64.into())]).unwrap();
    assert_eq!(both.len(), 2);
    assert_eq!(both[0].to_vec::<f32>().unwrap(), vec![0.4, 0.3, 0.3, 0.2]);
    assert_eq!(both[1].to_vec::<f32>().unwrap(), vec![2., 0., 1., 2.]);
    let flat = invoke(
        "topk",
        &[&a2(&[1., 5., 3., 4., 2., 6.], 2, 3)],
        &[("ret_typ", "both".into()), ("k", 2i64.into()), ("axis", AttrValue::None)],
    )
    .unwrap();
    assert_eq!(flat[0].shape(), &[2]);
    assert_eq!(flat[0].to_vec::<f32>().unwrap(), vec![6., 5.]);
    assert_eq!(flat[1].to_vec::<f32>().unwrap(), vec![5., 1.]);
}

#[test]
fn mask_and_k_below_one() {
    let x = a2(&[1., 5., 3., 4., 2., 6.], 2, 3);
    let m = invoke1("topk", &[&x], &[("ret_typ", "mask".into()), ("k", 2i64.into())]).unwrap();
    assert_eq!((m.shape(), m.to_vec::<f32>().unwrap()), (&[2usize, 3][..], vec![0., 1., 1., 1., 0., 1.]));
    let all =
        invoke1("topk", &[&x], &[("ret_typ", "value".into()), ("k", 0i64.into()), ("axis", 0i64.into())])
            .unwrap();
    assert_eq!(all.to_vec::<f32>().unwrap(), vec![4., 5., 6., 1., 2., 3.]);
}

#[test]
fn ties_keep_their_order_along_the_axis() {
    // expected: numpy's argsort(kind='stable') of the values, and of their negatives
    let y = NDArray::from_vec(TIES.to_vec(), &[23]).unwrap();
    let top3 = invoke1("topk", &[&y], &[("k", 3i64.into())]).unwrap();
    assert_eq!(ints(&top3), vec![0, 2, 5]);
    let low2 = invoke1("topk", &[&y], &[("k", 2i64.into()), ("is_ascend", true.into())]).unwrap();
    assert_eq!(ints(&low2), vec![6, 10]);
    let up = invoke1("argsort", &[&y], &[]).unwrap();
    assert_eq!(
        ints(&up),
        vec![6, 10, 14, 18, 19, 1, 4, 9, 12, 17, 20, 3, 7, 8, 13, 16, 21, 0, 2, 5, 11, 15, 22]
    );
    let down = invoke1("argsort", &[&y], &[("is_ascend", false.into())]).unwrap();
    assert_eq!(
        ints(&down),
        vec![0, 2, 5, 11, 15, 22, 3, 7, 8, 13, 16, 21, 1, 4, 9, 12, 17, 20, 6, 10, 14, 18, 19]
    );
    // the same on a long line, where topk takes the heap path and argsort the radix sort
    let long: Vec<f32> = (0..4000).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
    let mut expect: Vec<usize> = (0..4000).collect();
    expect.sort_by(|&a, &b| long[b].partial_cmp(&long[a]).unwrap());
    let z = NDArray::from_vec(long, &[4000]).unwrap();
    let top = invoke1("topk", &[&z], &[("k", 400i64.into())]).unwrap();
    assert_eq!(ints(&top), expect[..400].iter().map(|&p| p as i64).collect::<Vec<_>>());
    let all = invoke1("argsort", &[&z], &[("is_ascend", false.into())]).unwrap();
    assert_eq!(ints(&all), expect.iter().map(|&p| p as i64).collect::<Vec<_>>());
}

#[test]
fn sort_and_argsort_examples_and_dtypes() {
    let x = a2(&[1., 4., 3., 1.], 2, 2);
    assert_eq!(invoke1("sort", &[&x], &[]).unwrap().to_vec::<f32>().unwrap(), vec![1., 4., 1., 3.]);
    let flat = invoke1("sort", &[&x], &[("axis", AttrValue::None)]).unwrap();
    assert_eq!((flat.shape(), flat.to_vec::<f32>().unwrap()), (&[4usize][..], vec![1., 1., 3., 4.]));
    let down = invoke1("sort", &[&x], &[("is_ascend", false.into())]).unwrap();
    assert_eq!(down.to_vec::<f32>().unwrap(), vec![4., 1., 3., 1.]);
    // one output: the gradient finds the positions again
    assert_eq!(invoke("sort", &[&x], &[]).unwrap().len(), 1);

    let z = a2(&[0.3, 0.2, 0.4, 0.1, 0.3, 0.2], 2, 3);
    assert_eq!(
        invoke1("argsort", &[&z], &[]).unwrap().to_vec::<f32>().unwrap(),
        vec![1., 0., 2., 0., 2., 1.]
    );
    let cols = invoke1("argsort", &[&z], &[("axis", 0i64.into()), ("dtype", "int32".into())]).unwrap();
    assert_eq!((cols.dtype(), cols.to_vec::<i32>().unwrap()), (DType::I32, vec![1, 0, 1, 0, 1, 0]));
    let flat = invoke1("argsort", &[&z], &[("axis", AttrValue::None), ("dtype", "float64".into())]).unwrap();
    assert_eq!(flat.to_vec::<f64>().unwrap(), vec![3., 1., 5., 0., 4., 2.]);

    // integer data keeps its dtype in values; indices wrap in uint8 as MXNet's cast does
    let i = NDArray::from_vec((0..300).collect::<Vec<i64>>(), &[300]).unwrap();
    let v = invoke1("topk", &[&i], &[("ret_typ", "value".into()), ("k", 2i64.into())]).unwrap();
    assert_eq!((v.dtype(), v.to_vec::<i64>().unwrap()), (DType::I64, vec![299, 298]));
    let u = invoke1("topk", &[&i], &[("k", 3i64.into()), ("dtype", "uint8".into())]).unwrap();
    assert_eq!(u.to_vec::<u8>().unwrap(), vec![43, 42, 41]);
}

#[test]
fn nan_sorts_after_infinity() {
    let x = NDArray::from_vec(vec![1.0f32, f32::NAN, 3., 2., f32::NAN, 0.], &[6]).unwrap();
    let s = invoke1("sort", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(&s[..4], &[0., 1., 2., 3.]);
    assert!(s[4].is_nan() && s[5].is_nan());
    assert_eq!(ints(&invoke1("argsort", &[&x], &[]).unwrap()), vec![5, 0, 3, 2, 1, 4]);
    // descending: NaN first, in position order
    assert_eq!(ints(&invoke1("topk", &[&x], &[("k", 3i64.into())]).unwrap()), vec![1, 4, 2]);
}

#[test]
fn errors_name_the_argument() {
    let x = a2(&[1., 2., 3., 4., 5., 6.], 2, 3);
    let e = invoke1("topk", &[&x], &[("k", 4i64.into())]).unwrap_err().to_string();
    assert!(e.contains('k') && e.contains('3'), "{e}");
    let e = invoke1("sort", &[&x], &[("axis", 2i64.into())]).unwrap_err().to_string();
    assert!(e.contains("axis"), "{e}");
    let e = invoke1("argsort", &[&x], &[("dtype", "int8".into())]).unwrap_err().to_string();
    assert!(e.contains("dtype"), "{e}");
    assert!(invoke1("topk", &[&x], &[("ret_typ", "values".into())]).is_err());
    let scalar = NDArray::from_vec(vec![3.0f32], &[]).unwrap();
    assert!(invoke1("sort", &[&scalar], &[]).is_err());
}

#[test]
fn value_gradients_scatter_back() {
    let z = a2(&[1., 2., 3., 4., 0., 5.], 3, 2);
    z.attach_grad(Req::Write).unwrap();
    let v = {
        let _r = autograd::record();
        invoke1("topk", &[&z], &[("axis", 0i64.into()), ("k", 2i64.into()), ("ret_typ", "value".into())])
            .unwrap()
    };
    autograd::backward(&[&v], &[Some(&a2(&[10., 20., 30., 40.], 2, 2))], Default::default()).unwrap();
    assert_eq!(z.grad().unwrap().to_vec::<f32>().unwrap(), vec![30., 0., 10., 40., 0., 20.]);
    let s = {
        let _r = autograd::record();
        invoke1("sort", &[&z], &[("axis", AttrValue::None), ("is_ascend", false.into())]).unwrap()
    };
    let og = NDArray::from_vec(vec![0.0f32, 1., 2., 3., 4., 5.], &[6]).unwrap();
    autograd::backward(&[&s], &[Some(&og)], Default::default()).unwrap();
    assert_eq!(z.grad().unwrap().to_vec::<f32>().unwrap(), vec![4., 3., 2., 1., 5., 0.]);
    // integer data: the gradient keeps the dtype
    let a = NDArray::from_vec((0..50).collect::<Vec<i32>>(), &[50]).unwrap();
    a.attach_grad(Req::Write).unwrap();
    let b = {
        let _r = autograd::record();
        invoke1("topk", &[&a], &[("k", 3i64.into()), ("ret_typ", "value".into())]).unwrap()
    };
    autograd::backward(
        &[&b],
        &[Some(&NDArray::from_vec(vec![7i32, 8, 9], &[3]).unwrap())],
        Default::default(),
    )
    .unwrap();
    let g = a.grad().unwrap().to_vec::<i32>().unwrap();
    assert_eq!((&g[47..], g[..47].iter().all(|v| *v == 0)), (&[9, 8, 7][..], true));
}

#[test]
fn op_checker_on_every_form() {
    let x =
        NDArray::from_vec(vec![0.3f64, -1.2, 2.5, 0.9, -0.4, 1.7, 3.1, -2.2, 0.05, 1.1, -0.7, 2.0], &[3, 4])
            .unwrap();
    for (attrs, name) in [
        (vec![("ret_typ", "value"), ("k", "2")], "topk"),
        (vec![("ret_typ", "both"), ("k", "3"), ("axis", "0")], "topk"),
        (vec![("ret_typ", "value"), ("k", "5"), ("axis", "None"), ("is_ascend", "True")], "topk"),
        (vec![("ret_typ", "indices"), ("k", "2")], "topk"),
        (vec![("ret_typ", "mask"), ("k", "2"), ("axis", "0")], "topk"),
        (vec![], "sort"),
        (vec![("axis", "None"), ("is_ascend", "False")], "sort"),
        (vec![("axis", "0")], "argsort"),
    ] {
        let mut c = OpChecker::new(name, std::slice::from_ref(&x));
        for (k, v) in attrs {
            c = c.attr(k, v);
        }
        c.run().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn sorted_values_keep_every_bit() {
    // zeros of both signs stay in line order within their run; NaN keeps its payload
    let nan = f32::from_bits(0x7fc0_1234);
    let x = NDArray::from_vec(vec![0.0f32, -0.0, nan, 1.0, -0.0, 0.0, -2.0, -f32::INFINITY], &[8]).unwrap();
    let bits = |a: &NDArray| a.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let up = invoke1("sort", &[&x], &[]).unwrap();
    let expect: Vec<u32> =
        [-f32::INFINITY, -2.0, 0.0, -0.0, -0.0, 0.0, 1.0, nan].iter().map(|v| v.to_bits()).collect();
    assert_eq!(bits(&up), expect);
    let down = invoke1("sort", &[&x], &[("is_ascend", false.into())]).unwrap();
    let expect: Vec<u32> =
        [nan, 1.0, 0.0, -0.0, -0.0, 0.0, -2.0, -f32::INFINITY].iter().map(|v| v.to_bits()).collect();
    assert_eq!(bits(&down), expect);
}

#[test]
fn sorted_values_along_inner_axes_and_added() {
    // (3, 2, 2) sorted along axis 1 and axis 0, float64 and int32, written and added
    let v: Vec<f64> = vec![5., -1., 2., 7., 0., 3., -4., 3., 9., 9., -9., 1.];
    let x = NDArray::from_vec(v.clone(), &[3, 2, 2]).unwrap();
    let s = invoke1("sort", &[&x], &[("axis", 0i64.into())]).unwrap();
    assert_eq!(s.to_vec::<f64>().unwrap(), vec![0., -1., -9., 1., 5., 3., -4., 3., 9., 9., 2., 7.]);
    let s = invoke1("sort", &[&x], &[("axis", 1i64.into()), ("is_ascend", false.into())]).unwrap();
    assert_eq!(s.to_vec::<f64>().unwrap(), vec![5., 7., 2., -1., 0., 3., -4., 3., 9., 9., -9., 1.]);
    let i = NDArray::from_vec(v.iter().map(|&a| a as i32).collect::<Vec<_>>(), &[3, 2, 2]).unwrap();
    let out = NDArray::from_vec(vec![100i32; 12], &[3, 2, 2]).unwrap();
    let op = oxnet_core::registry::get("sort").unwrap();
    let attrs = op.parse_attrs(&[("axis", 0i64.into())]).unwrap();
    oxnet_core::invoke_into(&op, &[&i], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![100, 99, 91, 101, 105, 103, 96, 103, 109, 109, 102, 107]);
}
