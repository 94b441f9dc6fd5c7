//! Tests of `_contrib_Proposal` and `_contrib_MultiProposal`: MXNet's
//! values, a batch against single images, padding by repetition, gradients
//! and errors.

use super::test_util::{arr, check_mx_cases, err, raw, values};
use oxnet_core::{autograd, invoke, DType, NDArray, Req};

const SINGLE: &str = "_contrib_Proposal";
const MULTI: &str = "_contrib_MultiProposal";

#[test]
fn proposals_match_mxnet() {
    assert_eq!(check_mx_cases(&[SINGLE, MULTI]), 3);
}

/// Values in [0, 1) of a simple congruential sequence.
fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 40) as f64 / (1u64 << 24) as f64
        })
        .collect()
}

#[test]
fn a_batch_gives_what_its_images_give() {
    let (n, a, h, w) = (3, 12, 9, 8);
    let cls = arr(&noise(n * 2 * a * h * w, 1), &[n, 2 * a, h, w], DType::F32);
    let deltas: Vec<f64> = noise(n * 4 * a * h * w, 2).iter().map(|v| v - 0.5).collect();
    let bbox = arr(&deltas, &[n, 4 * a, h, w], DType::F32);
    let info = arr(&[140.0, 120.0, 1.0, 100.0, 128.0, 0.8, 144.0, 60.0, 0.5], &[n, 3], DType::F32);
    let attrs = [("rpn_pre_nms_top_n", "300"), ("rpn_post_nms_top_n", "40"), ("output_score", "True")];
    let multi = values(MULTI, &[&cls, &bbox, &info], &attrs);
    assert_eq!((multi[0].len(), multi[1].len()), (n * 40 * 5, n * 40));
    for b in 0..n {
        let one = |x: &NDArray| x.slice_axis(0, b as i64, Some(b as i64 + 1)).unwrap();
        let single = values(SINGLE, &[&one(&cls), &one(&bbox), &one(&info)], &attrs);
        for (r, row) in single[0].chunks(5).enumerate() {
            let got = &multi[0][(b * 40 + r) * 5..(b * 40 + r + 1) * 5];
            assert_eq!(got[0], b as f64);
            assert_eq!(&got[1..], &row[1..], "image {b} row {r}");
        }
        assert_eq!(&multi[1][b * 40..(b + 1) * 40], &single[1][..]);
    }
}

#[test]
fn fewer_kept_boxes_repeat() {
    // one anchor of 16 x 16 on a 1 x 1 map: always kept, repeated
    let cls = arr(&[0.25, 0.75], &[1, 2, 1, 1], DType::F32);
    let bbox = arr(&[0.0; 4], &[1, 4, 1, 1], DType::F32);
    let info = arr(&[16.0, 16.0, 1.0], &[1, 3], DType::F32);
    let attrs = [("scales", "(1,)"), ("ratios", "(1,)"), ("rpn_post_nms_top_n", "3")];
    let with = |more: &[(&'static str, &'static str)]| [attrs.as_slice(), more].concat();
    let v = values(SINGLE, &[&cls, &bbox, &info], &with(&[("rpn_min_size", "4"), ("output_score", "True")]));
    assert_eq!(v[0], [[0.0, 0.0, 0.0, 15.0, 15.0]; 3].concat());
    assert_eq!(v[1], [0.75; 3]);
    // too small for rpn_min_size x scale: grown by half of it on each side and scored -1
    let v = values(SINGLE, &[&cls, &bbox, &info], &with(&[("rpn_min_size", "20"), ("output_score", "1")]));
    assert_eq!(&v[0][..5], &[0.0, -10.0, -10.0, 25.0, 25.0]);
    assert_eq!(v[1], [-1.0; 3]);
    // without output_score: one output
    let y = invoke(SINGLE, &[&cls, &bbox, &info], &raw(&attrs)).unwrap();
    assert_eq!(y.len(), 1);
}

