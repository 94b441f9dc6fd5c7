//! The fused RNN against a step-by-step reference written from the
//! equations (float64), its gradients against finite differences, and its
//! errors.

use oxnet_core::{invoke, AttrValue, NDArray};

/// A small deterministic generator of values in [-0.5, 0.5).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        })
        .collect()
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `W·v` for W of `rows` × v.len().
fn mv(w: &[f64], v: &[f64], rows: usize) -> Vec<f64> {
    (0..rows).map(|r| (0..v.len()).map(|c| w[r * v.len() + c] * v[c]).sum()).collect()
}

/// One call's settings for the reference.
#[derive(Clone)]
struct Case {
    mode: &'static str,
    layers: usize,
    dirs: usize,
    h: usize,
    proj: Option<usize>,
    t: usize,
    n: usize,
    i: usize,
    lens: Option<Vec<usize>>,
    clip: Option<(f64, f64)>,
}

impl Case {
    fn gates(&self) -> usize {
        match self.mode {
            "lstm" => 4,
            "gru" => 3,
            _ => 1,
        }
    }
    fn o(&self) -> usize {
        self.proj.unwrap_or(self.h)
    }
    fn attrs(&self, state_outputs: bool) -> Vec<(&'static str, AttrValue)> {
        let mut a = vec![
            ("mode", AttrValue::Str(self.mode.into())),
            ("state_size", AttrValue::Int(self.h as i64)),
            ("num_layers", AttrValue::Int(self.layers as i64)),
            ("bidirectional", AttrValue::Bool(self.dirs == 2)),
            ("state_outputs", AttrValue::Bool(state_outputs)),
            ("use_sequence_length", AttrValue::Bool(self.lens.is_some())),
        ];
        if let Some(p) = self.proj {
            a.push(("projection_size", AttrValue::Int(p as i64)));
        }
        if let Some((lo, hi)) = self.clip {
            a.push(("lstm_state_clip_min", AttrValue::Str(lo.to_string())));
            a.push(("lstm_state_clip_max", AttrValue::Str(hi.to_string())));
        }
        a
    }
    /// The parameter vector's length, MXNet's formula.
    fn param_len(&self) -> usize {
        let (g, h, o) = (self.gates() * self.h, self.h, self.o());
        let mut len = 0;
        for l in 0..self.layers {
            let ni = if l == 0 { self.i } else { self.dirs * o };
            len += self.dirs * (g * ni + g * o + 2 * g + self.proj.map_or(0, |p| p * h));
        }
        len
    }
}

