//! Tests of `_contrib_box_iou`, `_contrib_box_nms`, `_contrib_box_encode`,
//! `_contrib_box_decode` and `_contrib_bipartite_matching`: MXNet's values,
//! hand-computed cases, gradients and errors.

use super::test_util::{arr, check_mx_cases, err, raw, values};
use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke, DType, NDArray, Req};

const IOU: &str = "_contrib_box_iou";
const NMS: &str = "_contrib_box_nms";
const ENCODE: &str = "_contrib_box_encode";
const DECODE: &str = "_contrib_box_decode";
const MATCH: &str = "_contrib_bipartite_matching";

#[test]
fn box_operators_match_mxnet() {
    // 14 calls in float32 and float64 each, 13 in float16
    assert_eq!(check_mx_cases(&[IOU, NMS, ENCODE, DECODE, MATCH]), 2 * 14 + 13);
}

#[test]
fn box_iou_example_of_mxnet() {
    for dt in [DType::F32, DType::F64] {
        let x = arr(&[0.5, 0.5, 1.0, 1.0, 0.0, 0.0, 0.5, 0.5], &[2, 4], dt);
        let y = arr(&[0.25, 0.25, 0.75, 0.75], &[1, 4], dt);
        let v = values(IOU, &[&x, &y], &[("format", "corner")]);
        // intersection 1/16 over 1/4 + 1/4 - 1/16
        for got in &v[0] {
            assert!((got - 1.0 / 7.0).abs() < 1e-7, "{v:?}");
        }
        let far = arr(&[5.0, 5.0, 6.0, 6.0], &[1, 4], dt);
        assert_eq!(values(IOU, &[&x, &far], &[])[0], [0.0, 0.0]);
    }
}

/// MXNet's documentation example: rows [id, score, x1, y1, x2, y2].
fn doc_boxes() -> NDArray {
    let rows = [
        [0.0, 0.5, 0.1, 0.1, 0.2, 0.2],
        [1.0, 0.4, 0.1, 0.1, 0.2, 0.2],
        [0.0, 0.3, 0.1, 0.1, 0.14, 0.14],
        [2.0, 0.6, 0.5, 0.5, 0.7, 0.8],
    ];
    arr(&rows.concat(), &[4, 6], DType::F64)
}

const DOC_ATTRS: [(&str, &str); 4] =
    [("overlap_thresh", "0.1"), ("id_index", "0"), ("force_suppress", "True"), ("coord_start", "2")];

#[test]
fn box_nms_example_of_mxnet_and_its_gradient() {
    let x = doc_boxes();
    x.attach_grad(Req::Write).unwrap();
    let outs = {
        let _r = autograd::record();
        invoke(NMS, &[&x], &raw(&DOC_ATTRS)).unwrap()
    };
    let mut want = vec![2.0, 0.6, 0.5, 0.5, 0.7, 0.8, 0.0, 0.5, 0.1, 0.1, 0.2, 0.2];
    want.extend([-1.0; 12]);
    assert_eq!(outs[0].to_vec::<f64>().unwrap(), want);
    // the hidden record: where each kept row came from
    assert_eq!(outs[1].shape(), &[4, 1]);
    assert_eq!(outs[1].to_vec::<f64>().unwrap(), [3.0, 0.0, -1.0, -1.0]);
    let dy: Vec<f64> = [0.1, 0.2, 0.3, 0.4].iter().flat_map(|&v| [v; 6]).collect();
    let dy = arr(&dy, &[4, 6], DType::F64);
    autograd::backward(&[&outs[0]], &[Some(&dy)], Default::default()).unwrap();
    let mut g = vec![0.2; 6];
    g.extend([0.0; 12]);
    g.extend([0.1; 6]);
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), g);
}

