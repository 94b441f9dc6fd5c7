//! Tests of `_contrib_MultiBoxPrior`, `_contrib_MultiBoxTarget` and
//! `_contrib_MultiBoxDetection`: MXNet's values, hand-computed cases,
//! float64 (which MXNet's type inference refuses, its kernels not) and
//! errors.

use super::mx_values::F32;
use super::test_util::{arr, check_mx_cases, err, values};
use oxnet_core::check::compare;
use oxnet_core::{invoke, DType, NDArray};

const PRIOR: &str = "_contrib_MultiBoxPrior";
const TARGET: &str = "_contrib_MultiBoxTarget";
const DETECT: &str = "_contrib_MultiBoxDetection";

#[test]
fn multibox_operators_match_mxnet() {
    assert_eq!(check_mx_cases(&[PRIOR, TARGET, DETECT]), 9);
}

#[test]
fn multibox_float64_agrees_with_mxnet_float32() {
    for c in F32.iter().filter(|c| [PRIOR, TARGET, DETECT].contains(&c.op)) {
        let inputs: Vec<_> = c.inputs.iter().map(|(s, v)| arr(v, s, DType::F64)).collect();
        let refs: Vec<_> = inputs.iter().collect();
        let got = values(c.op, &refs, c.attrs);
        for (i, (g, (_, want))) in got.iter().zip(c.outs).enumerate() {
            compare(c.key, &format!("float64 output {i}"), g, want, 1e-5, 1e-5).unwrap();
        }
    }
}

#[test]
fn prior_boxes_by_hand() {
    let x = arr(&[0.0; 4], &[1, 1, 2, 2], DType::F32);
    let v = values(PRIOR, &[&x], &[("sizes", "(0.5,)")]);
    let quarter = [[0.0, 0.0, 0.5, 0.5], [0.5, 0.0, 1.0, 0.5], [0.0, 0.5, 0.5, 1.0], [0.5, 0.5, 1.0, 1.0]];
    assert_eq!(v[0], quarter.concat());
    let one = arr(&[0.0; 2], &[2, 1, 1, 1], DType::F64);
    let y = invoke(PRIOR, &[&one], &super::test_util::raw(&[("sizes", "[0.5, 0.25]"), ("ratios", "(1, 4)")]))
        .unwrap();
    assert_eq!((y[0].shape(), y[0].dtype()), (&[1usize, 3, 4][..], DType::F64));
    let want = [[0.25, 0.25, 0.75, 0.75], [0.375, 0.375, 0.625, 0.625], [0.0, 0.375, 1.0, 0.625]];
    assert_eq!(y[0].to_vec::<f64>().unwrap(), want.concat());
    let v = values(PRIOR, &[&one], &[("sizes", "(2,)"), ("clip", "True")]);
    assert_eq!(v[0], [0.0, 0.0, 1.0, 1.0]);
}

/// Three anchors: two quarters of the unit square and the bottom left one.
fn anchors() -> oxnet_core::NDArray {
    let a = [[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0], [0.0, 0.5, 0.5, 1.0]];
    arr(&a.concat(), &[1, 3, 4], DType::F32)
}

