//! Optimizers, updaters and schedulers of `oxnet_nn::optim`, against f64
//! references of MXNet's formulas.

use oxnet_core::{DType, NDArray};
use oxnet_nn::optim::lr_scheduler::{shared, FactorScheduler, Warmup};
use oxnet_nn::optim::{create, MultKey, Updater, NAMES};

fn values(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

fn arr(v: &[f64], dtype: DType) -> NDArray {
    NDArray::from_vec(v.to_vec(), &[v.len()]).unwrap().astype(dtype).unwrap()
}

fn read(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn sgd_momentum_three_steps_single_and_multi() {
    let (lr, mu, wd, rs, clip) = (0.1, 0.9, 0.01, 0.5, 0.3);
    let hyper = [
        ("learning_rate", lr.to_string()),
        ("momentum", mu.to_string()),
        ("wd", wd.to_string()),
        ("rescale_grad", rs.to_string()),
        ("clip_gradient", clip.to_string()),
    ];
    let w0 = [values(1, 6), values(2, 3)];
    for multi in [false, true] {
        let mut up = Updater::new(create("sgd", &hyper).unwrap());
        let ws: Vec<NDArray> = w0.iter().map(|v| arr(v, DType::F64)).collect();
        let mut w_ref = w0.clone();
        let mut m_ref = [vec![0.0; 6], vec![0.0; 3]];
        for step in 0..3 {
            let gs: Vec<NDArray> =
                (0..2).map(|k| arr(&values(10 + step * 2 + k, w0[k as usize].len()), DType::F64)).collect();
            if multi {
                up.update_multi(&[0, 1], &gs, &ws).unwrap();
            } else {
                up.update(0, &gs[0], &ws[0]).unwrap();
                up.update(1, &gs[1], &ws[1]).unwrap();
            }
            for k in 0..2 {
                let g = read(&gs[k]);
                for i in 0..g.len() {
                    let gr = (rs * g[i]).clamp(-clip, clip);
                    m_ref[k][i] = mu * m_ref[k][i] - lr * wd * w_ref[k][i] - lr * gr;
                    w_ref[k][i] += m_ref[k][i];
                }
                close("sgd weight", &read(&ws[k]), &w_ref[k], 1e-12);
                close("sgd mom", &read(&up.states()[&k][0]), &m_ref[k], 1e-12);
            }
        }
        let opt = up.optimizer().lock().unwrap();
        assert_eq!((opt.base().num_update(), opt.base().index_update_count(1)), (3, 3));
    }
}

#[test]
fn adam_bias_correction_and_multipliers() {
    let (lr, b1, b2, eps, wd): (f64, f64, f64, f64, f64) = (0.01, 0.9, 0.999, 1e-8, 0.1);
    let mut opt = create("adam", &[("learning_rate", "0.01"), ("wd", "0.1")]).unwrap();
    opt.base_mut().set_lr_mult([(MultKey::Index(0), 0.5)].into());
    opt.base_mut().param_mult.insert(1, (2.0, 0.0));
    let mut up = Updater::new(opt);
    let w0 = values(3, 5);
    let ws = [arr(&w0, DType::F64), arr(&w0, DType::F64)];
    let mut w_ref = [w0.clone(), w0.clone()];
    let mut m = [vec![0.0; 5], vec![0.0; 5]];
    let mut v = [vec![0.0; 5], vec![0.0; 5]];
    let mults = [(0.5, 1.0), (2.0, 0.0)];
    for t in 1..=3 {
        let g = values(20 + t, 5);
        let gs = [arr(&g, DType::F64), arr(&g, DType::F64)];
        up.update_multi(&[0, 1], &gs, &ws).unwrap();
        for k in 0..2 {
            let (lm, wm) = mults[k];
            let lr_t = lr * lm * (1.0 - b2.powi(t as i32)).sqrt() / (1.0 - b1.powi(t as i32));
            for i in 0..5 {
                let gr = g[i] + wd * wm * w_ref[k][i];
                m[k][i] = b1 * m[k][i] + (1.0 - b1) * gr;
                v[k][i] = b2 * v[k][i] + (1.0 - b2) * gr * gr;
                w_ref[k][i] -= lr_t * m[k][i] / (v[k][i].sqrt() + eps);
            }
            close("adam", &read(&ws[k]), &w_ref[k], 1e-12);
        }
    }
}

#[test]
fn multi_precision_sgd_keeps_a_float32_master_copy() {
    let mut up = Updater::new(
        create("sgd", &[("learning_rate", "0.1"), ("momentum", "0.9"), ("multi_precision", "True")]).unwrap(),
    );
    let w = arr(&values(4, 8), DType::F16);
    let mut w_ref = read(&w);
    let mut m_ref = [0.0; 8];
    for step in 0..3 {
        let g = arr(&values(30 + step, 8), DType::F16);
        up.update(0, &g, &w).unwrap();
        let gv = read(&g);
        for i in 0..8 {
            m_ref[i] = 0.9 * m_ref[i] - 0.1 * gv[i];
            w_ref[i] += m_ref[i];
        }
        let state = &up.states()[&0];
        assert_eq!((state.len(), state[0].dtype(), state[1].dtype()), (2, DType::F32, DType::F32));
        close("master", &read(&state[1]), &w_ref, 1e-6);
        assert_eq!(read(&w), read(&state[1].astype(DType::F16).unwrap()));
    }
    // a generic optimizer (Adam) keeps its master copy last
    let mut up = Updater::new(create("adam", &[("multi_precision", "True")]).unwrap());
    let w = arr(&values(5, 4), DType::F16);
    up.update(0, &arr(&values(6, 4), DType::F16), &w).unwrap();
    let s = &up.states()[&0];
    assert_eq!(s.iter().map(|a| a.dtype()).collect::<Vec<_>>(), vec![DType::F32; 3]);
    assert_eq!(read(&w), read(&s[2].astype(DType::F16).unwrap()));
}

#[test]
fn scheduler_drives_the_rate_and_an_explicit_rate_replaces_its_base() {
    let sched = shared(FactorScheduler::new(1, 0.5, 0.0, 1.0, Warmup::none()).unwrap());
    let mut opt = create("sgd", &[("learning_rate", "0.4")]).unwrap();
    opt.base_mut().set_lr_scheduler(Some(sched.clone())).unwrap();
    assert_eq!(sched.lock().unwrap().base_lr(), 0.4);
    let mut up = Updater::new(opt);
    let w = arr(&[0.0], DType::F64);
    let g = arr(&[1.0], DType::F64);
    let mut expect = 0.0;
    for (n, lr) in [(1, 0.4), (2, 0.2), (3, 0.1)] {
        up.update(0, &g, &w).unwrap();
        expect -= lr;
        assert!((read(&w)[0] - expect).abs() < 1e-12, "update {n}");
    }
    let e = up.optimizer().lock().unwrap().base_mut().set_learning_rate(0.1).unwrap_err().to_string();
    assert!(e.contains("LRScheduler"), "{e}");
}

/// Saving after two steps and restoring into a fresh updater gives the
/// same third step as never stopping; a corrupt blob changes nothing.
#[test]
fn states_round_trip_for_every_optimizer() {
    for name in NAMES {
        let hyper: Vec<(&str, &str)> = match *name {
            "sgd" | "nag" | "lars" => vec![("momentum", "0.9")],
            "rmsprop" => vec![("centered", "True")],
            _ => vec![],
        };
        let w0 = values(7, 6).iter().map(|x| x + 2.0).collect::<Vec<_>>();
        let grads: Vec<NDArray> = (0..3).map(|s| arr(&values(40 + s, 6), DType::F64)).collect();
        let run = |stop_after: usize| {
            let w = arr(&w0, DType::F64);
            let mut up = Updater::new(create(name, &hyper).unwrap());
            for g in &grads[..stop_after] {
                up.update(3, g, &w).unwrap();
            }
            (up, w)
        };
        let (_, straight) = run(3);
        let (up, w) = run(2);
        let blob = up.get_states(true).unwrap();
        let mut fresh = Updater::new(create(name, &hyper).unwrap());
        // corrupt and foreign blobs are errors and leave the updater as it was
        assert!(fresh.set_states(&blob[..blob.len() - 3]).is_err(), "{name}: truncated blob");
        assert!(fresh.states().is_empty());
        let other = if *name == "adam" { "sgd" } else { "adam" };
        let e =
            Updater::new(create(other, &[("wd", "0")]).unwrap()).set_states(&blob).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(other), "{e}");
        fresh.set_states(&blob).unwrap();
        assert_eq!(fresh.optimizer().lock().unwrap().base().index_update_count(3), 2, "{name}");
        fresh.update(3, &grads[2], &w).unwrap();
        close(&format!("{name} resumed"), &read(&w), &read(&straight), 1e-12);
    }
}

#[test]
fn unknown_names_and_keys_are_errors() {
    let e = create("momentum_sgd", &[("wd", "0")]).err().unwrap().to_string();
    assert!(e.contains("momentum_sgd") && e.contains("sgd"), "{e}");
    let e = create("lamb", &[("beta3", "1")]).err().unwrap().to_string();
    assert!(e.contains("lamb") && e.contains("beta3"), "{e}");
    let e = create("ftrl", &[("lamda1", "x")]).err().unwrap().to_string();
    assert!(e.contains("ftrl") && e.contains("lamda1"), "{e}");
    // a state that does not fit the optimizer's settings
    let mut up = Updater::new(create("sgd", &[("momentum", "0.9")]).unwrap());
    let w = arr(&[1.0, 2.0], DType::F32);
    up.import_states(vec![], Default::default()).unwrap();
    up.update(0, &arr(&[0.1, 0.1], DType::F32), &w).unwrap();
    let (arrays, counts) = up.export_states().unwrap();
    assert_eq!(arrays.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), vec!["0/0"]);
    let mut plain = Updater::new(create("sgd", &[("momentum", "0")]).unwrap());
    plain.import_states(arrays, counts).unwrap();
    let e = plain.update(0, &arr(&[0.1, 0.1], DType::F32), &w).unwrap_err().to_string();
    assert!(e.contains("sgd") && e.contains("state"), "{e}");
    let e =
        up.update_multi(&[0, 1], std::slice::from_ref(&w), std::slice::from_ref(&w)).unwrap_err().to_string();
    assert!(e.contains("as many"), "{e}");
}