#[test]
fn box_nms_classes_thresholds_and_topk() {
    let x = doc_boxes();
    // per class: the two class-0 boxes overlap (IoU 0.16) and only they
    let v = values(NMS, &[&x], &[("overlap_thresh", "0.1"), ("id_index", "0")]);
    assert_eq!(&v[1], &[3.0, 0.0, 1.0, -1.0]);
    let v = values(NMS, &[&x], &[("overlap_thresh", "0.2"), ("id_index", "0")]);
    assert_eq!(&v[1], &[3.0, 0.0, 1.0, 2.0]);
    // background class 2 and scores not above valid_thresh are dropped first
    let v = values(NMS, &[&x], &[("id_index", "0"), ("background_id", "2"), ("valid_thresh", "0.35")]);
    assert_eq!(&v[1], &[0.0, 1.0, -1.0, -1.0]);
    // topk: only the 2 best take part
    let v = values(NMS, &[&x], &[("topk", "2"), ("overlap_thresh", "0.99")]);
    assert_eq!(&v[1], &[3.0, 0.0, -1.0, -1.0]);
    // topk = 0 copies the input and numbers every row
    let v = values(NMS, &[&x], &[("topk", "0")]);
    assert_eq!(v[0], x.to_vec::<f64>().unwrap());
    assert_eq!(&v[1], &[0.0, 1.0, 2.0, 3.0]);
    // nothing valid: every row -1
    let v = values(NMS, &[&x], &[("valid_thresh", "0.9")]);
    assert!(v.iter().flatten().all(|&e| e == -1.0), "{v:?}");
}

#[test]
fn box_nms_gradient_matches_central_differences() {
    let rows: Vec<f64> = (0..2 * 7)
        .flat_map(|i| {
            let (x, y) = (0.1 + (i * 5 % 7) as f64 * 0.3, 0.1 + (i * 3 % 7) as f64 * 0.25);
            [(i % 3) as f64, 0.05 + ((i * 11) % 14) as f64 / 14.0, x, y, x + 1.1, y + 0.9]
        })
        .collect();
    let x = arr(&rows, &[2, 7, 6], DType::F64);
    // (with out_format != in_format MXNet's gradient stays a plain copy of the
    // rows, not the derivative of the conversion: not checked here)
    for attrs in [&[("overlap_thresh", "0.3")][..], &[("id_index", "0"), ("topk", "5")][..]] {
        let mut c = OpChecker::new(NMS, std::slice::from_ref(&x));
        for (k, v) in attrs {
            c = c.attr(k, *v);
        }
        c.run().unwrap();
    }
}

#[test]
fn box_nms_errors_name_the_attribute() {
    let x = doc_boxes();
    let e = err(NMS, &[&x], &[("coord_start", "3")]);
    assert!(e.contains(NMS) && e.contains("coord_start"), "{e}");
    let e = err(NMS, &[&x], &[("score_index", "3")]);
    assert!(e.contains("score_index"), "{e}");
    let e = err(NMS, &[&x], &[("score_index", "6")]);
    assert!(e.contains("score_index") && e.contains("out of range"), "{e}");
    let e = err(NMS, &[&x], &[("id_index", "1")]);
    assert!(e.contains("id_index"), "{e}");
    let narrow = arr(&[0.0; 8], &[2, 4], DType::F32);
    let e = err(NMS, &[&narrow], &[]);
    assert!(e.contains(NMS) && e.contains("at least 5"), "{e}");
    let flat = arr(&[0.0; 6], &[6], DType::F32);
    let e = err(NMS, &[&flat], &[]);
    assert!(e.contains("data") && e.contains("(6,)"), "{e}");
    let e = err(NMS, &[&x.astype(DType::BF16).unwrap()], &[]);
    assert!(e.contains(NMS) && e.contains("bfloat16"), "{e}");
    let e = err(NMS, &[&x], &[("in_format", "xywh")]);
    assert!(e.contains("in_format"), "{e}");
}

