//! The optimizer update operators against hand-written f64 references of
//! their formulas, over three steps, with the weight as its own output (as
//! Python's `out=weight` calls them) and as a separate output.

use oxnet_core::registry;
use oxnet_core::{invoke, invoke_into, AttrValue, DType, NDArray, Req};

const N: usize = 37;

/// Deterministic values in [lo, hi) (a small LCG; no global generator).
fn values(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn array(v: &[f64], dtype: DType) -> NDArray {
    NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap().astype(dtype).unwrap()
}

fn read(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn clip(x: f64, c: f64) -> f64 {
    if c >= 0.0 {
        x.clamp(-c, c)
    } else {
        x
    }
}

fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w} (tolerance {tol})");
    }
}

/// The element-wise reference: (weight, grad, states) -> new weight, states updated.
type Reference<'a> = &'a dyn Fn(f64, f64, &mut [f64]) -> f64;

/// Runs `op` for three steps on `dtype` arrays and compares weight and
/// states with `reference` after each. States start at `state_init`.
fn check(
    op: &str,
    attrs: &[(&str, AttrValue)],
    n_states: usize,
    state_init: f64,
    reference: Reference,
    dtype: DType,
) {
    let tol = if dtype == DType::F64 { 1e-12 } else { 2e-5 };
    for in_place in [true, false] {
        let mut w_ref = values(1, N, -1.0, 1.0);
        let mut s_ref = vec![vec![state_init; N]; n_states];
        let weight = array(&w_ref, dtype);
        let states: Vec<NDArray> = s_ref.iter().map(|s| array(s, dtype)).collect();
        for step in 0..3u64 {
            let g = values(10 + step, N, -3.0, 3.0);
            let grad = array(&g, dtype);
            let mut inputs: Vec<&NDArray> = vec![&weight, &grad];
            inputs.extend(states.iter());
            let op_h = registry::get(op).unwrap();
            let parsed = op_h.parse_attrs(attrs).unwrap();
            if in_place {
                invoke_into(&op_h, &inputs, &parsed, std::slice::from_ref(&weight), &[Req::Write]).unwrap();
            } else {
                let out = invoke(op, &inputs, attrs).unwrap();
                weight.assign_from(&out[0]).unwrap();
            }
            for i in 0..N {
                let mut s: Vec<f64> = s_ref.iter().map(|v| v[i]).collect();
                w_ref[i] = reference(w_ref[i], g[i], &mut s);
                for (k, v) in s.into_iter().enumerate() {
                    s_ref[k][i] = v;
                }
            }
            assert_close(&format!("{op} {dtype} step {step} weight"), &read(&weight), &w_ref, tol);
            for (k, st) in states.iter().enumerate() {
                assert_close(&format!("{op} {dtype} step {step} state {k}"), &read(st), &s_ref[k], tol);
            }
        }
    }
}

fn check_both(op: &str, attrs: &[(&str, AttrValue)], n_states: usize, state_init: f64, reference: Reference) {
    check(op, attrs, n_states, state_init, reference, DType::F64);
    check(op, attrs, n_states, state_init, reference, DType::F32);
}

fn f(v: f64) -> AttrValue {
    AttrValue::Float(v)
}

#[test]
fn sgd_update() {
    let (lr, wd, rs, cg) = (0.1, 0.01, 0.5, 1.0);
    let attrs = [("lr", f(lr)), ("wd", f(wd)), ("rescale_grad", f(rs)), ("clip_gradient", f(cg))];
    check_both("sgd_update", &attrs, 0, 0.0, &|w, g, _| (1.0 - lr * wd) * w - lr * clip(rs * g, cg));
    // no clipping by default
    check_both("sgd_update", &[("lr", f(lr))], 0, 0.0, &|w, g, _| w - lr * g);
}

