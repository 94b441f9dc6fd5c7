//! Tests of the interleaved attention products: values against MXNet 1.9.1
//! and against a plain loop reference, gradients against central
//! differences (first and second order), and shape and dtype errors.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::{assert_close, compare, OpChecker};
use oxnet_core::{invoke1, AttrValue, DType, NDArray, Req};

const SELF_QK: &str = "_contrib_interleaved_matmul_selfatt_qk";
const SELF_VAL: &str = "_contrib_interleaved_matmul_selfatt_valatt";
const ED_QK: &str = "_contrib_interleaved_matmul_encdec_qk";
const ED_VAL: &str = "_contrib_interleaved_matmul_encdec_valatt";

fn heads(h: i64) -> [(&'static str, AttrValue); 1] {
    [("heads", AttrValue::Int(h))]
}

/// `((i·a mod m) - off) / 8` for `i < n`: the inputs of the MXNet fixtures.
fn vals(n: usize, a: usize, m: usize, off: f64) -> Vec<f64> {
    (0..n).map(|i| ((i * a % m) as f64 - off) * 0.125).collect()
}

fn arr(v: Vec<f64>, shape: &[usize], dt: DType) -> NDArray {
    NDArray::from_vec(v, shape).unwrap().astype(dt).unwrap()
}

fn rand(shape: &[usize]) -> NDArray {
    NDArray::random_uniform(-1.0, 1.0, shape, DType::F64).unwrap()
}

fn values(x: &NDArray) -> Vec<f64> {
    x.to_vec::<f64>().unwrap()
}

/// A projection `(len, batch, heads·parts·hd)` read per head and chunk.
struct Proj<'a> {
    x: &'a [f64],
    batch: usize,
    heads: usize,
    parts: usize,
    hd: usize,
}

impl Proj<'_> {
    fn at(&self, l: usize, b: usize, h: usize, part: usize, e: usize) -> f64 {
        let width = self.heads * self.parts * self.hd;
        self.x[(l * self.batch + b) * width + (h * self.parts + part) * self.hd + e]
    }
}

/// Scores `(batch·heads, lq, lk)`: `(q / sqrt(hd)) · kᵀ` by loops.
fn ref_scores(q: &Proj, q_part: usize, lq: usize, k: &Proj, k_part: usize, lk: usize) -> Vec<f64> {
    let scale = 1.0 / (q.hd as f64).sqrt();
    let mut out = Vec::new();
    for b in 0..q.batch {
        for h in 0..q.heads {
            for i in 0..lq {
                for j in 0..lk {
                    let s: f64 = (0..q.hd).map(|e| q.at(i, b, h, q_part, e) * k.at(j, b, h, k_part, e)).sum();
                    out.push(s * scale);
                }
            }
        }
    }
    out
}

/// Values `(lq, batch, heads·hd)`: `attention · v` by loops.
fn ref_values(att: &[f64], lq: usize, v: &Proj, v_part: usize, lk: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..lq {
        for b in 0..v.batch {
            for h in 0..v.heads {
                for e in 0..v.hd {
                    let n = b * v.heads + h;
                    out.push((0..lk).map(|j| att[(n * lq + i) * lk + j] * v.at(j, b, h, v_part, e)).sum());
                }
            }
        }
    }
    out
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    compare("interleaved", what, got, want, tol, tol).unwrap();
}