/// The reference: (output, hy, cy) by the equations, one step at a time.
fn reference(c: &Case, x: &[f64], p: &[f64], h0: &[f64], c0: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (h, o, g) = (c.h, c.o(), c.gates() * c.h);
    // the weights, in MXNet's order
    let mut at = 0;
    let mut weights = vec![];
    for l in 0..c.layers {
        let ni = if l == 0 { c.i } else { c.dirs * o };
        for _ in 0..c.dirs {
            let wx = p[at..at + g * ni].to_vec();
            at += g * ni;
            let wh = p[at..at + g * o].to_vec();
            at += g * o;
            let wr = c.proj.map(|_| {
                let w = p[at..at + o * h].to_vec();
                at += o * h;
                w
            });
            weights.push((wx, wh, wr));
        }
    }
    let mut biases = vec![];
    for _ in 0..c.layers * c.dirs {
        biases.push((p[at..at + g].to_vec(), p[at + g..at + 2 * g].to_vec()));
        at += 2 * g;
    }
    let mut input: Vec<Vec<f64>> = (0..c.t * c.n).map(|r| x[r * c.i..(r + 1) * c.i].to_vec()).collect();
    let (mut hy, mut cy) = (vec![0.0; c.layers * c.dirs * c.n * o], vec![0.0; c.layers * c.dirs * c.n * h]);
    for l in 0..c.layers {
        let mut out = vec![vec![0.0; c.dirs * o]; c.t * c.n];
        for d in 0..c.dirs {
            let k = l * c.dirs + d;
            let (wx, wh, wr) = &weights[k];
            let (bx, bh) = &biases[k];
            for b in 0..c.n {
                let len = c.lens.as_ref().map_or(c.t, |v| v[b]);
                let mut hs = h0[(k * c.n + b) * o..][..o].to_vec();
                let mut cs = c0.get((k * c.n + b) * h..(k * c.n + b + 1) * h).map_or(vec![], <[f64]>::to_vec);
                let order: Vec<usize> = if d == 0 { (0..len).collect() } else { (0..len).rev().collect() };
                for t in order {
                    let xi = &input[t * c.n + b];
                    let a: Vec<f64> = mv(wx, xi, g).iter().zip(bx).map(|(v, b)| v + b).collect();
                    let hh: Vec<f64> = mv(wh, &hs, g).iter().zip(bh).map(|(v, b)| v + b).collect();
                    match c.mode {
                        "lstm" => {
                            let mut hc = vec![0.0; h];
                            for j in 0..h {
                                let i = sig(a[j] + hh[j]);
                                let f = sig(a[h + j] + hh[h + j]);
                                let gg = (a[2 * h + j] + hh[2 * h + j]).tanh();
                                let oo = sig(a[3 * h + j] + hh[3 * h + j]);
                                cs[j] = f * cs[j] + i * gg;
                                if let Some((lo, hi)) = c.clip {
                                    cs[j] = cs[j].clamp(lo, hi);
                                }
                                hc[j] = oo * cs[j].tanh();
                            }
                            hs = match wr {
                                Some(wr) => mv(wr, &hc, o),
                                None => hc,
                            };
                        }
                        "gru" => {
                            let mut hn = vec![0.0; h];
                            for j in 0..h {
                                let r = sig(a[j] + hh[j]);
                                let z = sig(a[h + j] + hh[h + j]);
                                let nn = (a[2 * h + j] + r * hh[2 * h + j]).tanh();
                                hn[j] = (1.0 - z) * nn + z * hs[j];
                            }
                            hs = hn;
                        }
                        m => {
                            hs = (0..h)
                                .map(|j| {
                                    let v = a[j] + hh[j];
                                    if m == "rnn_relu" {
                                        v.max(0.0)
                                    } else {
                                        v.tanh()
                                    }
                                })
                                .collect();
                        }
                    }
                    out[t * c.n + b][d * o..(d + 1) * o].copy_from_slice(&hs);
                }
                hy[(k * c.n + b) * o..][..o].copy_from_slice(&hs);
                if !cs.is_empty() {
                    cy[(k * c.n + b) * h..][..h].copy_from_slice(&cs);
                }
            }
        }
        input = out;
    }
    (input.concat(), hy, cy)
}

struct Call {
    ins: Vec<NDArray>,
    x: Vec<f64>,
    p: Vec<f64>,
    h0: Vec<f64>,
    c0: Vec<f64>,
}

fn inputs(c: &Case) -> Call {
    let (x, p) = (values(c.t * c.n * c.i, 1), values(c.param_len(), 2));
    let h0 = values(c.layers * c.dirs * c.n * c.o(), 3);
    let c0 = if c.mode == "lstm" { values(c.layers * c.dirs * c.n * c.h, 4) } else { vec![] };
    let mut ins = vec![
        NDArray::from_vec(x.clone(), &[c.t, c.n, c.i]).unwrap(),
        NDArray::from_vec(p.clone(), &[p.len()]).unwrap(),
        NDArray::from_vec(h0.clone(), &[c.layers * c.dirs, c.n, c.o()]).unwrap(),
    ];
    if c.mode == "lstm" {
        ins.push(NDArray::from_vec(c0.clone(), &[c.layers * c.dirs, c.n, c.h]).unwrap());
    }
    if let Some(l) = &c.lens {
        ins.push(NDArray::from_vec(l.iter().map(|&v| v as f64).collect::<Vec<_>>(), &[c.n]).unwrap());
    }
    Call { ins, x, p, h0, c0 }
}

fn cases() -> Vec<Case> {
    let base =
        Case { mode: "lstm", layers: 1, dirs: 1, h: 3, proj: None, t: 4, n: 2, i: 5, lens: None, clip: None };
    let mut v = vec![];
    for mode in ["rnn_relu", "rnn_tanh", "lstm", "gru"] {
        for (layers, dirs) in [(1, 1), (2, 1), (2, 2)] {
            v.push(Case { mode, layers, dirs, ..base.clone() });
        }
        v.push(Case { mode, layers: 2, dirs: 2, lens: Some(vec![4, 2]), ..base.clone() });
    }
    v.push(Case { proj: Some(2), layers: 2, dirs: 2, ..base.clone() });
    v.push(Case { proj: Some(2), layers: 2, dirs: 1, lens: Some(vec![1, 3]), ..base.clone() });
    v.push(Case { clip: Some((-0.2, 0.25)), layers: 2, ..base.clone() });
    v
}

fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}[{i}]: {x} vs {y}");
    }
}

#[test]
fn outputs_and_states_follow_the_equations() {
    for c in cases() {
        let call = inputs(&c);
        let refs: Vec<&NDArray> = call.ins.iter().collect();
        let outs = invoke("RNN", &refs, &c.attrs(true)).unwrap();
        let n_vis = if c.mode == "lstm" { 3 } else { 2 };
        // the visible outputs, and the workspace the gradient reads
        assert_eq!(outs.len(), n_vis + 1, "{}: outputs", c.mode);
        let op = oxnet_core::registry::get("RNN").unwrap();
        assert_eq!(op.visible_count(outs.len()), n_vis, "{}: visible outputs", c.mode);
        let (out, hy, cy) = reference(&c, &call.x, &call.p, &call.h0, &call.c0);
        let what =
            format!("{} layers={} dirs={} proj={:?} lens={:?}", c.mode, c.layers, c.dirs, c.proj, c.lens);
        assert_eq!(outs[0].shape(), &[c.t, c.n, c.dirs * c.o()]);
        // outputs past a sequence's end are zero in both
        assert_close(&format!("{what} output"), &outs[0].to_vec::<f64>().unwrap(), &out, 1e-12);
        assert_close(&format!("{what} hy"), &outs[1].to_vec::<f64>().unwrap(), &hy, 1e-12);
        if c.mode == "lstm" {
            assert_close(&format!("{what} cy"), &outs[2].to_vec::<f64>().unwrap(), &cy, 1e-12);
        }
    }
}

/// The sum of every visible output times fixed weights, as a function of
/// the inputs' values.
fn objective(c: &Case, ins: &[NDArray], heads: &[Vec<f64>]) -> f64 {
    let refs: Vec<&NDArray> = ins.iter().collect();
    let outs = invoke("RNN", &refs, &c.attrs(true)).unwrap();
    outs[..heads.len()]
        .iter()
        .zip(heads)
        .map(|(o, h)| o.to_vec::<f64>().unwrap().iter().zip(h).map(|(a, b)| a * b).sum::<f64>())
        .sum()
}

#[test]
fn gradients_match_finite_differences() {
    use oxnet_core::autograd;
    for c in cases() {
        let call = inputs(&c);
        let n_diff = if c.mode == "lstm" { 4 } else { 3 };
        for a in &call.ins[..n_diff] {
            autograd::attach_grad(a, oxnet_core::Req::Write).unwrap();
        }
        let refs: Vec<&NDArray> = call.ins.iter().collect();
        let outs = {
            let _rec = autograd::record();
            invoke("RNN", &refs, &c.attrs(true)).unwrap()
        };
        let outs = &outs[..outs.len() - 1];
        let heads: Vec<Vec<f64>> =
            outs.iter().enumerate().map(|(i, o)| values(o.size(), 10 + i as u64)).collect();
        let head_arrays: Vec<NDArray> =
            outs.iter().zip(&heads).map(|(o, h)| NDArray::from_vec(h.clone(), o.shape()).unwrap()).collect();
        let head_refs: Vec<Option<&NDArray>> = head_arrays.iter().map(Some).collect();
        autograd::backward(&outs.iter().collect::<Vec<_>>(), &head_refs, Default::default()).unwrap();
        let what =
            format!("{} layers={} dirs={} proj={:?} lens={:?}", c.mode, c.layers, c.dirs, c.proj, c.lens);
        for (which, a) in call.ins[..n_diff].iter().enumerate() {
            let grad = autograd::grad_of(a).unwrap().to_vec::<f64>().unwrap();
            let base = a.to_vec::<f64>().unwrap();
            let eps = 1e-6;
            // a sample of positions keeps the test quick
            for pos in (0..base.len()).step_by((base.len() / 25).max(1)) {
                let shifted = |delta: f64| {
                    let mut v = base.clone();
                    v[pos] += delta;
                    let mut ins = call.ins.clone();
                    ins[which] = NDArray::from_vec(v, a.shape()).unwrap();
                    objective(&c, &ins, &heads)
                };
                let numeric = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
                assert!(
                    (numeric - grad[pos]).abs() <= 1e-6 * (1.0 + numeric.abs()),
                    "{what}: input {which} position {pos}: analytic {} numeric {numeric}",
                    grad[pos]
                );
            }
        }
    }
}