#[test]
fn box_encode_and_decode_invert_each_other() {
    // a positive anchor matched to ref 1, a negative one
    let anchors = arr(&[1.0, 1.0, 3.0, 5.0, 0.0, 0.0, 1.0, 1.0], &[1, 2, 4], DType::F64);
    let refs = arr(&[9.0, 9.0, 9.5, 9.5, 2.0, 0.5, 6.0, 2.5], &[1, 2, 4], DType::F64);
    let samples = arr(&[1.0, -1.0], &[1, 2], DType::F64);
    let matches = arr(&[1.0, 0.0], &[1, 2], DType::F64);
    let means = arr(&[0.0; 4], &[4], DType::F64);
    let stds = arr(&[1.0; 4], &[4], DType::F64);
    let v = values(ENCODE, &[&samples, &matches, &anchors, &refs, &means, &stds], &[]);
    // ref 1: center (4, 1.5), size (4, 2); anchor 0: center (2, 3), size (2, 4)
    let want = [1.0, -0.375, 2f64.ln(), 0.5f64.ln()];
    for (g, w) in v[0][..4].iter().zip(want) {
        assert!((g - w).abs() < 1e-15, "{v:?}");
    }
    assert_eq!(&v[0][4..], &[0.0; 4]);
    assert_eq!(v[1], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
    let t = arr(&v[0], &[1, 2, 4], DType::F64);
    let back = values(DECODE, &[&t, &anchors], &[("format", "corner")]);
    for (g, w) in back[0][..4].iter().zip([2.0, 0.5, 6.0, 2.5]) {
        assert!((g - w).abs() < 1e-12, "{back:?}");
    }
    // a zero delta decodes to the anchor itself; clip limits the log sizes
    let big = arr(&[0.0, 0.0, 3.0, 3.0, 0.0, 0.0, 0.0, 0.0], &[1, 2, 4], DType::F64);
    let v = values(DECODE, &[&big, &anchors], &[("format", "corner"), ("clip", "1.0")]);
    let e = std::f64::consts::E;
    assert_eq!(&v[0][4..], &[0.0, 0.0, 1.0, 1.0]);
    for (g, w) in v[0][..4].iter().zip([2.0 - e, 3.0 - 2.0 * e, 2.0 + e, 3.0 + 2.0 * e]) {
        assert!((g - w).abs() < 1e-12, "{v:?}");
    }
}

#[test]
fn box_codec_errors_name_the_input() {
    let f = |v: &[f64], s: &[usize]| arr(v, s, DType::F32);
    let (samples, matches) = (f(&[1.0, 1.0], &[1, 2]), f(&[0.0, 3.0], &[1, 2]));
    let (anchors, refs) =
        (f(&[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0], &[1, 2, 4]), f(&[0.0, 0.0, 1.0, 1.0], &[1, 1, 4]));
    let (means, stds) = (f(&[0.0; 4], &[4]), f(&[1.0; 4], &[4]));
    let e = err(ENCODE, &[&samples, &matches, &anchors, &refs, &means, &stds], &[]);
    assert!(e.contains(ENCODE) && e.contains("matches") && e.contains("names no ref"), "{e}");
    let e = err(ENCODE, &[&samples, &matches, &anchors, &refs, &means, &f(&[1.0; 3], &[3])], &[]);
    assert!(e.contains("stds") && e.contains("(4,)"), "{e}");
    let e = err(ENCODE, &[&f(&[1.0; 3], &[1, 3]), &matches, &anchors, &refs, &means, &stds], &[]);
    assert!(e.contains("samples") && e.contains("(1, 2)"), "{e}");
    let e = err(ENCODE, &[&samples, &matches, &f(&[0.0; 6], &[1, 2, 3]), &refs, &means, &stds], &[]);
    assert!(e.contains("anchors") && e.contains("(1, 2, 3)"), "{e}");
    let e = err(DECODE, &[&anchors, &refs], &[]);
    assert!(e.contains(DECODE) && e.contains("anchors") && e.contains("(1, 1, 4)"), "{e}");
    let e = err(DECODE, &[&f(&[0.0; 4], &[1, 4]), &refs], &[]);
    assert!(e.contains("data") && e.contains("(1, 4)"), "{e}");
    let e = err(DECODE, &[&anchors, &anchors.astype(DType::F64).unwrap()], &[]);
    assert!(e.contains("dtype"), "{e}");
}

#[test]
fn bipartite_matching_example_of_mxnet() {
    let s = arr(&[0.5, 0.6, 0.1, 0.2, 0.3, 0.4], &[3, 2], DType::F32);
    let v = values(MATCH, &[&s], &[("threshold", "1e-12"), ("is_ascend", "False")]);
    assert_eq!(v, [vec![1.0, -1.0, 0.0], vec![2.0, 0.0]]);
    // a threshold stops the matching; topk = 1 still makes 2 matches, as MXNet
    let v = values(MATCH, &[&s], &[("threshold", "0.45")]);
    assert_eq!(v, [vec![1.0, -1.0, -1.0], vec![-1.0, 0.0]]);
    let v = values(MATCH, &[&s], &[("threshold", "0.0"), ("topk", "1")]);
    assert_eq!(v, [vec![1.0, -1.0, 0.0], vec![2.0, 0.0]]);
    let v = values(MATCH, &[&s], &[("threshold", "0.35"), ("is_ascend", "True")]);
    assert_eq!(v, [vec![-1.0, 0.0, -1.0], vec![1.0, -1.0]]);
    let e = err(MATCH, &[&arr(&[1.0; 3], &[3], DType::F32)], &[("threshold", "0")]);
    assert!(e.contains(MATCH) && e.contains("(3,)"), "{e}");
    let e = err(MATCH, &[&s], &[]);
    assert!(e.contains("threshold"), "{e}");
}

/// An operator, its inputs and attributes.
type Call<'a> = (&'a str, Vec<NDArray>, &'a [(&'a str, &'a str)]);

#[test]
fn box_operators_but_nms_have_zero_gradients() {
    let a = arr(&[0.0, 0.0, 2.0, 2.0, 1.0, 1.0, 3.0, 4.0], &[1, 2, 4], DType::F64);
    let calls: [Call; 3] = [
        (IOU, vec![a.clone(), a.clone()], &[]),
        (DECODE, vec![a.clone(), a.clone()], &[]),
        (MATCH, vec![arr(&[0.5, 0.2, 0.1, 0.7], &[2, 2], DType::F64)], &[("threshold", "0.1")]),
    ];
    for (op, inputs, attrs) in calls {
        for x in &inputs {
            x.attach_grad(Req::Write).unwrap();
        }
        let refs: Vec<&NDArray> = inputs.iter().collect();
        let y = {
            let _r = autograd::record();
            invoke(op, &refs, &raw(attrs)).unwrap()
        };
        y[0].backward().unwrap();
        for x in &inputs {
            assert!(x.grad().unwrap().to_vec::<f64>().unwrap().iter().all(|&g| g == 0.0), "{op}");
        }
    }
}

/// `rows` boxes `[0, 0, 0, 0, 1, 1]` (score 0: not valid) but for the
/// `(row, [id, score, x1, y1, x2, y2])` given.
fn sparse_boxes(rows: usize, set: &[(usize, [f64; 6])]) -> Vec<f64> {
    let mut d: Vec<f64> = (0..rows).flat_map(|_| [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]).collect();
    for (r, v) in set {
        d[r * 6..r * 6 + 6].copy_from_slice(v);
    }
    d
}

#[test]
fn float16_nms_records_round_to_half_like_mxnet() {
    // MXNet keeps the row numbers of the kept boxes in the data's dtype: in
    // float16, rows 2049 and 2051 are recorded as 2048 and 2052 (ties to
    // even), and the gradient goes to those rows (MXNet 1.9.1 does the same)
    let set = [
        (2049, [0.0, 0.875, 0.0, 0.0, 1.0, 1.0]),
        (5, [0.0, 0.75, 2.0, 2.0, 3.0, 3.0]),
        (2051, [0.0, 0.625, 4.0, 4.0, 5.0, 5.0]),
    ];
    let d = sparse_boxes(2100, &set);
    for (dt, rows) in [(DType::F16, [5, 2048, 2052]), (DType::F32, [5, 2049, 2051])] {
        let x = arr(&d, &[1, 2100, 6], dt);
        x.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            invoke(NMS, &[&x], &[]).unwrap()
        };
        let out = y[0].to_vec::<f64>().unwrap();
        assert_eq!(&out[..18], &[set[0].1, set[1].1, set[2].1].concat()[..], "{dt}");
        let rec = y[1].to_vec::<f64>().unwrap();
        let want_rec: Vec<f64> = [rows[1], rows[0], rows[2]].iter().map(|&r| r as f64).collect();
        assert_eq!((&rec[..3], rec[3]), (&want_rec[..], -1.0), "{dt}");
        let head = arr(&vec![2.0; 2100 * 6], &[1, 2100, 6], dt);
        autograd::backward(&[&y[0]], &[Some(&head)], Default::default()).unwrap();
        let g = x.grad().unwrap().to_vec::<f64>().unwrap();
        let hit: Vec<usize> = (0..2100).filter(|&r| g[r * 6..r * 6 + 6].iter().any(|&v| v != 0.0)).collect();
        assert_eq!(hit, rows, "{dt}");
    }
}

