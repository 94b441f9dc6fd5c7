//! The optimizer update operators against hand-written f64 references of
//! their formulas, over three steps, with the weight as its own output (as
//! Python's `out=weight` calls them) and as a separate output.

use oxnet_core::registry;
use oxnet_core::{invoke, invoke_into, AttrValue, DType, NDArray, Req};
use oxnet_ops as _; // the built-in operators these tests call

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

/// Runs `op` with its attributes, writing into `outs` under `req`.
fn run_into(op: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)], outs: &[NDArray], req: Req) {
    let handle = registry::get(op).unwrap();
    let parsed = handle.parse_attrs(attrs).unwrap();
    invoke_into(&handle, inputs, &parsed, outs, &vec![req; outs.len()]).unwrap();
}

/// Float attributes.
fn floats(pairs: &[(&'static str, f64)]) -> Vec<(&'static str, AttrValue)> {
    pairs.iter().map(|&(k, v)| (k, AttrValue::Float(v))).collect()
}

fn f(v: f64) -> AttrValue {
    AttrValue::Float(v)
}

/// The element-wise reference: (weight, grad, states) -> new weight, states updated.
type Reference<'a> = &'a dyn Fn(f64, f64, &mut [f64]) -> f64;

/// The hyper-parameters most update operators share.
#[derive(Clone, Copy)]
struct Common {
    lr: f64,
    wd: f64,
    rs: f64,
    cg: f64,
}

impl Common {
    /// `lr`, `wd`, `rescale_grad`, `clip_gradient`, then `extra`.
    fn attrs(&self, extra: &[(&'static str, f64)]) -> Vec<(&'static str, AttrValue)> {
        let mut pairs =
            vec![("lr", self.lr), ("wd", self.wd), ("rescale_grad", self.rs), ("clip_gradient", self.cg)];
        pairs.extend_from_slice(extra);
        floats(&pairs)
    }

    /// The rescaled, clipped gradient.
    fn g(&self, g: f64) -> f64 {
        clip(self.rs * g, self.cg)
    }

    /// The rescaled gradient plus weight decay, clipped (Adam, RMSProp).
    fn decayed(&self, w: f64, g: f64) -> f64 {
        clip(self.rs * g + self.wd * w, self.cg)
    }
}

/// `sgd_update`'s formula.
fn sgd_ref(c: Common) -> impl Fn(f64, f64, &mut [f64]) -> f64 {
    move |w, g, _| (1.0 - c.lr * c.wd) * w - c.lr * c.g(g)
}

/// `sgd_mom_update`'s formula.
fn sgd_mom_ref(c: Common, mu: f64) -> impl Fn(f64, f64, &mut [f64]) -> f64 {
    move |w, g, s| {
        s[0] = mu * s[0] - c.lr * c.wd * w - c.lr * c.g(g);
        w + s[0]
    }
}

/// `nag_mom_update`'s formula: `mom = mu*mom - lr*(g + wd*w); w += mu*mom - lr*(g + wd*w)`.
fn nag_ref(c: Common, mu: f64) -> impl Fn(f64, f64, &mut [f64]) -> f64 {
    move |w, g, s| {
        let d = c.g(g) + c.wd * w;
        s[0] = mu * s[0] - c.lr * d;
        w + mu * s[0] - c.lr * d
    }
}

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
            if in_place {
                run_into(op, &inputs, attrs, std::slice::from_ref(&weight), Req::Write);
            } else {
                let out = invoke(op, &inputs, attrs).unwrap();
                weight.assign_from(&out[0]).unwrap();
            }
            step_reference(reference, &mut w_ref, &g, &mut s_ref);
            assert_close(&format!("{op} {dtype} step {step} weight"), &read(&weight), &w_ref, tol);
            for (k, st) in states.iter().enumerate() {
                assert_close(&format!("{op} {dtype} step {step} state {k}"), &read(st), &s_ref[k], tol);
            }
        }
    }
}

/// Applies `reference` to every element of `w` with gradient `g` and the
/// states `s` (one vector per state).
fn step_reference(reference: Reference, w: &mut [f64], g: &[f64], s: &mut [Vec<f64>]) {
    for i in 0..w.len() {
        let mut si: Vec<f64> = s.iter().map(|v| v[i]).collect();
        w[i] = reference(w[i], g[i], &mut si);
        for (k, v) in si.into_iter().enumerate() {
            s[k][i] = v;
        }
    }
}

fn check_both(op: &str, attrs: &[(&str, AttrValue)], n_states: usize, state_init: f64, reference: Reference) {
    check(op, attrs, n_states, state_init, reference, DType::F64);
    check(op, attrs, n_states, state_init, reference, DType::F32);
}

#[test]
fn sgd_update() {
    let c = Common { lr: 0.1, wd: 0.01, rs: 0.5, cg: 1.0 };
    check_both("sgd_update", &c.attrs(&[]), 0, 0.0, &sgd_ref(c));
    // no clipping by default
    check_both("sgd_update", &[("lr", f(c.lr))], 0, 0.0, &|w, g, _| w - c.lr * g);
}

#[test]
fn sgd_mom_update() {
    let (c, mu) = (Common { lr: 0.05, wd: 0.1, rs: 2.0, cg: 0.7 }, 0.9);
    check_both("sgd_mom_update", &c.attrs(&[("momentum", mu)]), 1, 0.0, &sgd_mom_ref(c, mu));
}

#[test]
fn nag_mom_update() {
    let (c, mu) = (Common { lr: 0.05, wd: 0.1, rs: 1.5, cg: -1.0 }, 0.8);
    check_both("nag_mom_update", &c.attrs(&[("momentum", mu)]), 1, 0.0, &nag_ref(c, mu));
}

#[test]
fn adam_update() {
    let (c, b1, b2, eps) = (Common { lr: 0.01, wd: 0.05, rs: 0.5, cg: 1.2 }, 0.8, 0.95, 1e-6);
    let attrs = c.attrs(&[("beta1", b1), ("beta2", b2), ("epsilon", eps)]);
    check_both("adam_update", &attrs, 2, 0.0, &|w, g, s| {
        let gr = c.decayed(w, g);
        s[0] = b1 * s[0] + (1.0 - b1) * gr;
        s[1] = b2 * s[1] + (1.0 - b2) * gr * gr;
        w - c.lr * s[0] / (s[1].sqrt() + eps)
    });
}

#[test]
fn rmsprop_update() {
    let (c, g1, eps, cw) = (Common { lr: 0.01, wd: 0.1, rs: 1.0, cg: 2.0 }, 0.9, 1e-8, 0.95);
    let attrs = c.attrs(&[("gamma1", g1), ("epsilon", eps), ("clip_weights", cw)]);
    check_both("rmsprop_update", &attrs, 1, 0.0, &|w, g, s| {
        let gr = c.decayed(w, g);
        s[0] = (1.0 - g1) * gr * gr + g1 * s[0];
        clip(w - c.lr * gr / (s[0] + eps).sqrt(), cw)
    });
}

#[test]
fn rmspropalex_update() {
    let (c, g1, g2, eps) = (Common { lr: 0.01, wd: 0.02, rs: 0.5, cg: -1.0 }, 0.9, 0.8, 1e-4);
    let attrs = c.attrs(&[("gamma1", g1), ("gamma2", g2), ("epsilon", eps)]);
    check_both("rmspropalex_update", &attrs, 3, 0.0, &|w, g, s| {
        let gr = c.decayed(w, g);
        s[0] = (1.0 - g1) * gr * gr + g1 * s[0];
        s[1] = (1.0 - g1) * gr + g1 * s[1];
        s[2] = g2 * s[2] - c.lr * gr / (s[0] - s[1] * s[1] + eps).sqrt();
        w + s[2]
    });
}

#[test]
fn ftrl_update() {
    let (c, l1, beta) = (Common { lr: 0.1, wd: 0.05, rs: 0.5, cg: 1.0 }, 0.2, 1.0);
    check_both("ftrl_update", &c.attrs(&[("lamda1", l1), ("beta", beta)]), 2, 0.0, &|w, g, s| {
        let gr = c.g(g);
        s[0] += gr - ((s[1] + gr * gr).sqrt() - s[1].sqrt()) * w / c.lr;
        s[1] += gr * gr;
        if s[0].abs() > l1 {
            (sign(s[0]) * l1 - s[0]) / ((beta + s[1].sqrt()) / c.lr + c.wd)
        } else {
            0.0
        }
    });
}

#[test]
fn signsgd_and_signum() {
    // the sign of the raw gradient: rescaling cannot change it
    let c = Common { lr: 0.01, wd: 0.1, rs: 3.0, cg: -1.0 };
    check_both("signsgd_update", &c.attrs(&[]), 0, 0.0, &|w, g, _| (1.0 - c.lr * c.wd) * w - c.lr * sign(g));
    let (c, mu, wd_lh) = (Common { rs: 0.5, cg: 0.4, ..c }, 0.9, 0.01);
    check_both("signum_update", &c.attrs(&[("momentum", mu), ("wd_lh", wd_lh)]), 1, 0.0, &|w, g, s| {
        s[0] = mu * s[0] - (1.0 - mu) * (c.wd * w + c.g(g));
        (1.0 - c.lr * wd_lh) * w + c.lr * sign(s[0])
    });
}

/// Three steps of a multi-precision operator on float16 weights, with
/// `n_states` float32 states (from 0) and the float32 master copy, then the
/// `extra` inputs: the master copy and the states follow the f64
/// reference, the weight is the master copy's rounding.
fn check_mp(op: &str, attrs: &[(&str, AttrValue)], n_states: usize, extra: &[NDArray], reference: Reference) {
    let weight = array(&values(2, N, -1.0, 1.0), DType::F16);
    // the master copy starts from the float16 weight, as optimizers create it
    let mut w_ref = read(&weight);
    let w32 = weight.astype(DType::F32).unwrap();
    let states: Vec<NDArray> =
        (0..n_states).map(|_| NDArray::zeros(&[N], DType::F32, oxnet_core::Device::Cpu).unwrap()).collect();
    let mut s_ref = vec![vec![0.0; N]; n_states];
    for step in 0..3u64 {
        let grad = array(&values(20 + step, N, -2.0, 2.0), DType::F16);
        let mut inputs: Vec<&NDArray> = vec![&weight, &grad];
        inputs.extend(states.iter());
        inputs.push(&w32);
        inputs.extend(extra.iter());
        run_into(op, &inputs, attrs, std::slice::from_ref(&weight), Req::Inplace);
        step_reference(reference, &mut w_ref, &read(&grad), &mut s_ref);
        assert_close(&format!("{op} step {step} weight32"), &read(&w32), &w_ref, 2e-5);
        for (k, st) in states.iter().enumerate() {
            assert_close(&format!("{op} step {step} state {k}"), &read(st), &s_ref[k], 2e-5);
        }
        let rounded: Vec<f64> = read(&w32.astype(DType::F16).unwrap());
        assert_eq!(read(&weight), rounded, "{op} step {step}: weight is the rounded master copy");
        assert_eq!(weight.dtype(), DType::F16);
    }
}

#[test]
fn multi_precision_sgd_and_nag() {
    let (c, mu) = (Common { lr: 0.1, wd: 0.01, rs: 0.5, cg: 0.8 }, 0.9);
    check_mp("mp_sgd_update", &c.attrs(&[]), 0, &[], &sgd_ref(c));
    let attrs = c.attrs(&[("momentum", mu)]);
    check_mp("mp_sgd_mom_update", &attrs, 1, &[], &sgd_mom_ref(c, mu));
    check_mp("mp_nag_mom_update", &attrs, 1, &[], &nag_ref(c, mu));
}

#[test]
fn adamw_and_its_skip() {
    let (lr, eta, b1, b2, eps, wd, cg) = (1.0, 0.01, 0.9, 0.99, 1e-6, 0.1, 1.5);
    let attrs = floats(&[("lr", lr), ("eta", eta), ("beta1", b1), ("beta2", b2), ("epsilon", eps)]);
    let attrs = [attrs, floats(&[("wd", wd), ("clip_gradient", cg)])].concat();
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        let mut w_ref = values(3, N, -1.0, 1.0);
        let mut s_ref = vec![vec![0.0; N]; 2];
        let weight = array(&w_ref, dtype);
        let (mean, var) = (array(&s_ref[0], dtype), array(&s_ref[1], dtype));
        for step in 0..3u64 {
            let rs = [0.5, 2.0, 1.0][step as usize];
            let g = values(30 + step, N, -2.0, 2.0);
            let grad = array(&g, dtype);
            let scale = NDArray::from_vec(vec![rs as f32], &[1]).unwrap();
            let inputs = [&weight, &grad, &mean, &var, &scale];
            run_into("_adamw_update", &inputs, &attrs, std::slice::from_ref(&weight), Req::Write);
            let reference = |w: f64, g: f64, s: &mut [f64]| {
                let gr = clip(rs * g, cg);
                s[0] = b1 * s[0] + (1.0 - b1) * gr;
                s[1] = b2 * s[1] + (1.0 - b2) * gr * gr;
                w - eta * (lr * s[0] / (s[1].sqrt() + eps) + wd * w)
            };
            step_reference(&reference, &mut w_ref, &g, &mut s_ref);
            assert_close(&format!("adamw {dtype} step {step}"), &read(&weight), &w_ref, tol);
            assert_close("adamw mean", &read(&mean), &s_ref[0], tol);
            assert_close("adamw var", &read(&var), &s_ref[1], tol);
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
    let scale = NDArray::from_vec(vec![0.5f32], &[1]).unwrap();
    let attrs = floats(&[("lr", 1.0), ("eta", eta), ("wd", wd)]);
    check_mp("_mp_adamw_update", &attrs, 2, &[scale], &|w, g, s| {
        let gr = 0.5 * g;
        s[0] = 0.9 * s[0] + 0.1 * gr;
        s[1] = 0.999 * s[1] + 0.001 * gr * gr;
        w - eta * (s[0] / (s[1].sqrt() + 1e-8) + wd * w)
    });
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
            let attrs = floats(&[("lr", lr), ("upper_bound", 10.0)]);
            let inputs = [&weight, &upd, &r1a, &r2a];
            run_into("lamb_update_phase2", &inputs, &attrs, std::slice::from_ref(&weight), Req::Write);
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
        let mut pairs = vec![("rescale_grad", rs), ("clip_gradient", cg)];
        if momentum {
            pairs.push(("momentum", mu));
        }
        let mut attrs = floats(&pairs);
        attrs.push(("lrs", AttrValue::Raw("(0.1, 0.05)".into())));
        attrs.push(("wds", AttrValue::Raw("[0.0, 0.2]".into())));
        attrs.push(("num_weights", AttrValue::Int(2)));
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
            run_into(op, &inputs, &attrs, &weights, Req::Write);
            for k in 0..2 {
                // without momentum, the formula with a zero momentum
                let c = Common { lr: lrs[k], wd: wds[k], rs, cg };
                let reference = sgd_mom_ref(c, if momentum { mu } else { 0.0 });
                step_reference(
                    &reference,
                    &mut w_ref[k],
                    &read(&grads[k]),
                    std::slice::from_mut(&mut m_ref[k]),
                );
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
    let attrs = floats(&[("lr", 0.1), ("momentum", 0.9), ("wd", 0.01)]);
    run_into("sgd_mom_update", &[&w, &gr, &mom], &attrs, std::slice::from_ref(&w), Req::Inplace);
    let want: Vec<f64> = (0..n).map(|i| w0[i] + (-0.1 * 0.01 * w0[i] - 0.1 * g[i])).collect();
    assert_close("long sgd_mom", &read(&w), &want, 1e-5);
}

#[test]
fn output_over_the_gradient_or_a_separate_buffer() {
    let attrs = floats(&[("lr", 0.5), ("wd", 0.1)]);
    let want = vec![(1.0 - 0.05) * 1.0 - 0.5 * 0.5, (1.0 - 0.05) * 2.0 + 0.5];
    for req in [Req::Inplace, Req::Write] {
        let (w, g) = (array(&[1.0, 2.0], DType::F64), array(&[0.5, -1.0], DType::F64));
        run_into("sgd_update", &[&w, &g], &attrs, std::slice::from_ref(&g), req);
        assert_close("out over grad", &read(&g), &want, 1e-15);
        assert_eq!(read(&w), vec![1.0, 2.0]);
    }
    // request add accumulates the new weight into the output
    let (w, g) = (array(&[1.0, 2.0], DType::F64), array(&[0.5, -1.0], DType::F64));
    let out = array(&[10.0, 10.0], DType::F64);
    run_into("sgd_update", &[&w, &g], &attrs, std::slice::from_ref(&out), Req::Add);
    assert_close("add", &read(&out), &[10.0 + want[0], 10.0 + want[1]], 1e-15);
}