#[test]
fn proposals_have_zero_gradients() {
    for (op, n) in [(SINGLE, 1), (MULTI, 2)] {
        let cls = arr(&noise(n * 6 * 2 * 2, 3), &[n, 6, 2, 2], DType::F32);
        let bbox = arr(&vec![0.0; n * 48], &[n, 12, 2, 2], DType::F32);
        let info = arr(&[32.0, 32.0, 1.0, 30.0, 20.0, 1.0][..3 * n], &[n, 3], DType::F32);
        let inputs = [cls, bbox, info];
        for x in &inputs {
            x.attach_grad(Req::Write).unwrap();
        }
        let attrs =
            [("scales", "(1, 2, 4)"), ("ratios", "(1,)"), ("rpn_post_nms_top_n", "5"), ("output_score", "1")];
        let y = {
            let _r = autograd::record();
            invoke(op, &[&inputs[0], &inputs[1], &inputs[2]], &raw(&attrs)).unwrap()
        };
        assert_eq!(y[0].shape(), &[5 * n, 5]);
        autograd::backward(&[&y[0], &y[1]], &[None, None], Default::default()).unwrap();
        for x in &inputs {
            assert!(x.grad().unwrap().to_vec::<f32>().unwrap().iter().all(|&g| g == 0.0), "{op}");
        }
    }
}

#[test]
fn proposal_errors_name_the_input() {
    let f = |n: usize, s: &[usize]| arr(&vec![0.5; n], s, DType::F32);
    let (cls, bbox, info) =
        (f(24, &[1, 6, 2, 2]), f(48, &[1, 12, 2, 2]), arr(&[32.0, 32.0, 1.0], &[1, 3], DType::F32));
    // the default 4 scales x 3 ratios need 24 channels
    let e = err(SINGLE, &[&cls, &bbox, &info], &[]);
    assert!(
        e.contains(SINGLE)
            && e.contains("cls_prob")
            && e.contains("(1, 6, 2, 2)")
            && e.contains("len(scales) 4"),
        "{e}"
    );
    let ok = [("scales", "(1, 2, 4)"), ("ratios", "(1,)")];
    let e = err(SINGLE, &[&f(48, &[2, 6, 2, 2]), &f(96, &[2, 12, 2, 2]), &f(6, &[2, 3])], &ok);
    assert!(e.contains("one image"), "{e}");
    let e = err(MULTI, &[&f(48, &[2, 6, 2, 2]), &bbox, &f(6, &[2, 3])], &ok);
    assert!(e.contains(MULTI) && e.contains("bbox_pred") && e.contains("(2, 12, 2, 2)"), "{e}");
    let e = err(SINGLE, &[&cls, &bbox, &f(2, &[1, 2])], &ok);
    assert!(e.contains("im_info") && e.contains("(1, 3)"), "{e}");
    let big = arr(&[64.0, 32.0, 1.0], &[1, 3], DType::F32);
    let e = err(SINGLE, &[&cls, &bbox, &big], &ok);
    assert!(e.contains("im_info") && e.contains("4 x 2"), "{e}");
    let d = |x: &NDArray| x.astype(DType::F64).unwrap();
    let e = err(SINGLE, &[&d(&cls), &d(&bbox), &d(&info)], &ok);
    assert!(e.contains("float32") && e.contains("float64"), "{e}");
    // float16 too: MXNet's Proposal and MultiProposal take float32 only
    let h = |x: &NDArray| x.astype(DType::F16).unwrap();
    for op in [SINGLE, MULTI] {
        let e = err(op, &[&h(&cls), &h(&bbox), &h(&info)], &ok);
        assert!(e.contains(op) && e.contains("float16") && e.contains("expected float32"), "{e}");
    }
    let e = err(SINGLE, &[&cls, &bbox, &info], &[ok.as_slice(), &[("feature_stride", "0")]].concat());
    assert!(e.contains("feature_stride"), "{e}");
    let e = err(SINGLE, &[&cls, &bbox, &info], &[ok.as_slice(), &[("rpn_post_nms_top_n", "-1")]].concat());
    assert!(e.contains("rpn_post_nms_top_n"), "{e}");
}