#[test]
fn forward_matches_mxnet() {
    // inputs and outputs computed with MXNet 1.9.1 (float32, CPU)
    let (l, b, h, hd, lk) = (2, 2, 2, 2, 3);
    let f = DType::F32;
    let qkv = arr(vals(l * b * 3 * h * hd, 5, 11, 5.0), &[l, b, 3 * h * hd], f);
    let att = arr(vals(b * h * l * l, 3, 7, 3.0), &[b * h, l, l], f);
    let q = arr(vals(l * b * h * hd, 3, 5, 2.0), &[l, b, h * hd], f);
    let kv = arr(vals(lk * b * 2 * h * hd, 7, 13, 6.0), &[lk, b, 2 * h * hd], f);
    let att2 = arr(vals(b * h * l * lk, 5, 9, 4.0), &[b * h, l, lk], f);

    let y = invoke1(SELF_QK, &[&qkv], &heads(2)).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[4usize, 2, 2][..], f));
    let want = [
        -0.2762135863304138,
        -0.22097086906433105,
        0.28726211190223694,
        0.24306795001029968,
        0.19887377321720123,
        0.19887377321720123,
        0.22097086906433105,
        0.24306795001029968,
        0.22097086906433105,
        0.1657281517982483,
        0.18782523274421692,
        0.15467961132526398,
        0.15467961132526398,
        0.1657281517982483,
        0.18782523274421692,
        0.22097086906433105,
    ];
    close("selfatt_qk vs MXNet", &values(&y), &want, 1e-6);

    let y = invoke1(SELF_VAL, &[&qkv, &att], &heads(2)).unwrap();
    assert_eq!(y.shape(), &[2, 2, 4]);
    let want = [
        -0.1875, 0.09375, 0.03125, -0.3125, -0.140625, 0.09375, 0.234375, -0.015625, 0.140625, -0.046875,
        0.015625, -0.3125, -0.0625, 0.015625, 0.234375, 0.0,
    ];
    close("selfatt_valatt vs MXNet", &values(&y), &want, 1e-6);

    let y = invoke1(ED_QK, &[&q, &kv], &heads(2)).unwrap();
    assert_eq!(y.shape(), &[4, 2, 3]);
    let want = [
        0.14363105595111847,
        -0.0883883461356163,
        0.11048543453216553,
        -0.13258251547813416,
        0.04419417306780815,
        -0.06629125773906708,
        0.11048543453216553,
        -0.0883883461356163,
        0.14363105595111847,
        0.12153397500514984,
        -0.11048543453216553,
        0.0883883461356163,
        -0.11048543453216553,
        0.0,
        0.11048543453216553,
        0.13258251547813416,
        -0.06629125773906708,
        -0.12153397500514984,
        0.06629125773906708,
        -0.07733980566263199,
        0.06629125773906708,
        0.13258251547813416,
        -0.04419417306780815,
        0.06629125773906708,
    ];
    close("encdec_qk vs MXNet", &values(&y), &want, 1e-6);

    let y = invoke1(ED_VAL, &[&kv, &att2], &heads(2)).unwrap();
    assert_eq!(y.shape(), &[2, 2, 4]);
    let want = [
        0.453125, -0.40625, 0.359375, -0.125, 0.25, -0.03125, -0.3125, 0.453125, -0.34375, 0.390625,
        0.265625, 0.015625, -0.359375, -0.03125, 0.34375, -0.34375,
    ];
    close("encdec_valatt vs MXNet", &values(&y), &want, 1e-6);
}

/// Gradients of `op(inputs)` with head gradient `w`, through autograd.
fn grads(op: &str, inputs: &[&NDArray], w: &NDArray, h: i64) -> Vec<Vec<f64>> {
    let xs: Vec<NDArray> = inputs.iter().map(|x| x.copy().unwrap()).collect();
    for x in &xs {
        x.attach_grad(Req::Write).unwrap();
    }
    let y = {
        let _r = autograd::record();
        invoke1(op, &xs.iter().collect::<Vec<_>>(), &heads(h)).unwrap()
    };
    autograd::backward(&[&y], &[Some(w)], BackwardOptions::default()).unwrap();
    xs.iter().map(|x| values(&x.grad().unwrap())).collect()
}