#[test]
fn sgd_mom_update() {
    let (lr, mu, wd, rs, cg) = (0.05, 0.9, 0.1, 2.0, 0.7);
    let attrs = [
        ("lr", f(lr)),
        ("momentum", f(mu)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
    ];
    check_both("sgd_mom_update", &attrs, 1, 0.0, &|w, g, s| {
        s[0] = mu * s[0] - lr * wd * w - lr * clip(rs * g, cg);
        w + s[0]
    });
}

#[test]
fn nag_mom_update() {
    let (lr, mu, wd, rs, cg) = (0.05, 0.8, 0.1, 1.5, -1.0);
    let attrs = [
        ("lr", f(lr)),
        ("momentum", f(mu)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
    ];
    check_both("nag_mom_update", &attrs, 1, 0.0, &|w, g, s| {
        // Nesterov: mom = mu*mom - lr*(g + wd*w); w += mu*mom - lr*(g + wd*w)
        let d = rs * g + wd * w;
        s[0] = mu * s[0] - lr * d;
        w + mu * s[0] - lr * d
    });
}

#[test]
fn adam_update() {
    let (lr, b1, b2, eps, wd, rs, cg) = (0.01, 0.8, 0.95, 1e-6, 0.05, 0.5, 1.2);
    let attrs = [
        ("lr", f(lr)),
        ("beta1", f(b1)),
        ("beta2", f(b2)),
        ("epsilon", f(eps)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
    ];
    check_both("adam_update", &attrs, 2, 0.0, &|w, g, s| {
        let gr = clip(rs * g + wd * w, cg);
        s[0] = b1 * s[0] + (1.0 - b1) * gr;
        s[1] = b2 * s[1] + (1.0 - b2) * gr * gr;
        w - lr * s[0] / (s[1].sqrt() + eps)
    });
}

#[test]
fn rmsprop_update() {
    let (lr, g1, eps, wd, rs, cg, cw) = (0.01, 0.9, 1e-8, 0.1, 1.0, 2.0, 0.95);
    let attrs = [
        ("lr", f(lr)),
        ("gamma1", f(g1)),
        ("epsilon", f(eps)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
        ("clip_weights", f(cw)),
    ];
    check_both("rmsprop_update", &attrs, 1, 0.0, &|w, g, s| {
        let gr = clip(rs * g + wd * w, cg);
        s[0] = (1.0 - g1) * gr * gr + g1 * s[0];
        clip(w - lr * gr / (s[0] + eps).sqrt(), cw)
    });
}

#[test]
fn rmspropalex_update() {
    let (lr, g1, g2, eps, wd, rs) = (0.01, 0.9, 0.8, 1e-4, 0.02, 0.5);
    let attrs = [
        ("lr", f(lr)),
        ("gamma1", f(g1)),
        ("gamma2", f(g2)),
        ("epsilon", f(eps)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
    ];
    check_both("rmspropalex_update", &attrs, 3, 0.0, &|w, g, s| {
        let gr = rs * g + wd * w;
        s[0] = (1.0 - g1) * gr * gr + g1 * s[0];
        s[1] = (1.0 - g1) * gr + g1 * s[1];
        s[2] = g2 * s[2] - lr * gr / (s[0] - s[1] * s[1] + eps).sqrt();
        w + s[2]
    });
}

#[test]
fn ftrl_update() {
    let (lr, l1, beta, wd, rs, cg) = (0.1, 0.2, 1.0, 0.05, 0.5, 1.0);
    let attrs = [
        ("lr", f(lr)),
        ("lamda1", f(l1)),
        ("beta", f(beta)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
    ];
    check_both("ftrl_update", &attrs, 2, 0.0, &|w, g, s| {
        let gr = clip(rs * g, cg);
        s[0] += gr - ((s[1] + gr * gr).sqrt() - s[1].sqrt()) * w / lr;
        s[1] += gr * gr;
        if s[0].abs() > l1 {
            (sign(s[0]) * l1 - s[0]) / ((beta + s[1].sqrt()) / lr + wd)
        } else {
            0.0
        }
    });
}

#[test]
fn signsgd_and_signum() {
    let (lr, wd) = (0.01, 0.1);
    check_both(
        "signsgd_update",
        &[("lr", f(lr)), ("wd", f(wd)), ("rescale_grad", f(3.0))],
        0,
        0.0,
        &|w, g, _| (1.0 - lr * wd) * w - lr * sign(g),
    );
    let (mu, rs, cg, wd_lh) = (0.9, 0.5, 0.4, 0.01);
    let attrs = [
        ("lr", f(lr)),
        ("momentum", f(mu)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
        ("wd_lh", f(wd_lh)),
    ];
    check_both("signum_update", &attrs, 1, 0.0, &|w, g, s| {
        s[0] = mu * s[0] - (1.0 - mu) * (wd * w + clip(rs * g, cg));
        (1.0 - lr * wd_lh) * w + lr * sign(s[0])
    });
}

/// Three steps of a multi-precision operator on float16 weights: the
/// float32 master copy follows the f64 reference, the weight is its rounding.
fn check_mp(op: &str, attrs: &[(&str, AttrValue)], momentum: bool, reference: Reference) {
    let mut w_ref = values(2, N, -1.0, 1.0);
    let weight = array(&w_ref, DType::F16);
    // the master copy starts from the float16 weight, as optimizers create it
    w_ref = read(&weight);
    let w32 = weight.astype(DType::F32).unwrap();
    let mom = NDArray::zeros(&[N], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let mut m_ref = vec![0.0; N];
    for step in 0..3u64 {
        let g = values(20 + step, N, -2.0, 2.0);
        let grad = array(&g, DType::F16);
        let g16 = read(&grad);
        let mut inputs: Vec<&NDArray> = vec![&weight, &grad];
        if momentum {
            inputs.push(&mom);
        }
        inputs.push(&w32);
        let op_h = registry::get(op).unwrap();
        let parsed = op_h.parse_attrs(attrs).unwrap();
        invoke_into(&op_h, &inputs, &parsed, std::slice::from_ref(&weight), &[Req::Inplace]).unwrap();
        for i in 0..N {
            let mut s = [m_ref[i]];
            w_ref[i] = reference(w_ref[i], g16[i], &mut s);
            m_ref[i] = s[0];
        }
        assert_close(&format!("{op} step {step} weight32"), &read(&w32), &w_ref, 2e-5);
        if momentum {
            assert_close(&format!("{op} step {step} mom"), &read(&mom), &m_ref, 2e-5);
        }
        let rounded: Vec<f64> = read(&w32.astype(DType::F16).unwrap());
        assert_eq!(read(&weight), rounded, "{op} step {step}: weight is the rounded master copy");
        assert_eq!(weight.dtype(), DType::F16);
    }
}

#[test]
fn multi_precision_sgd_and_nag() {
    let (lr, mu, wd, rs, cg) = (0.1, 0.9, 0.01, 0.5, 0.8);
    let attrs = [("lr", f(lr)), ("wd", f(wd)), ("rescale_grad", f(rs)), ("clip_gradient", f(cg))];
    check_mp("mp_sgd_update", &attrs, false, &|w, g, _| (1.0 - lr * wd) * w - lr * clip(rs * g, cg));
    let attrs = [
        ("lr", f(lr)),
        ("momentum", f(mu)),
        ("wd", f(wd)),
        ("rescale_grad", f(rs)),
        ("clip_gradient", f(cg)),
    ];
    check_mp("mp_sgd_mom_update", &attrs, true, &|w, g, s| {
        s[0] = mu * s[0] - lr * wd * w - lr * clip(rs * g, cg);
        w + s[0]
    });
    check_mp("mp_nag_mom_update", &attrs, true, &|w, g, s| {
        let d = clip(rs * g, cg) + wd * w;
        s[0] = mu * s[0] - lr * d;
        w + mu * s[0] - lr * d
    });
}

#[test]
fn adamw_and_its_skip() {
    let (lr, eta, b1, b2, eps, wd, cg) = (1.0, 0.01, 0.9, 0.99, 1e-6, 0.1, 1.5);
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        let mut w_ref = values(3, N, -1.0, 1.0);
        let (mut m_ref, mut v_ref) = (vec![0.0; N], vec![0.0; N]);
        let weight = array(&w_ref, dtype);
        let mean = array(&m_ref, dtype);
        let var = array(&v_ref, dtype);
        for step in 0..3u64 {
            let rs = [0.5, 2.0, 1.0][step as usize];
            let g = values(30 + step, N, -2.0, 2.0);
            let grad = array(&g, dtype);
            let scale = NDArray::from_vec(vec![rs as f32], &[1]).unwrap();
            let op = registry::get("_adamw_update").unwrap();
            let attrs = op
                .parse_attrs(&[
                    ("lr", f(lr)),
                    ("eta", f(eta)),
                    ("beta1", f(b1)),
                    ("beta2", f(b2)),
                    ("epsilon", f(eps)),
                    ("wd", f(wd)),
                    ("clip_gradient", f(cg)),
                ])
                .unwrap();
            invoke_into(
                &op,
                &[&weight, &grad, &mean, &var, &scale],
                &attrs,
                std::slice::from_ref(&weight),
                &[Req::Write],
            )
            .unwrap();
            for i in 0..N {
                let gr = clip(rs * g[i], cg);
                m_ref[i] = b1 * m_ref[i] + (1.0 - b1) * gr;
                v_ref[i] = b2 * v_ref[i] + (1.0 - b2) * gr * gr;
                w_ref[i] -= eta * (lr * m_ref[i] / (v_ref[i].sqrt() + eps) + wd * w_ref[i]);
            }
            assert_close(&format!("adamw {dtype} step {step}"), &read(&weight), &w_ref, tol);
            assert_close("adamw mean", &read(&mean), &m_ref, tol);
            assert_close("adamw var", &read(&var), &v_ref, tol);
        }
        // a rescale of 0, NaN or inf skips the step; a separate output receives the weight
        for bad in [0.0f32, f32::NAN, f32::INFINITY] {
            let before = (read(&weight), read(&mean));
            let scale = NDArray::from_vec(vec![bad], &[1]).unwrap();
            let grad = array(&values(99, N, -1.0, 1.0), dtype);
            let out = invoke(
                "_adamw_update",
                &[&weight, &grad, &mean, &var, &scale],
                &[("lr", f(1.0)), ("eta", f(0.1))],
            )
            .unwrap();
            assert_eq!(read(&out[0]), before.0);
            assert_eq!((read(&weight), read(&mean)), before);
        }
    }
}

#[test]
fn mp_adamw_on_float16() {
    let (eta, wd) = (0.01, 0.1);
    let weight = array(&values(4, N, -1.0, 1.0), DType::F16);
    let mut w_ref = read(&weight);
    let w32 = weight.astype(DType::F32).unwrap();
    let zeros = || NDArray::zeros(&[N], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let (mean, var) = (zeros(), zeros());
    let (mut m_ref, mut v_ref) = (vec![0.0; N], vec![0.0; N]);
    let scale = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    for step in 0..3u64 {
        let grad = array(&values(40 + step, N, -2.0, 2.0), DType::F16);
        let g = read(&grad);
        let op = registry::get("_mp_adamw_update").unwrap();
        let attrs = op.parse_attrs(&[("lr", f(1.0)), ("eta", f(eta)), ("wd", f(wd))]).unwrap();
        invoke_into(
            &op,
            &[&weight, &grad, &mean, &var, &w32, &scale],
            &attrs,
            std::slice::from_ref(&weight),
            &[Req::Inplace],
        )
        .unwrap();
        for i in 0..N {
            let gr = 0.5 * g[i];
            m_ref[i] = 0.9 * m_ref[i] + 0.1 * gr;
            v_ref[i] = 0.999 * v_ref[i] + 0.001 * gr * gr;
            w_ref[i] -= eta * (m_ref[i] / (v_ref[i].sqrt() + 1e-8) + wd * w_ref[i]);
        }
        assert_close("mp adamw weight32", &read(&w32), &w_ref, 2e-5);
        assert_eq!(read(&weight), read(&w32.astype(DType::F16).unwrap()));
    }
}

#[test]
fn lamb_phases() {
    let (b1, b2, eps, wd, rs, lr) = (0.9, 0.999, 1e-6, 0.01, 0.5, 0.02);
    for bias_correction in [true, false] {
        let mut w_ref = values(5, N, -1.0, 1.0);
        let (mut m_ref, mut v_ref) = (vec![0.0; N], vec![0.0; N]);
        let weight = array(&w_ref, DType::F64);
        let (mean, var) = (array(&m_ref, DType::F64), array(&v_ref, DType::F64));
        for t in 1..=3i64 {
            let g = values(50 + t as u64, N, -2.0, 2.0);
            let grad = array(&g, DType::F64);
            let upd = invoke(
                "lamb_update_phase1",
                &[&weight, &grad, &mean, &var],
                &[
                    ("beta1", f(b1)),
                    ("beta2", f(b2)),
                    ("epsilon", f(eps)),
                    ("t", AttrValue::Int(t)),
                    ("bias_correction", AttrValue::Bool(bias_correction)),
                    ("wd", f(wd)),
                    ("rescale_grad", f(rs)),
                ],
            )
            .unwrap()
            .remove(0);
            let mut u_ref = vec![0.0; N];
            for i in 0..N {
                let gr = rs * g[i];
                m_ref[i] = b1 * m_ref[i] + (1.0 - b1) * gr;
                v_ref[i] = b2 * v_ref[i] + (1.0 - b2) * gr * gr;
                let (mh, vh) = if bias_correction {
                    (m_ref[i] / (1.0 - b1.powi(t as i32)), v_ref[i] / (1.0 - b2.powi(t as i32)))
                } else {
                    (m_ref[i], v_ref[i])
                };
                u_ref[i] = mh / (vh.sqrt() + eps) + wd * w_ref[i];
            }
            assert_close("lamb phase1", &read(&upd), &u_ref, 1e-12);
            let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
            let (r1, r2) = (norm(&w_ref), norm(&u_ref));
            let r1a = NDArray::from_vec(vec![r1], &[1]).unwrap();
            let r2a = NDArray::from_vec(vec![r2], &[1]).unwrap();
            let op = registry::get("lamb_update_phase2").unwrap();
            let attrs = op.parse_attrs(&[("lr", f(lr)), ("upper_bound", f(10.0))]).unwrap();
            invoke_into(
                &op,
                &[&weight, &upd, &r1a, &r2a],
                &attrs,
                std::slice::from_ref(&weight),
                &[Req::Write],
            )
            .unwrap();
            for i in 0..N {
                w_ref[i] -= lr * (r1 / r2) * u_ref[i];
            }
            assert_close("lamb phase2", &read(&weight), &w_ref, 1e-12);
        }
    }
    // r1 = 0 or r2 = 0 gives ratio 1; bounds limit r1
    let w = array(&[1.0, 2.0], DType::F32);
    let g = array(&[1.0, 1.0], DType::F32);
    let zero = NDArray::from_vec(vec![0.0f32], &[1]).unwrap();
    let four = NDArray::from_vec(vec![4.0f32], &[1]).unwrap();
    let out = invoke("lamb_update_phase2", &[&w, &g, &zero, &four], &[("lr", f(0.5))]).unwrap();
    assert_eq!(read(&out[0]), vec![0.5, 1.5]);
    let out =
        invoke("lamb_update_phase2", &[&w, &g, &four, &four], &[("lr", f(0.5)), ("upper_bound", f(2.0))])
            .unwrap();
    assert_eq!(read(&out[0]), vec![0.75, 1.75]);
}

/// Three steps of a multi-tensor operator on two weights of different
/// sizes, against the single-weight formula with each weight's lr and wd.
#[test]
fn multi_sgd_family() {
    let (lrs, wds, mu, rs, cg) = ([0.1, 0.05], [0.0, 0.2], 0.9, 0.5, 1.0);
    let sizes = [5usize, 300];
    for (op, momentum, mp) in [
        ("multi_sgd_update", false, false),
        ("multi_sgd_mom_update", true, false),
        ("multi_mp_sgd_update", false, true),
        ("multi_mp_sgd_mom_update", true, true),
    ] {
        let dtype = if mp { DType::F16 } else { DType::F32 };
        let weights: Vec<NDArray> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| array(&values(60 + k as u64, n, -1.0, 1.0), dtype))
            .collect();
        let mut w_ref: Vec<Vec<f64>> = weights.iter().map(read).collect();
        let moms: Vec<NDArray> = sizes
            .iter()
            .map(|&n| NDArray::zeros(&[n], DType::F32, oxnet_core::Device::Cpu).unwrap())
            .collect();
        let mut m_ref: Vec<Vec<f64>> = sizes.iter().map(|&n| vec![0.0; n]).collect();
        let w32s: Vec<NDArray> = weights.iter().map(|w| w.astype(DType::F32).unwrap()).collect();
        let mut attrs = vec![
            ("lrs", AttrValue::Raw("(0.1, 0.05)".into())),
            ("wds", AttrValue::Raw("[0.0, 0.2]".into())),
            ("num_weights", AttrValue::Int(2)),
            ("rescale_grad", f(rs)),
            ("clip_gradient", f(cg)),
        ];
        if momentum {
            attrs.push(("momentum", f(mu)));
        }
        for step in 0..3u64 {
            let grads: Vec<NDArray> = sizes
                .iter()
                .enumerate()
                .map(|(k, &n)| array(&values(70 + 10 * step + k as u64, n, -3.0, 3.0), dtype))
                .collect();
            let mut inputs: Vec<&NDArray> = Vec::new();
            for k in 0..2 {
                inputs.push(&weights[k]);
                inputs.push(&grads[k]);
                if momentum {
                    inputs.push(&moms[k]);
                }
                if mp {
                    inputs.push(&w32s[k]);
                }
            }
            let op_h = registry::get(op).unwrap();
            let parsed = op_h.parse_attrs(&attrs).unwrap();
            invoke_into(&op_h, &inputs, &parsed, &weights, &[Req::Write, Req::Write]).unwrap();
            for k in 0..2 {
                let g = read(&grads[k]);
                for i in 0..sizes[k] {
                    let m = if momentum { mu * m_ref[k][i] } else { 0.0 };
                    m_ref[k][i] = m - lrs[k] * wds[k] * w_ref[k][i] - lrs[k] * clip(rs * g[i], cg);
                    w_ref[k][i] += m_ref[k][i];
                }
                let master = if mp { &w32s[k] } else { &weights[k] };
                assert_close(&format!("{op} step {step} weight {k}"), &read(master), &w_ref[k], 2e-5);
                if momentum {
                    assert_close(&format!("{op} step {step} mom {k}"), &read(&moms[k]), &m_ref[k], 2e-5);
                }
                if mp {
                    assert_eq!(read(&weights[k]), read(&w32s[k].astype(DType::F16).unwrap()));
                }
            }
        }
    }
}

#[test]
fn multi_sgd_mom_updates_its_momenta() {
    let w = array(&[1.0, 2.0], DType::F64);
    let g = array(&[0.5, -0.5], DType::F64);
    let m = array(&[0.1, 0.1], DType::F64);
    let w2 = array(&[3.0], DType::F64);
    let g2 = array(&[1.0], DType::F64);
    let m2 = array(&[0.0], DType::F64);
    let outs = invoke(
        "multi_sgd_mom_update",
        &[&w, &g, &m, &w2, &g2, &m2],
        &[
            ("lrs", "(0.1, 1.0)".into()),
            ("wds", "(0, 0)".into()),
            ("momentum", f(0.5)),
            ("num_weights", 2i64.into()),
        ],
    )
    .unwrap();
    assert_close("mom 0", &read(&m), &[0.05 - 0.05, 0.05 + 0.05], 1e-12);
    assert_close("out 0", &read(&outs[0]), &[1.0, 2.1], 1e-12);
    assert_close("mom 1", &read(&m2), &[-1.0], 1e-12);
    assert_close("out 1", &read(&outs[1]), &[2.0], 1e-12);
}

#[test]
fn float16_weights_without_master_copy() {
    // the plain operators also take float16 arrays, computing in float32
    let w = array(&[1.0, -1.0], DType::F16);
    let g = array(&[0.5, 0.25], DType::F16);
    let out = invoke("sgd_update", &[&w, &g], &[("lr", f(0.5))]).unwrap();
    assert_eq!(out[0].dtype(), DType::F16);
    assert_eq!(read(&out[0]), vec![0.75, -1.125]);
}

#[test]
fn bad_calls_are_clear_errors() {
    let w = array(&[1.0, 2.0], DType::F32);
    let g = array(&[1.0, 2.0], DType::F32);
    let e = invoke("sgd_update", &[&w, &g], &[]).unwrap_err().to_string();
    assert!(e.contains("sgd_update") && e.contains("lr") && e.contains("missing"), "{e}");
    let short = array(&[1.0], DType::F32);
    let e = invoke("sgd_mom_update", &[&w, &g, &short], &[("lr", f(0.1))]).unwrap_err().to_string();
    assert!(e.contains("sgd_mom_update") && e.contains("shape"), "{e}");
    let e = invoke("sgd_update", &[&w, &array(&[1.0, 2.0], DType::F64)], &[("lr", f(0.1))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("dtype"), "{e}");
    // the master copy must be float32
    let w16 = w.astype(DType::F16).unwrap();
    let g16 = g.astype(DType::F16).unwrap();
    let e = invoke("mp_sgd_update", &[&w16, &g16, &w16], &[("lr", f(0.1))]).unwrap_err().to_string();
    assert!(e.contains("mp_sgd_update") && e.contains("float32"), "{e}");
    // integer weights
    let wi = w.astype(DType::I32).unwrap();
    let e = invoke("sgd_update", &[&wi, &wi], &[("lr", f(0.1))]).unwrap_err().to_string();
    assert!(e.contains("floating-point"), "{e}");
    // lrs must match num_weights
    let e = invoke(
        "multi_sgd_update",
        &[&w, &g, &w, &g],
        &[("lrs", "(0.1,)".into()), ("wds", "(0, 0)".into()), ("num_weights", 2i64.into())],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("multi_sgd_update") && e.contains("lrs") && e.contains("num_weights"), "{e}");
    // a state that is the weight itself
    let e = invoke("sgd_mom_update", &[&w, &g, &w], &[("lr", f(0.1))]).unwrap_err().to_string();
    assert!(e.contains("mom") && e.contains("shares memory"), "{e}");
    // the operators are not differentiable
    assert!(matches!(registry::get("adam_update").unwrap().gradient, oxnet_core::Gradient::None));
}

#[test]
fn long_arrays_split_over_threads_give_the_same_result() {
    let n = 100_000;
    let w0 = values(7, n, -1.0, 1.0);
    let g = values(8, n, -1.0, 1.0);
    let w = array(&w0, DType::F32);
    let gr = array(&g, DType::F32);
    let mom = NDArray::zeros(&[n], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let op = registry::get("sgd_mom_update").unwrap();
    let attrs = op.parse_attrs(&[("lr", f(0.1)), ("momentum", f(0.9)), ("wd", f(0.01))]).unwrap();
    invoke_into(&op, &[&w, &gr, &mom], &attrs, std::slice::from_ref(&w), &[Req::Inplace]).unwrap();
    let want: Vec<f64> = (0..n).map(|i| w0[i] + (-0.1 * 0.01 * w0[i] - 0.1 * g[i])).collect();
    assert_close("long sgd_mom", &read(&w), &want, 1e-5);
}

#[test]
fn output_over_the_gradient_or_a_separate_buffer() {
    let op = registry::get("sgd_update").unwrap();
    let attrs = op.parse_attrs(&[("lr", f(0.5)), ("wd", f(0.1))]).unwrap();
    let want = vec![(1.0 - 0.05) * 1.0 - 0.5 * 0.5, (1.0 - 0.05) * 2.0 - 0.5 * -1.0];
    for req in [Req::Inplace, Req::Write] {
        let (w, g) = (array(&[1.0, 2.0], DType::F64), array(&[0.5, -1.0], DType::F64));
        invoke_into(&op, &[&w, &g], &attrs, std::slice::from_ref(&g), &[req]).unwrap();
        assert_close("out over grad", &read(&g), &want, 1e-15);
        assert_eq!(read(&w), vec![1.0, 2.0]);
    }
    // request add accumulates the new weight into the output
    let (w, g) = (array(&[1.0, 2.0], DType::F64), array(&[0.5, -1.0], DType::F64));
    let out = array(&[10.0, 10.0], DType::F64);
    invoke_into(&op, &[&w, &g], &attrs, std::slice::from_ref(&out), &[Req::Add]).unwrap();
    assert_close("add", &read(&out), &[10.0 + want[0], 10.0 + want[1]], 1e-15);
}
