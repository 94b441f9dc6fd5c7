//! `_multi_lamb_update` and `_multi_mp_lamb_update`.

use super::{arr, close, read, run, tuple, Tensors};
use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray, Req};

/// MXNet 1.9.1 (`mx.nd.contrib.multi_lamb_update`) on [`Tensors`] with
/// step_count [1, 3], lrs (0.1, 0.05), wds (0.01, 0.2), beta1 0.8, beta2
/// 0.9, epsilon 1e-6, rescale_grad 0.5, clip_gradient 1, lower_bound 0.5,
/// upper_bound 3: new (master) weights, means and variances.
const W: [&[f64]; 2] = [
    &[0.36165863275527954, -1.0826812982559204, 1.8951613903045654],
    &[1.0550321340560913, -0.8400682210922241, 0.3025045692920685, 3.9072506427764893],
];
const M: [&[f64]; 2] = [
    &[0.2800000011920929, -0.21000000834465027, 0.14999999105930328],
    &[-0.19999998807907104, 0.4124999940395355, -0.125, 7.450580596923828e-09],
];
const V: [&[f64]; 2] = [
    &[0.10900002717971802, 0.042249999940395355, 0.056250013411045074],
    &[0.10000002384185791, 0.22539061307907104, 0.0703125, 0.4749999940395355],
];
/// The float16 weights of `mx.nd.contrib.multi_mp_lamb_update`.
const W16: [&[f64]; 2] =
    [&[0.361572265625, -1.0830078125, 1.8955078125], &[1.0546875, -0.83984375, 0.302490234375, 3.908203125]];
/// MXNet 1.9.1 with step_count [2, 2], wds (0, 0.1), bias_correction
/// False and the other attributes at their defaults.
const W_PLAIN: [&[f64]; 2] = [
    &[0.34478795528411865, -1.1870951652526855, 1.8265721797943115],
    &[1.1974068880081177, -0.8048226237297058, 0.28691309690475464, 3.9730751514434814],
];

fn attrs() -> Vec<(&'static str, AttrValue)> {
    vec![
        ("step_count", "[1, 3]".into()),
        ("learning_rates", tuple(&[0.1, 0.05])),
        ("wds", tuple(&[0.01, 0.2])),
        ("beta1", 0.8.into()),
        ("beta2", 0.9.into()),
        ("epsilon", 1e-6.into()),
        ("rescale_grad", 0.5.into()),
        ("clip_gradient", 1.0.into()),
        ("lower_bound", 0.5.into()),
        ("upper_bound", 3.0.into()),
        ("num_tensors", 2i64.into()),
    ]
}

fn inputs(t: &Tensors, mp: bool) -> Vec<&NDArray> {
    t.inputs(|t, i| {
        let mut g = vec![&t.w[i], &t.g[i], &t.m[i], &t.v[i]];
        g.extend(mp.then_some(&t.w32[i]));
        g
    })
}

#[test]
fn both_forms_match_mxnet_in_place() {
    for mp in [false, true] {
        let op = if mp { "_multi_mp_lamb_update" } else { "_multi_lamb_update" };
        let t = Tensors::new(if mp { DType::F16 } else { DType::F32 }, DType::F32);
        run(op, &inputs(&t, mp), &attrs(), &t.w, Req::Inplace);
        for i in 0..2 {
            close(&format!("{op} mean {i}"), &read(&t.m[i]), M[i], 1e-7);
            close(&format!("{op} var {i}"), &read(&t.v[i]), V[i], 1e-7);
            let master = if mp { &t.w32[i] } else { &t.w[i] };
            close(&format!("{op} weight {i}"), &read(master), W[i], 1e-6);
            if mp {
                assert_eq!(read(&t.w[i]), W16[i], "{op} float16 weight {i}");
            }
        }
    }
    let t = Tensors::new(DType::F32, DType::F32);
    let a: Vec<(&str, AttrValue)> = vec![
        ("step_count", "(2, 2)".into()),
        ("learning_rates", tuple(&[0.1, 0.05])),
        ("wds", tuple(&[0.0, 0.1])),
        ("bias_correction", false.into()),
        ("num_tensors", 2i64.into()),
    ];
    run("_multi_lamb_update", &inputs(&t, false), &a, &t.w, Req::Write);
    for (i, (w, want)) in t.w.iter().zip(W_PLAIN).enumerate() {
        close(&format!("no bias correction, weight {i}"), &read(w), want, 1e-6);
    }
}

#[test]
fn each_tensor_takes_both_phases() {
    // float64: the multi-tensor call equals lamb_update_phase1 + norms + lamb_update_phase2 per tensor
    let multi = Tensors::new(DType::F64, DType::F64);
    let outs = invoke("_multi_lamb_update", &inputs(&multi, false), &attrs()).unwrap();
    let s = Tensors::new(DType::F64, DType::F64);
    let norm = |x: &NDArray| arr(&[read(x).iter().map(|v| v * v).sum::<f64>().sqrt()], &[1], DType::F64);
    for (i, (t, lr, wd)) in [(1i64, 0.1, 0.01), (3, 0.05, 0.2)].into_iter().enumerate() {
        let a1: Vec<(&str, AttrValue)> = [("wd", wd), ("beta1", 0.8), ("beta2", 0.9), ("epsilon", 1e-6)]
            .into_iter()
            .chain([("rescale_grad", 0.5), ("clip_gradient", 1.0)])
            .map(|(k, v)| (k, v.into()))
            .chain([("t", t.into())])
            .collect();
        let g = invoke1("lamb_update_phase1", &[&s.w[i], &s.g[i], &s.m[i], &s.v[i]], &a1).unwrap();
        let a2: Vec<(&str, AttrValue)> =
            vec![("lr", lr.into()), ("lower_bound", 0.5.into()), ("upper_bound", 3.0.into())];
        let want = invoke1("lamb_update_phase2", &[&s.w[i], &g, &norm(&s.w[i]), &norm(&g)], &a2).unwrap();
        close(&format!("weight {i}"), &read(&outs[i]), &read(&want), 1e-15);
        assert_eq!((read(&multi.m[i]), read(&multi.v[i])), (read(&s.m[i]), read(&s.v[i])), "moments {i}");
    }
    assert_eq!(read(&multi.w[1]), super::W1.to_vec(), "separate outputs leave the weight");
}

#[test]
fn per_tensor_attributes_must_match_num_tensors() {
    let op = "_multi_lamb_update";
    let t = Tensors::new(DType::F32, DType::F32);
    let mut a = attrs();
    a[0] = ("step_count", "[1]".into());
    let e = invoke(op, &inputs(&t, false), &a).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("step_count") && e.contains("num_tensors"), "{e}");
    let mut a = attrs();
    a[1] = ("learning_rates", tuple(&[0.1, 0.1, 0.1]));
    let e = invoke(op, &inputs(&t, false), &a).unwrap_err().to_string();
    assert!(e.contains(op) && e.contains("learning_rates") && e.contains("num_tensors"), "{e}");
    let e = invoke("_multi_mp_lamb_update", &inputs(&t, false), &attrs()).unwrap_err().to_string();
    assert!(e.contains("_multi_mp_lamb_update") && e.contains("expects 10 inputs"), "{e}");
    let e = invoke(op, &[&t.w[0], &t.g[1], &t.m[0], &t.v[0], &t.w[1], &t.g[1], &t.m[1], &t.v[1]], &attrs())
        .unwrap_err()
        .to_string();
    assert!(e.contains(op) && e.contains("weight 0") && e.contains("shape"), "{e}");
}
