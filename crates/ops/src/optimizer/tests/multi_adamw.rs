//! `_multi_adamw_update` and `_multi_mp_adamw_update`.

use super::{arr, close, read, run, tuple, Tensors};
use oxnet_core::{invoke, AttrValue, DType, NDArray, Req};

/// MXNet 1.9.1 (`mx.nd.contrib.multi_adamw_update`) on [`Tensors`] with
/// rescale_grad 0.5, lrs (0.1, 0.05), wds (0.01, 0.2), etas (1, 0.5),
/// beta1 0.8, beta2 0.9, epsilon 1e-6, clip_gradient 1: new (master)
/// weights, means and variances.
const W: [&[f64]; 2] = [
    &[0.4101907014846802, -1.1353346109390259, 1.9167547225952148],
    &[0.91581130027771, -0.6967217922210693, 0.23678506910800934, 3.5999999046325684],
];
const M: [&[f64]; 2] = [
    &[0.2800000309944153, -0.21000000834465027, 0.1499999761581421],
    &[-0.19999998807907104, 0.4124999940395355, -0.125, 0.0],
];
const V: [&[f64]; 2] = [
    &[0.10900002717971802, 0.042249999940395355, 0.056250035762786865],
    &[0.10000002384185791, 0.22539061307907104, 0.0703125, 0.4749999940395355],
];
/// The float16 weights of `mx.nd.contrib.multi_mp_adamw_update`.
const W16: [&[f64]; 2] =
    [&[0.41015625, -1.1357421875, 1.9169921875], &[0.916015625, -0.69677734375, 0.23681640625, 3.599609375]];

fn attrs() -> Vec<(&'static str, AttrValue)> {
    vec![
        ("lrs", tuple(&[0.1, 0.05])),
        ("wds", tuple(&[0.01, 0.2])),
        ("etas", tuple(&[1.0, 0.5])),
        ("beta1", 0.8.into()),
        ("beta2", 0.9.into()),
        ("epsilon", 1e-6.into()),
        ("clip_gradient", 1.0.into()),
        ("num_weights", 2i64.into()),
    ]
}

fn inputs<'a>(t: &'a Tensors, mp: bool, scale: &'a NDArray) -> Vec<&'a NDArray> {
    let mut ins = t.inputs(|t, i| {
        let mut g = vec![&t.w[i], &t.g[i], &t.m[i], &t.v[i]];
        g.extend(mp.then_some(&t.w32[i]));
        g
    });
    ins.push(scale);
    ins
}

#[test]
fn both_forms_match_mxnet_in_place() {
    let scale = arr(&[0.5], &[1], DType::F32);
    for mp in [false, true] {
        let op = if mp { "_multi_mp_adamw_update" } else { "_multi_adamw_update" };
        let t = Tensors::new(if mp { DType::F16 } else { DType::F32 }, DType::F32);
        run(op, &inputs(&t, mp, &scale), &attrs(), &t.w, Req::Inplace);
        for i in 0..2 {
            // MXNet's multi kernel writes the moments as beta*(m - g) + g: within float32 rounding
            close(&format!("{op} mean {i}"), &read(&t.m[i]), M[i], 1e-6);
            close(&format!("{op} var {i}"), &read(&t.v[i]), V[i], 1e-6);
            let master = if mp { &t.w32[i] } else { &t.w[i] };
            close(&format!("{op} weight {i}"), &read(master), W[i], 1e-6);
            if mp {
                assert_eq!(read(&t.w[i]), W16[i], "{op} float16 weight {i}");
            }
        }
    }
}

#[test]
fn each_weight_takes_the_single_tensor_step() {
    // float64: the multi-tensor call equals _adamw_update per weight with its rates
    let scale = arr(&[2.0], &[1], DType::F64);
    let multi = Tensors::new(DType::F64, DType::F64);
    let outs = invoke("_multi_adamw_update", &inputs(&multi, false, &scale), &attrs()).unwrap();
    let single = Tensors::new(DType::F64, DType::F64);
    for (i, (lr, wd, eta)) in [(0.1, 0.01, 1.0), (0.05, 0.2, 0.5)].into_iter().enumerate() {
        let a: Vec<(&str, AttrValue)> = vec![
            ("lr", lr.into()),
            ("wd", wd.into()),
            ("eta", eta.into()),
            ("beta1", 0.8.into()),
            ("beta2", 0.9.into()),
            ("epsilon", 1e-6.into()),
            ("clip_gradient", 1.0.into()),
        ];
        let s = &single;
        let want = invoke("_adamw_update", &[&s.w[i], &s.g[i], &s.m[i], &s.v[i], &scale], &a).unwrap();
        assert_eq!(read(&outs[i]), read(&want[0]), "weight {i}");
        assert_eq!(read(&multi.m[i]), read(&s.m[i]), "mean {i}");
        assert_eq!(read(&multi.v[i]), read(&s.v[i]), "var {i}");
    }
    assert_eq!(read(&multi.w[0]), super::W0.to_vec(), "separate outputs leave the weight");
}

#[test]
fn a_rescale_of_zero_nan_or_infinity_skips_every_weight() {
    for bad in [0.0, f64::NAN, f64::INFINITY] {
        let scale = arr(&[bad], &[1], DType::F32);
        let t = Tensors::new(DType::F16, DType::F32);
        run("_multi_mp_adamw_update", &inputs(&t, true, &scale), &attrs(), &t.w, Req::Inplace);
        let fresh = Tensors::new(DType::F16, DType::F32);
        for i in 0..2 {
            assert_eq!(read(&t.w[i]), read(&fresh.w[i]));
            assert_eq!(read(&t.w32[i]), read(&fresh.w32[i]));
            assert_eq!((read(&t.m[i]), read(&t.v[i])), (read(&fresh.m[i]), read(&fresh.v[i])));
        }
        // separate outputs receive the weights
        let t = Tensors::new(DType::F32, DType::F32);
        let outs = invoke("_multi_adamw_update", &inputs(&t, false, &scale), &attrs()).unwrap();
        assert_eq!((read(&outs[0]), read(&outs[1])), (read(&t.w[0]), read(&t.w[1])));
    }
}

#[test]
fn bad_calls_are_errors_naming_the_operator_and_argument() {
    let op = "_multi_adamw_update";
    let t = Tensors::new(DType::F32, DType::F32);
    let scale = arr(&[1.0], &[1], DType::F32);
    let mut a = attrs();
    a[2] = ("etas", tuple(&[1.0]));
    let e = invoke(op, &inputs(&t, false, &scale), &a).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("etas") && e.contains("num_weights"), "{e}");
    let e = invoke(op, &inputs(&t, false, &scale)[1..], &attrs()).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("expects 9 inputs"), "{e}");
    let two = arr(&[1.0, 1.0], &[2], DType::F32);
    let e = invoke(op, &inputs(&t, false, &two), &attrs()).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("rescale_grad") && e.contains("one element"), "{e}");
    let mp = "_multi_mp_adamw_update";
    let t16 = Tensors::new(DType::F16, DType::F16);
    let e = invoke(mp, &inputs(&t16, true, &scale), &attrs()).unwrap_err().to_string();
    assert!(e.contains(mp) && e.contains("float32"), "{e}");
}