#[test]
fn gradients_match_mxnet() {
    // head gradients and resulting input gradients from MXNet 1.9.1 (float32)
    let (l, b, h, hd, lk) = (2, 2, 2, 2, 3);
    let f = DType::F32;
    let qkv = arr(vals(l * b * 3 * h * hd, 5, 11, 5.0), &[l, b, 3 * h * hd], f);
    let w = arr(vals(b * h * l * l, 2, 5, 2.0), &[b * h, l, l], f);
    let g = grads(SELF_QK, &[&qkv], &w, 2);
    let want = [
        -0.11048543453216553,
        0.022097086533904076,
        0.22097086906433105,
        -0.022097086533904076,
        0.0,
        0.0,
        0.0,
        0.06629125773906708,
        0.03314562886953354,
        -0.03314562886953354,
        0.0,
        0.0,
        -0.011048543266952038,
        -0.011048543266952038,
        0.022097086533904076,
        -0.14363105595111847,
        0.0,
        0.0,
        -0.03314562886953354,
        0.022097086533904076,
        -0.11048543453216553,
        0.055242717266082764,
        0.0,
        0.0,
        0.06629125773906708,
        0.0,
        -0.055242717266082764,
        0.011048543266952038,
        0.0,
        0.0,
        0.022097086533904076,
        -0.11048543453216553,
        -0.022097086533904076,
        -0.022097086533904076,
        0.0,
        0.0,
        0.022097086533904076,
        -0.0883883461356163,
        0.0,
        0.055242717266082764,
        0.0,
        0.0,
        0.06629125773906708,
        0.011048543266952038,
        0.12153397500514984,
        -0.04419417306780815,
        0.0,
        0.0,
    ];
    close("selfatt_qk gradient vs MXNet", &g[0], &want, 1e-6);

    let kv = arr(vals(lk * b * 2 * h * hd, 7, 13, 6.0), &[lk, b, 2 * h * hd], f);
    let att = arr(vals(b * h * l * lk, 5, 9, 4.0), &[b * h, l, lk], f);
    let w = arr(vals(l * b * h * hd, 3, 7, 3.0), &[l, b, h * hd], f);
    let g = grads(ED_VAL, &[&kv, &att], &w, 2);
    let want_kv = [
        0.0, 0.0, 0.1875, 0.09375, 0.0, 0.0, 0.015625, -0.109375, 0.0, 0.0, 0.09375, -0.078125, 0.0, 0.0,
        -0.15625, 0.1875, 0.0, 0.0, -0.046875, -0.09375, 0.0, 0.0, 0.171875, -0.03125, 0.0, 0.0, -0.1875,
        0.125, 0.0, 0.0, 0.109375, -0.046875, 0.0, 0.0, 0.140625, 0.140625, 0.0, 0.0, 0.046875, -0.09375,
        0.0, 0.0, 0.09375, -0.09375, 0.0, 0.0, -0.1875, 0.140625,
    ];
    let want_att = [
        0.234375, -0.140625, 0.09375, 0.09375, -0.140625, 0.234375, -0.203125, 0.25, 0.09375, 0.171875,
        -0.109375, -0.1875, -0.21875, -0.21875, 0.1875, 0.125, 0.203125, -0.125, 0.25, -0.203125, 0.15625,
        -0.046875, 0.1875, -0.1875,
    ];
    close("encdec_valatt keys_values gradient vs MXNet", &g[0], &want_kv, 1e-6);
    close("encdec_valatt attention gradient vs MXNet", &g[1], &want_att, 1e-6);
}

/// Runs all four operators on random float64 inputs of the given sizes and
/// compares with the loop reference.
fn check_against_reference(l: usize, lk: usize, b: usize, h: usize, hd: usize, dt: DType, tol: f64) {
    let qkv = rand(&[l, b, 3 * h * hd]);
    let att = rand(&[b * h, l, l]);
    let q = rand(&[l, b, h * hd]);
    let kv = rand(&[lk, b, 2 * h * hd]);
    let att2 = rand(&[b * h, l, lk]);
    let (qkv_v, q_v, kv_v) = (values(&qkv), values(&q), values(&kv));
    let p3 = Proj { x: &qkv_v, batch: b, heads: h, parts: 3, hd };
    let p1 = Proj { x: &q_v, batch: b, heads: h, parts: 1, hd };
    let p2 = Proj { x: &kv_v, batch: b, heads: h, parts: 2, hd };
    let run = |op: &str, xs: &[&NDArray]| {
        let cast: Vec<NDArray> = xs.iter().map(|x| x.astype(dt).unwrap()).collect();
        let y = invoke1(op, &cast.iter().collect::<Vec<_>>(), &heads(h as i64)).unwrap();
        assert_eq!(y.dtype(), dt);
        values(&y)
    };
    close("selfatt_qk", &run(SELF_QK, &[&qkv]), &ref_scores(&p3, 0, l, &p3, 1, l), tol);
    close("selfatt_valatt", &run(SELF_VAL, &[&qkv, &att]), &ref_values(&values(&att), l, &p3, 2, l), tol);
    close("encdec_qk", &run(ED_QK, &[&q, &kv]), &ref_scores(&p1, 0, l, &p2, 0, lk), tol);
    close("encdec_valatt", &run(ED_VAL, &[&kv, &att2]), &ref_values(&values(&att2), l, &p2, 1, lk), tol);
}

#[test]
fn forward_matches_reference_in_every_float_dtype() {
    check_against_reference(3, 4, 2, 3, 5, DType::F64, 1e-12);
    check_against_reference(3, 4, 2, 3, 5, DType::F32, 1e-5);
    check_against_reference(3, 4, 2, 3, 5, DType::F16, 2e-2);
    // one sequence, one head; head_dim 1
    check_against_reference(1, 2, 1, 1, 1, DType::F64, 1e-12);
    // many small heads: the batch is spread over the thread pool
    check_against_reference(16, 12, 16, 8, 8, DType::F64, 1e-11);
    // large products: each one is threaded
    check_against_reference(72, 80, 1, 2, 64, DType::F32, 1e-4);
}