#[test]
fn float16_bipartite_markers_round_to_half_like_mxnet() {
    // the matched column 2049 is written as the half 2048, as MXNet does
    let mut s = vec![0.0; 2100];
    s[2049] = 1.0;
    for (dt, col) in [(DType::F16, 2048.0), (DType::F32, 2049.0)] {
        let v = values(MATCH, &[&arr(&s, &[1, 2100], dt)], &[("threshold", "0.5")]);
        assert_eq!(v[0], [col], "{dt}");
        let matched: Vec<usize> = (0..2100).filter(|&c| v[1][c] != -1.0).collect();
        assert_eq!((matched, v[1][2049]), (vec![2049], 0.0), "{dt}");
    }
}

#[test]
fn thresholds_compare_as_float32_whatever_the_dtype() {
    // two boxes of IoU 0.7: the float32 IoU 0.699999988 equals the float32
    // threshold 0.7 (kept), the half IoU 0.7002 and the double 0.7 exceed it
    // (suppressed): MXNet compares the DType IoU with the float threshold
    let d = [0.0, 0.875, 2.0, 1.625, 2.25, 2.5, 0.0, 0.75, 2.0, 1.625, 2.25, 2.875];
    for (dt, second) in [(DType::F16, -1.0), (DType::F32, 0.75), (DType::F64, -1.0)] {
        let v = values(NMS, &[&arr(&d, &[2, 6], dt)], &[("overlap_thresh", "0.7")]);
        assert_eq!((v[0][1], v[0][7]), (0.875, second), "{dt}");
    }
    // a half score 0.7002 passes the threshold 0.7, though 0.7 in half is 0.7002
    let s = arr(&[0.7, 0.5, 0.25, 0.7], &[2, 2], DType::F16);
    let v = values(MATCH, &[&s], &[("threshold", "0.7")]);
    assert_eq!(v, [vec![0.0, 1.0], vec![0.0, 1.0]]);
}

