//! `_contrib_group_adagrad_update`.

use super::{arr, close, read, run, G1, W1};
use oxnet_core::{invoke, AttrValue, DType, Req};

const OP: &str = "_contrib_group_adagrad_update";

/// MXNet 1.9.1 (`mx.nd.contrib.group_adagrad_update` with the gradient as
/// row_sparse, all rows stored, out=weight) on weight [`W1`], grad [`G1`],
/// history [[0.5], [0]], lr 0.1, rescale_grad 0.5, clip_gradient 0.5,
/// epsilon 1e-5: the new weight and history.
const W: [f64; 4] = [1.0631464719772339, -0.7578933238983154, 0.16514936089515686, 4.113134384155273];
const H: [f64; 2] = [0.626953125, 0.1953125];

#[test]
fn matches_mxnet_in_place() {
    let (w, g, h) =
        (arr(&W1, &[2, 2], DType::F32), arr(&G1, &[2, 2], DType::F32), arr(&[0.5, 0.0], &[2, 1], DType::F32));
    let a: Vec<(&str, AttrValue)> = vec![
        ("lr", 0.1.into()),
        ("rescale_grad", 0.5.into()),
        ("clip_gradient", 0.5.into()),
        ("epsilon", 1e-5.into()),
    ];
    run(OP, &[&w, &g, &h], &a, std::slice::from_ref(&w), Req::Inplace);
    close("weight", &read(&w), &W, 1e-6);
    close("history", &read(&h), &H, 1e-7);
    // MXNet 1.9.1, float64, history of shape (rows,), default epsilon, lr 0.2; a row of
    // zero gradient keeps its weights and history
    let w = arr(&[1.0, 2.0, 3.0, -1.0, 0.5, 0.25], &[2, 3], DType::F64);
    let g = arr(&[0.5, -1.0, 2.0, 0.0, 0.0, 0.0], &[2, 3], DType::F64);
    let h = arr(&[0.0, 0.25], &[2], DType::F64);
    run(OP, &[&w, &g, &h], &[("lr", 0.2.into())], std::slice::from_ref(&w), Req::Write);
    let want = [0.9244073202505037, 2.1511853594989927, 2.6976292810020146, -1.0, 0.5, 0.25];
    // (MXNet holds lr and epsilon as float32: 0.2f32 moves the weight by ~1e-9)
    close("float64 weight", &read(&w), &want, 1e-8);
    close("float64 history", &read(&h), &[1.75, 0.25], 1e-15);
    // MXNet 1.9.1, a vector weight: every element is a row
    let w = arr(&[1.0, 2.0, 3.0], &[3], DType::F32);
    let h = arr(&[0.0, 0.25, 1.0], &[3], DType::F32);
    run(
        OP,
        &[&w, &arr(&[0.5, -1.0, 2.0], &[3], DType::F32), &h],
        &[("lr", 0.2.into())],
        std::slice::from_ref(&w),
        Req::Write,
    );
    close("vector weight", &read(&w), &[0.8000040054321289, 2.178884744644165, 2.8211147785186768], 1e-6);
    close("vector history", &read(&h), &[0.25, 1.25, 5.0], 1e-7);
}

#[test]
fn separate_output_and_bad_history() {
    let (w, g, h) =
        (arr(&W1, &[2, 2], DType::F32), arr(&G1, &[2, 2], DType::F32), arr(&[0.0, 0.0], &[2, 1], DType::F32));
    let out = invoke(OP, &[&w, &g, &h], &[("lr", 0.1.into())]).unwrap();
    assert_eq!(read(&w), W1.to_vec(), "a separate output leaves the weight");
    // history[r] = mean(g[r]^2); w - lr*g/sqrt(history + 1e-5)
    let h0 = (2.5f64 * 2.5 + 0.125 * 0.125) / 2.0;
    close("history", &read(&h), &[h0, (0.75f64 * 0.75 + 1.0) / 2.0], 1e-6);
    close("out[0]", &read(&out[0])[..1], &[1.0 + 0.1 * 2.5 / (h0 + 1e-5).sqrt()], 1e-6);
    let bad = arr(&[0.0, 0.0, 0.0], &[3, 1], DType::F32);
    let e = invoke(OP, &[&w, &g, &bad], &[("lr", 0.1.into())]).unwrap_err().to_string();
    assert!(e.contains(OP) && e.contains("history"), "{e}");
    let e = invoke(OP, &[&w, &g, &w], &[("lr", 0.1.into())]).unwrap_err().to_string();
    assert!(e.contains(OP) && e.contains("history"), "{e}");
}
