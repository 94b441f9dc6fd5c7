//! `mp_lamb_update_phase1` and `mp_lamb_update_phase2`.

use super::{arr, close, read, run, G0, S0, V0, W0};
use oxnet_core::{invoke, invoke1, AttrValue, DType, NDArray, Req};

/// MXNet 1.9.1: `mx.nd.mp_lamb_update_phase1` on float16 weight and grad
/// [`W0`], [`G0`], float32 mean [`S0`], var [`V0`], weight32 [`W0`], with
/// t 2, wd 0.01, beta1 0.8, beta2 0.9, epsilon 1e-6, rescale_grad 0.5,
/// clip_gradient 1: the float32 step g and the new moments.
const G: [f64; 3] = [1.0318772792816162, -1.2495278120040894, 0.7857791185379028];
const M: [f64; 3] = [0.2800000011920929, -0.21000000834465027, 0.14999999105930328];
const V: [f64; 3] = [0.10900002717971802, 0.042249999940395355, 0.056250013411045074];
/// MXNet 1.9.1: `mp_lamb_update_phase2` with r1 = |weight32| (2.4109128),
/// r2 = |g| (1.8009830), lr 0.1, lower_bound 0.5, upper_bound 2: the
/// float16 weight.
const W16: [f64; 3] = [0.385498046875, -1.111328125, 1.9130859375];

fn phase1_attrs() -> Vec<(&'static str, AttrValue)> {
    vec![
        ("t", 2i64.into()),
        ("wd", 0.01.into()),
        ("beta1", 0.8.into()),
        ("beta2", 0.9.into()),
        ("epsilon", 1e-6.into()),
        ("rescale_grad", 0.5.into()),
        ("clip_gradient", 1.0.into()),
    ]
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[test]
fn both_phases_match_mxnet() {
    let (w, grad) = (arr(&W0, &[3], DType::F16), arr(&G0, &[3], DType::F16));
    let (mean, var, w32) =
        (arr(&S0, &[3], DType::F32), arr(&V0, &[3], DType::F32), arr(&W0, &[3], DType::F32));
    let g = invoke1("mp_lamb_update_phase1", &[&w, &grad, &mean, &var, &w32], &phase1_attrs()).unwrap();
    assert_eq!(g.dtype(), DType::F32);
    close("g", &read(&g), &G, 1e-6);
    close("mean", &read(&mean), &M, 1e-7);
    close("var", &read(&var), &V, 1e-7);
    assert_eq!(read(&w32), W0.to_vec(), "phase 1 leaves the master copy");
    let (r1, r2) = (norm(&read(&w32)), norm(&read(&g)));
    let (r1a, r2a) = (arr(&[r1], &[1], DType::F32), arr(&[r2], &[1], DType::F32));
    let a: Vec<(&str, AttrValue)> =
        vec![("lr", 0.1.into()), ("lower_bound", 0.5.into()), ("upper_bound", 2.0.into())];
    run("mp_lamb_update_phase2", &[&w, &g, &r1a, &r2a, &w32], &a, std::slice::from_ref(&w), Req::Inplace);
    assert_eq!((w.dtype(), read(&w)), (DType::F16, W16.to_vec()));
    // the master copy takes the step in place (MXNet 1.9.1's kernel leaves it unchanged)
    let step = 0.1 * 2.0 / r2;
    let want: Vec<f64> = W0.iter().zip(read(&g)).map(|(w, g)| w - step * g).collect();
    close("weight32", &read(&w32), &want, 1e-6);
    assert_eq!(read(&w), read(&w32.astype(DType::F16).unwrap()), "the weight is the rounded master copy");
}

#[test]
fn phase2_ratio_is_one_for_a_zero_norm_and_outputs_may_be_separate() {
    let w = arr(&[1.0, 2.0], &[2], DType::F16);
    let w32 = arr(&[1.0, 2.0], &[2], DType::F32);
    let g = arr(&[1.0, 1.0], &[2], DType::F32);
    let (zero, four) = (arr(&[0.0], &[1], DType::F32), arr(&[4.0], &[1], DType::F32));
    let out = invoke("mp_lamb_update_phase2", &[&w, &g, &zero, &four, &w32], &[("lr", 0.5.into())]).unwrap();
    assert_eq!(read(&out[0]), vec![0.5, 1.5]);
    assert_eq!(read(&w), vec![1.0, 2.0], "a separate output leaves the weight");
    assert_eq!(read(&w32), vec![0.5, 1.5]);
}

#[test]
fn dtypes_are_checked() {
    let w = arr(&W0, &[3], DType::F16);
    let s = |d| arr(&S0, &[3], d);
    let e = invoke(
        "mp_lamb_update_phase1",
        &[&w, &w, &s(DType::F16), &s(DType::F32), &s(DType::F32)],
        &phase1_attrs(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("mp_lamb_update_phase1") && e.contains("float32"), "{e}");
    let one: NDArray = arr(&[1.0], &[1], DType::F32);
    let e = invoke("mp_lamb_update_phase2", &[&w, &w, &one, &one, &s(DType::F32)], &[("lr", 0.1.into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("mp_lamb_update_phase2") && e.contains("float32"), "{e}");
}