#[test]
fn gradients_against_central_differences() {
    let (l, lk, b, h, hd) = (3, 2, 2, 2, 3);
    OpChecker::new(SELF_QK, &[rand(&[l, b, 3 * h * hd])]).attr("heads", 2i64).run().unwrap();
    OpChecker::new(SELF_VAL, &[rand(&[l, b, 3 * h * hd]), rand(&[b * h, l, l])])
        .attr("heads", 2i64)
        .run()
        .unwrap();
    OpChecker::new(ED_QK, &[rand(&[l, b, h * hd]), rand(&[lk, b, 2 * h * hd])])
        .attr("heads", 2i64)
        .run()
        .unwrap();
    OpChecker::new(ED_VAL, &[rand(&[lk, b, 2 * h * hd]), rand(&[b * h, l, lk])])
        .attr("heads", 2i64)
        .run()
        .unwrap();
    // one input differentiated at a time
    OpChecker::new(ED_QK, &[rand(&[l, 1, 4]), rand(&[lk, 1, 8])])
        .attr("heads", 1i64)
        .no_grad(&[1])
        .run()
        .unwrap();
    OpChecker::new(SELF_VAL, &[rand(&[l, 1, 6]), rand(&[1, l, l])])
        .attr("heads", 1i64)
        .no_grad(&[0])
        .run()
        .unwrap();
}

/// `s(x) = sum(u ⊙ ∂/∂x_i sum(w ⊙ op(x)))`, with its gradient from
/// autograd through the gradient rule (`create_graph`).
fn second_order(
    op: &str,
    inputs: &[NDArray],
    i: usize,
    w: &NDArray,
    u: &NDArray,
    h: i64,
) -> (f64, Vec<Vec<f64>>) {
    let xs: Vec<NDArray> = inputs.iter().map(|x| x.copy().unwrap()).collect();
    for x in &xs {
        x.attach_grad(Req::Write).unwrap();
    }
    let refs: Vec<&NDArray> = xs.iter().collect();
    let y = {
        let _r = autograd::record();
        invoke1(op, &refs, &heads(h)).unwrap()
    };
    let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
    let g = autograd::grad(&[&y], &[&xs[i]], &[Some(w)], opts).unwrap();
    let s = {
        let _r = autograd::record();
        let prod = invoke1("elemwise_mul", &[&g[0], u], &[]).unwrap();
        invoke1("sum", &[&prod], &[]).unwrap()
    };
    let value = values(&s)[0];
    s.backward().unwrap();
    let second =
        xs.iter().map(|x| x.grad().map(|g| values(&g)).unwrap_or_else(|| vec![0.0; x.size()])).collect();
    (value, second)
}