#[test]
fn float32_agrees_with_float64() {
    let c =
        Case { mode: "lstm", layers: 2, dirs: 2, h: 8, proj: None, t: 5, n: 3, i: 6, lens: None, clip: None };
    let call = inputs(&c);
    let f32s: Vec<NDArray> = call.ins.iter().map(|a| a.astype(oxnet_core::DType::F32).unwrap()).collect();
    let r64 = invoke("RNN", &call.ins.iter().collect::<Vec<_>>(), &c.attrs(false)).unwrap();
    let r32 = invoke("RNN", &f32s.iter().collect::<Vec<_>>(), &c.attrs(false)).unwrap();
    assert_close("float32 output", &r32[0].to_vec::<f64>().unwrap(), &r64[0].to_vec::<f64>().unwrap(), 1e-5);
}

#[test]
fn bad_inputs_are_errors_naming_the_problem() {
    let c =
        Case { mode: "gru", layers: 2, dirs: 1, h: 3, proj: None, t: 4, n: 2, i: 5, lens: None, clip: None };
    let call = inputs(&c);
    let short = NDArray::from_vec(vec![0.0; 10], &[10]).unwrap();
    let mut ins: Vec<&NDArray> = call.ins.iter().collect();
    ins[1] = &short;
    let e = invoke("RNN", &ins, &c.attrs(false)).unwrap_err().to_string();
    assert!(e.contains("parameters") && e.contains(&c.param_len().to_string()), "{e}");
    let bad_state = NDArray::from_vec(vec![0.0; 6], &[1, 2, 3]).unwrap();
    let mut ins: Vec<&NDArray> = call.ins.iter().collect();
    ins[2] = &bad_state;
    let e = invoke("RNN", &ins, &c.attrs(false)).unwrap_err().to_string();
    assert!(e.contains("state") && e.contains("[2, 2, 3]"), "{e}");
    let mut attrs = c.attrs(false);
    attrs[0] = ("mode", AttrValue::Str("lstmx".into()));
    let e = invoke("RNN", &call.ins.iter().collect::<Vec<_>>(), &attrs).unwrap_err().to_string();
    assert!(e.contains("mode"), "{e}");
    let with_lens = Case { lens: Some(vec![5, 1]), ..c.clone() };
    let call = inputs(&with_lens);
    let e =
        invoke("RNN", &call.ins.iter().collect::<Vec<_>>(), &with_lens.attrs(false)).unwrap_err().to_string();
    assert!(e.contains("sequence_length") && e.contains('5'), "{e}");
    let proj_gru = Case { proj: Some(2), ..c };
    let e =
        invoke("RNN", &call.ins.iter().collect::<Vec<_>>(), &proj_gru.attrs(false)).unwrap_err().to_string();
    assert!(e.contains("projection_size"), "{e}");
}

#[test]
fn dropout_between_layers_only_in_train_mode() {
    let c = Case {
        mode: "rnn_tanh",
        layers: 2,
        dirs: 1,
        h: 16,
        proj: None,
        t: 3,
        n: 4,
        i: 5,
        lens: None,
        clip: None,
    };
    let call = inputs(&c);
    let refs: Vec<&NDArray> = call.ins.iter().collect();
    let mut attrs = c.attrs(false);
    attrs.push(("p", AttrValue::Float(0.5)));
    let plain = invoke("RNN", &refs, &c.attrs(false)).unwrap()[0].to_vec::<f64>().unwrap();
    let predict = invoke("RNN", &refs, &attrs).unwrap()[0].to_vec::<f64>().unwrap();
    assert_eq!(plain, predict, "no dropout in predict mode");
    let train = {
        let _train = oxnet_core::autograd::train_mode();
        invoke("RNN", &refs, &attrs).unwrap()[0].to_vec::<f64>().unwrap()
    };
    assert_ne!(plain, train, "dropout in train mode");
}