#[test]
fn targets_by_hand() {
    let a = anchors();
    let label = arr(&[3.0, 0.1, 0.0, 0.6, 0.5, -1.0, -1.0, -1.0, -1.0, -1.0], &[1, 2, 5], DType::F32);
    let preds = arr(&[2.0, 2.0, -1.0, 0.0, 0.0, 0.0], &[1, 2, 3], DType::F32);
    let v = values(TARGET, &[&a, &label, &preds], &[]);
    // the ground truth is the first anchor moved right by 0.1: x offset 0.1 / 0.5 / 0.1
    compare(
        TARGET,
        "loc_target",
        &v[0],
        &[2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        1e-5,
        1e-6,
    )
    .unwrap();
    assert_eq!(v[1], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(v[2], [4.0, 0.0, 0.0]);
    // mining one negative: the anchor least like background (the third)
    let v = values(TARGET, &[&a, &label, &preds], &[("negative_mining_ratio", "1")]);
    assert_eq!(v[2], [4.0, -1.0, 0.0]);
    // only padding: everything ignored
    let pad = arr(&[-1.0; 5], &[1, 1, 5], DType::F32);
    let v = values(TARGET, &[&a, &pad, &preds], &[("ignore_label", "-3")]);
    assert_eq!(v[2], [-3.0; 3]);
    assert!(v[0].iter().chain(&v[1]).all(|&e| e == 0.0));
}

#[test]
fn detections_by_hand() {
    let a = [[0.0, 0.0, 0.5, 0.5], [0.25, 0.0, 0.75, 0.5], [0.5, 0.5, 1.0, 1.0]];
    let a = arr(&a.concat(), &[1, 3, 4], DType::F64);
    let probs = arr(&[0.125, 0.25, 0.875, 0.75, 0.625, 0.0625, 0.125, 0.125, 0.0625], &[1, 3, 3], DType::F64);
    let loc = arr(&[0.0; 12], &[1, 12], DType::F64);
    // IoU of the first two is 1/3: suppressed from 0.3 on
    let v = values(DETECT, &[&probs, &loc, &a], &[("nms_threshold", "0.3")]);
    let want = [
        [0.0, 0.75, 0.0, 0.0, 0.5, 0.5],
        [-1.0, 0.625, 0.25, 0.0, 0.75, 0.5],
        [0.0, 0.0625, 0.5, 0.5, 1.0, 1.0],
    ];
    assert_eq!(v[0], want.concat());
    let v = values(DETECT, &[&probs, &loc, &a], &[("nms_threshold", "0.4")]);
    assert_eq!(v[0][6], 0.0);
    // below threshold: dropped, the last row empty
    let v = values(DETECT, &[&probs, &loc, &a], &[("threshold", "0.1"), ("nms_threshold", "0.4")]);
    assert_eq!(&v[0][12..], &[-1.0; 6]);
    // past nms_topk the rows keep their unsorted values but lose their class
    let v = values(DETECT, &[&probs, &loc, &a], &[("nms_topk", "1")]);
    assert_eq!(&v[0][..6], &want[0]);
    assert_eq!(
        &v[0][6..],
        &[[-1.0, 0.625, 0.25, 0.0, 0.75, 0.5], [-1.0, 0.0625, 0.5, 0.5, 1.0, 1.0]].concat()
    );
    // classes differ: no suppression unless forced
    let probs2 =
        arr(&[0.125, 0.25, 0.875, 0.75, 0.125, 0.0625, 0.125, 0.625, 0.0625], &[1, 3, 3], DType::F64);
    let v = values(DETECT, &[&probs2, &loc, &a], &[("nms_threshold", "0.3")]);
    assert_eq!((v[0][0], v[0][6]), (0.0, 1.0));
    let v = values(DETECT, &[&probs2, &loc, &a], &[("nms_threshold", "0.3"), ("force_suppress", "True")]);
    assert_eq!((v[0][0], v[0][6]), (0.0, -1.0));
}

#[test]
fn multibox_errors_name_the_input() {
    let a = anchors();
    let label = arr(&[3.0, 0.1, 0.0, 0.6, 0.5], &[1, 1, 5], DType::F32);
    let preds = arr(&[0.0; 6], &[1, 2, 3], DType::F32);
    let two = arr(&[0.0; 24], &[2, 3, 4], DType::F32);
    let e = err(TARGET, &[&two, &label, &preds], &[]);
    assert!(e.contains(TARGET) && e.contains("anchor") && e.contains("(2, 3, 4)"), "{e}");
    let e = err(TARGET, &[&a, &arr(&[0.0; 4], &[1, 1, 4], DType::F32), &preds], &[]);
    assert!(e.contains("label") && e.contains("(1, 1, 4)"), "{e}");
    let e = err(TARGET, &[&a, &label, &arr(&[0.0; 12], &[2, 2, 3], DType::F32)], &[]);
    assert!(e.contains("cls_pred") && e.contains("batch 1"), "{e}");
    let e = err(TARGET, &[&a, &label, &preds], &[("variances", "(0.1, 0.1, 0.2)")]);
    assert!(e.contains("variances") && e.contains("4 entries"), "{e}");
    let bad_pad = arr(&[-1.0, 0.0, 0.0, 1.0, 1.0], &[1, 1, 5], DType::F32);
    let e = err(TARGET, &[&a, &bad_pad, &preds], &[]);
    assert!(e.contains("padding"), "{e}");
    let e = err(
        TARGET,
        &[&a, &label, &preds],
        &[("negative_mining_ratio", "2"), ("negative_mining_thresh", "0")],
    );
    assert!(e.contains("negative_mining_thresh"), "{e}");

    let probs = arr(&[0.5; 6], &[1, 2, 3], DType::F32);
    let e = err(DETECT, &[&probs, &arr(&[0.0; 8], &[1, 8], DType::F32), &a], &[]);
    assert!(e.contains(DETECT) && e.contains("loc_pred") && e.contains("(1, 12)"), "{e}");
    let e = err(DETECT, &[&probs, &arr(&[0.0; 12], &[1, 12], DType::F32), &two], &[]);
    assert!(e.contains("anchor") && e.contains("(1, 3, 4)"), "{e}");
    let e = err(DETECT, &[&probs, &arr(&[0.0; 12], &[1, 12], DType::F64), &a], &[]);
    assert!(e.contains("dtype"), "{e}");

    let x = arr(&[0.0; 4], &[1, 2, 2], DType::F32);
    let e = err(PRIOR, &[&x], &[]);
    assert!(e.contains(PRIOR) && e.contains("data") && e.contains("(1, 2, 2)"), "{e}");
    let x4 = arr(&[0.0; 4], &[1, 1, 2, 2], DType::F32);
    assert!(err(PRIOR, &[&x4], &[("offsets", "(0.5, 1.5)")]).contains("offsets"));
    assert!(err(PRIOR, &[&x4], &[("steps", "(0.5, -1)")]).contains("steps"));
    assert!(err(PRIOR, &[&x4], &[("sizes", "()")]).contains("sizes"));
    assert!(err(PRIOR, &[&x4.astype(DType::I32).unwrap()], &[]).contains("int32"));
}

#[test]
fn multibox_operators_refuse_float16_as_mxnet() {
    // MXNet 1.9.1's type inference of the MultiBox operators admits float32
    // only; float64 is taken here as an extension, float16 is refused
    let h = |x: &NDArray| x.astype(DType::F16).unwrap();
    let a = anchors();
    let label = arr(&[3.0, 0.1, 0.0, 0.6, 0.5], &[1, 1, 5], DType::F32);
    let preds = arr(&[0.0; 6], &[1, 2, 3], DType::F32);
    let loc = arr(&[0.0; 12], &[1, 12], DType::F32);
    let x4 = arr(&[0.0; 4], &[1, 1, 2, 2], DType::F32);
    let calls: [(&str, Vec<NDArray>); 3] = [
        (PRIOR, vec![h(&x4)]),
        (TARGET, vec![h(&a), h(&label), h(&preds)]),
        (DETECT, vec![h(&preds), h(&loc), h(&a)]),
    ];
    for (op, inputs) in calls {
        let refs: Vec<&NDArray> = inputs.iter().collect();
        let e = err(op, &refs, &[]);
        assert!(e.contains(op) && e.contains("float16") && e.contains("float32 or float64"), "{e}");
    }
    let e = err(PRIOR, &[&x4.astype(DType::BF16).unwrap()], &[]);
    assert!(e.contains(PRIOR) && e.contains("bfloat16"), "{e}");
}