#[test]
fn box_operators_take_the_dtypes_of_mxnet() {
    let b = |dt: DType| arr(&[0.0, 0.0, 2.0, 2.0, 1.0, 1.0, 3.0, 4.0], &[1, 2, 4], dt);
    let rows = |dt: DType| arr(&[0.0, 0.9, 0.0, 0.0, 1.0, 1.0, 0.0, 0.8, 0.5, 0.5, 1.5, 1.5], &[2, 6], dt);
    let scores = |dt: DType| arr(&[0.5, 0.2, 0.1, 0.7], &[2, 2], dt);
    for dt in [DType::F32, DType::F64, DType::F16] {
        let y = invoke(IOU, &[&b(dt), &b(dt)], &[]).unwrap();
        assert_eq!(y[0].dtype(), dt);
        let y = invoke(NMS, &[&rows(dt)], &[]).unwrap();
        assert_eq!((y[0].dtype(), y[1].dtype()), (dt, dt));
        let y = invoke(DECODE, &[&b(dt), &b(dt)], &raw(&[("format", "corner")])).unwrap();
        assert_eq!(y[0].dtype(), dt);
        let y = invoke(MATCH, &[&scores(dt)], &raw(&[("threshold", "0.1")])).unwrap();
        assert_eq!((y[0].dtype(), y[1].dtype()), (dt, dt));
    }
    // bfloat16 and the integers: MXNet's MSHADOW_REAL_TYPE_SWITCH refuses them
    for dt in [DType::BF16, DType::I32, DType::U8] {
        for (op, inputs, attrs) in [
            (IOU, vec![b(dt), b(dt)], &[][..]),
            (NMS, vec![rows(dt)], &[][..]),
            (DECODE, vec![b(dt), b(dt)], &[][..]),
            (MATCH, vec![scores(dt)], &[("threshold", "0.1")][..]),
        ] {
            let refs: Vec<&NDArray> = inputs.iter().collect();
            let e = err(op, &refs, attrs);
            assert!(e.contains(op) && e.contains(dt.name()) && e.contains("float16"), "{e}");
        }
    }
    // inputs of different dtypes are refused too
    let e = err(IOU, &[&b(DType::F16), &b(DType::F32)], &[]);
    assert!(e.contains("dtype") && e.contains("float16"), "{e}");
}