#[test]
fn second_order_gradients_against_central_differences() {
    let (l, lk, b, h, hd) = (2, 3, 2, 2, 2);
    let cases: Vec<(&str, Vec<NDArray>)> = vec![
        (SELF_QK, vec![rand(&[l, b, 3 * h * hd])]),
        (SELF_VAL, vec![rand(&[l, b, 3 * h * hd]), rand(&[b * h, l, l])]),
        (ED_QK, vec![rand(&[l, b, h * hd]), rand(&[lk, b, 2 * h * hd])]),
        (ED_VAL, vec![rand(&[lk, b, 2 * h * hd]), rand(&[b * h, l, lk])]),
    ];
    for (op, inputs) in cases {
        let refs: Vec<&NDArray> = inputs.iter().collect();
        let y = invoke1(op, &refs, &heads(h as i64)).unwrap();
        let w = rand(y.shape());
        for i in 0..inputs.len() {
            let u = rand(inputs[i].shape());
            let (_, analytic) = second_order(op, &inputs, i, &w, &u, h as i64);
            for (j, x) in inputs.iter().enumerate() {
                let base = values(x);
                let numeric: Vec<f64> = (0..base.len())
                    .map(|e| {
                        let probe = |delta: f64| {
                            let mut v = base.clone();
                            v[e] += delta;
                            let mut trial = inputs.clone();
                            trial[j] = NDArray::from_vec(v, x.shape()).unwrap();
                            second_order(op, &trial, i, &w, &u, h as i64).0
                        };
                        (probe(1e-5) - probe(-1e-5)) / 2e-5
                    })
                    .collect();
                compare(
                    op,
                    &format!("second order d/dx{j} of grad x{i}"),
                    &analytic[j],
                    &numeric,
                    1e-5,
                    1e-7,
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn sequence_major_views_as_in_mxnets_test() {
    // MXNet's test feeds transpose(x, (1, 0, 2)): a non-contiguous input
    let x = rand(&[2, 3, 12]);
    let t = x.transpose(Some(&[1, 0, 2])).unwrap();
    assert!(!t.is_contiguous());
    let got = invoke1(SELF_QK, &[&t], &heads(2)).unwrap();
    let want = invoke1(SELF_QK, &[&t.copy().unwrap()], &heads(2)).unwrap();
    assert_close(&got, &want, 0.0, 0.0).unwrap();
}

fn err(op: &str, xs: &[&NDArray], h: i64) -> String {
    invoke1(op, xs, &heads(h)).unwrap_err().to_string()
}

#[test]
fn bad_shapes_and_dtypes_are_clear_errors() {
    let z = |s: &[usize]| NDArray::zeros(s, DType::F32, oxnet_core::Device::Cpu).unwrap();
    // proj not divisible by heads
    let e = err(SELF_QK, &[&z(&[2, 2, 12])], 3);
    assert!(e.contains(SELF_QK) && e.contains("queries_keys_values") && e.contains("(2, 2, 12)"), "{e}");
    let e = err(SELF_QK, &[&z(&[2, 2, 13])], 1);
    assert!(e.contains("queries_keys_values") && e.contains("multiple of 3"), "{e}");
    let e = err(ED_QK, &[&z(&[2, 2, 5]), &z(&[2, 2, 10])], 2);
    assert!(e.contains(ED_QK) && e.contains("`queries`"), "{e}");
    // mismatched batch
    let e = err(ED_QK, &[&z(&[2, 2, 4]), &z(&[3, 1, 8])], 2);
    assert!(e.contains(ED_QK) && e.contains("keys_values") && e.contains("batch"), "{e}");
    // keys_values not twice the queries' width
    let e = err(ED_QK, &[&z(&[2, 2, 4]), &z(&[3, 2, 12])], 2);
    assert!(e.contains("twice") && e.contains("(3, 2, 12)"), "{e}");
    // attention of the wrong shape (batch·heads, lengths)
    let e = err(SELF_VAL, &[&z(&[2, 2, 12]), &z(&[2, 2, 2])], 2);
    assert!(e.contains(SELF_VAL) && e.contains("attention") && e.contains("(4, 2, 2)"), "{e}");
    let e = err(ED_VAL, &[&z(&[3, 2, 8]), &z(&[4, 2, 2])], 2);
    assert!(e.contains(ED_VAL) && e.contains("attention") && e.contains("(4, 2, 3)"), "{e}");
    let e = err(ED_VAL, &[&z(&[3, 2, 8]), &z(&[4, 2])], 2);
    assert!(e.contains("attention") && e.contains("3-d"), "{e}");
    // rank and heads
    let e = err(SELF_QK, &[&z(&[2, 12])], 2);
    assert!(e.contains("3-d") && e.contains("(2, 12)"), "{e}");
    let e = err(SELF_QK, &[&z(&[2, 2, 12])], 0);
    assert!(e.contains("heads"), "{e}");
    let e = invoke1(SELF_QK, &[&z(&[2, 2, 12])], &[]).unwrap_err().to_string();
    assert!(e.contains("heads"), "{e}");
    // dtypes: floating point, equal
    let i = NDArray::from_vec(vec![1i32; 24], &[2, 1, 12]).unwrap();
    let e = err(SELF_QK, &[&i], 2);
    assert!(e.contains("int32") && e.contains("queries_keys_values"), "{e}");
    let e = err(ED_QK, &[&z(&[2, 2, 4]), &z(&[3, 2, 8]).astype(DType::F64).unwrap()], 2);
    assert!(e.contains("float64") && e.contains("keys_values"), "{e}");
}

#[test]
fn empty_extents_give_empty_or_zero_outputs() {
    let z = |s: &[usize]| NDArray::zeros(s, DType::F32, oxnet_core::Device::Cpu).unwrap();
    let y = invoke1(SELF_QK, &[&z(&[0, 2, 12])], &heads(2)).unwrap();
    assert_eq!(y.shape(), &[4, 0, 0]);
    let y = invoke1(ED_VAL, &[&z(&[0, 2, 8]), &z(&[4, 3, 0])], &heads(2)).unwrap();
    assert_eq!((y.shape(), values(&y)), (&[3usize, 2, 4][..], vec![0.0; 24]));
    let y = invoke1(
        SELF_QK,
        &[&NDArray::ones(&[2, 1, 0], DType::F32, oxnet_core::Device::Cpu).unwrap()],
        &heads(2),
    )
    .unwrap();
    assert_eq!(values(&y), vec![0.0; 8]);
}
