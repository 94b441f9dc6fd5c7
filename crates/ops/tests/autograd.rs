//! Autograd behaviour: scopes, requests, retain_graph, head gradients,
//! higher order, detach, mark_variables.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::{invoke1, DType, NDArray, Req};
use oxnet_ops as _; // the built-in operators these tests call

fn arr(v: &[f64]) -> NDArray {
    NDArray::from_slice(v, &[v.len()]).unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn first_order_gradient_of_a_composite() {
    let xs = [0.3, -1.2, 2.0];
    let x = arr(&xs);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        let sq = invoke1("elemwise_mul", &[&x, &x], &[]).unwrap();
        let s = invoke1("sin", &[&x], &[]).unwrap();
        invoke1("elemwise_add", &[&sq, &s], &[]).unwrap()
    };
    y.backward().unwrap();
    let want: Vec<f64> = xs.iter().map(|v| 2.0 * v + v.cos()).collect();
    close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &want, 1e-12);
}

#[test]
fn grad_req_add_accumulates_and_write_overwrites() {
    let x = arr(&[1.0, 2.0]);
    x.attach_grad(Req::Add).unwrap();
    for _ in 0..3 {
        let y = {
            let _r = autograd::record();
            invoke1("_mul_scalar", &[&x], &[("scalar", 3.0.into())]).unwrap()
        };
        y.backward().unwrap();
    }
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![9.0, 9.0]);

    let z = arr(&[1.0]);
    z.attach_grad(Req::Write).unwrap();
    for _ in 0..2 {
        let y = {
            let _r = autograd::record();
            invoke1("_mul_scalar", &[&z], &[("scalar", 3.0.into())]).unwrap()
        };
        y.backward().unwrap();
    }
    assert_eq!(z.grad().unwrap().to_vec::<f64>().unwrap(), vec![3.0]);
}

#[test]
fn second_backward_needs_retain_graph() {
    let x = arr(&[0.5]);
    x.attach_grad(Req::Add).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("exp", &[&x], &[]).unwrap()
    };
    autograd::backward(&[&y], &[], BackwardOptions { retain_graph: true, ..Default::default() }).unwrap();
    autograd::backward(&[&y], &[], BackwardOptions::default()).unwrap();
    close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &[2.0 * 0.5f64.exp()], 1e-12);
    let err = y.backward().unwrap_err().to_string();
    assert!(err.contains("retain_graph"), "{err}");
}

#[test]
fn an_array_from_a_freed_graph_enters_a_new_recording_as_a_constant() {
    // MXNet's rule: a carried state (an RNN's hidden state, a running
    // bias) needs no detach between iterations.
    let (x, w) = (arr(&[0.5]), arr(&[3.0]));
    x.attach_grad(Req::Write).unwrap();
    w.attach_grad(Req::Write).unwrap();
    let h = {
        let _r = autograd::record();
        invoke1("elemwise_mul", &[&x, &w], &[]).unwrap()
    };
    h.backward().unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("elemwise_mul", &[&h, &w], &[]).unwrap()
    };
    y.backward().unwrap();
    // y = h * w with h = 1.5 taken as a constant: dy/dw = 1.5, and x gets nothing new
    close(&w.grad().unwrap().to_vec::<f64>().unwrap(), &[1.5], 1e-12);
    close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &[3.0], 1e-12);
}

#[test]
fn head_gradients_scale_the_result() {
    let x = arr(&[1.0, 2.0]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("square", &[&x], &[]).unwrap()
    };
    let hg = arr(&[10.0, 0.5]);
    autograd::backward(&[&y], &[Some(&hg)], BackwardOptions::default()).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![20.0, 2.0]);
    let bad = arr(&[1.0]);
    let y2 = {
        let _r = autograd::record();
        invoke1("square", &[&x], &[]).unwrap()
    };
    assert!(autograd::backward(&[&y2], &[Some(&bad)], BackwardOptions::default()).is_err());
}

fn nth_derivative(f: impl Fn(&NDArray) -> NDArray, xs: &[f64], order: usize) -> Vec<f64> {
    let x = arr(xs);
    x.attach_grad(Req::Write).unwrap();
    let opts = BackwardOptions { create_graph: true, retain_graph: true, train_mode: true };
    let mut y = {
        let _r = autograd::record();
        f(&x)
    };
    for _ in 0..order {
        y = {
            let _r = autograd::record();
            autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0)
        };
    }
    y.to_vec::<f64>().unwrap()
}

#[test]
fn second_order_of_sin_is_minus_sin() {
    let xs = [0.1, 1.0, -2.5];
    let d2 = nth_derivative(|x| invoke1("sin", &[x], &[]).unwrap(), &xs, 2);
    close(&d2, &xs.iter().map(|v| -v.sin()).collect::<Vec<_>>(), 1e-12);
    let d3 = nth_derivative(|x| invoke1("sin", &[x], &[]).unwrap(), &xs, 3);
    close(&d3, &xs.iter().map(|v| -v.cos()).collect::<Vec<_>>(), 1e-12);
}

#[test]
fn second_order_of_x_exp_x() {
    let xs = [0.0, 0.7, -1.3];
    let f = |x: &NDArray| {
        let e = invoke1("exp", &[x], &[]).unwrap();
        invoke1("elemwise_mul", &[x, &e], &[]).unwrap()
    };
    let d2 = nth_derivative(f, &xs, 2);
    close(&d2, &xs.iter().map(|v| (v + 2.0) * v.exp()).collect::<Vec<_>>(), 1e-12);
}

#[test]
fn grad_does_not_touch_buffers() {
    let x = arr(&[3.0]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("square", &[&x], &[]).unwrap()
    };
    let g = autograd::grad(&[&y], &[&x], &[], BackwardOptions::default()).unwrap();
    assert_eq!(g[0].to_vec::<f64>().unwrap(), vec![6.0]);
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![0.0]);
}

#[test]
fn detach_and_pause_stop_gradients() {
    let x = arr(&[2.0]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        let sq = invoke1("square", &[&x], &[]).unwrap();
        let d = sq.detach();
        // y = x^2 (tracked) + x^2 (detached constant) * x
        let t = invoke1("elemwise_mul", &[&d, &x], &[]).unwrap();
        invoke1("elemwise_add", &[&sq, &t], &[]).unwrap()
    };
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![4.0 + 4.0]);

    let z = {
        let _r = autograd::record();
        let _p = autograd::pause();
        invoke1("square", &[&x], &[]).unwrap()
    };
    let err = z.backward().unwrap_err().to_string();
    assert!(err.contains("record"), "{err}");
}

#[test]
fn mark_variables_uses_given_buffers() {
    let x = arr(&[1.0, 2.0]);
    let buf = NDArray::full(&[2], 100.0, DType::F64, Default::default()).unwrap();
    autograd::mark_variables(&[&x], &[&buf], &[Req::Add]).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("_mul_scalar", &[&x], &[("scalar", 2.0.into())]).unwrap()
    };
    y.backward().unwrap();
    assert_eq!(buf.to_vec::<f64>().unwrap(), vec![102.0, 102.0]);
    assert!(autograd::mark_variables(&[&x], &[&arr(&[1.0])], &[Req::Write]).is_err());
}

#[test]
fn recording_is_per_thread() {
    let _r = autograd::record();
    let other = std::thread::spawn(autograd::is_recording).join().unwrap();
    assert!(!other);
    assert!(autograd::is_recording());
}

#[test]
fn dropout_follows_train_mode() {
    let x = NDArray::ones(&[1000], DType::F32, Default::default()).unwrap();
    let predict = invoke1("Dropout", &[&x], &[("p", 0.5.into())]).unwrap();
    assert_eq!(predict.to_vec::<f32>().unwrap(), vec![1.0; 1000]);
    let train = {
        let _t = autograd::train_mode();
        invoke1("Dropout", &[&x], &[("p", 0.5.into())]).unwrap()
    };
    let zeros = train.to_vec::<f32>().unwrap().iter().filter(|v| **v == 0.0).count();
    assert!((350..650).contains(&zeros), "{zeros} of 1000 dropped");
}

/// FullyConnected's weight and bias gradients, written straight into the
/// buffers of variables that only it reads: hand-computed values
/// (dW = gᵀ·x, db = column sums of g with g = 1 for a sum), overwritten by
/// a second pass; a weight also read elsewhere gets both contributions.
#[test]
fn fully_connected_gradients_land_in_sole_variables_buffers() {
    let x = NDArray::from_vec(vec![1.0f64, 2.0, 3.0, -1.0, 0.5, 2.0], &[2, 3]).unwrap();
    let w = NDArray::from_vec(vec![0.1f64, 0.2, 0.3, -0.4, 0.5, -0.6], &[2, 3]).unwrap();
    let b = NDArray::from_vec(vec![0.5f64, -0.5], &[2]).unwrap();
    for a in [&x, &w, &b] {
        a.attach_grad(Req::Write).unwrap();
    }
    let fc = |extra: bool| {
        let _rec = autograd::record();
        let y = invoke1("FullyConnected", &[&x, &w, &b], &[("num_hidden", 2.into())]).unwrap();
        let s = invoke1("sum", &[&y], &[]).unwrap();
        if extra {
            let sw = invoke1("sum", &[&w], &[]).unwrap();
            invoke1("elemwise_add", &[&s, &sw], &[]).unwrap()
        } else {
            s
        }
    };
    // with g = ones(2, 2): dW[j, :] = x[0, :] + x[1, :], db = [2, 2], dx[i, :] = w[0, :] + w[1, :]
    let dw = [0.0, 2.5, 5.0, 0.0, 2.5, 5.0];
    for _ in 0..2 {
        fc(false).backward().unwrap();
        close(&w.grad().unwrap().to_vec::<f64>().unwrap(), &dw, 1e-12);
        close(&b.grad().unwrap().to_vec::<f64>().unwrap(), &[2.0, 2.0], 1e-12);
        close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &[-0.3, 0.7, -0.3, -0.3, 0.7, -0.3], 1e-12);
    }
    fc(true).backward().unwrap();
    let plus_one: Vec<f64> = dw.iter().map(|v| v + 1.0).collect();
    close(&w.grad().unwrap().to_vec::<f64>().unwrap(), &plus_one, 1e-12);
    close(&b.grad().unwrap().to_vec::<f64>().unwrap(), &[2.0, 2.0], 1e-12);
}

/// Records each hook's run: the variable's name and its gradient buffer,
/// and the other variable's buffer, at that moment.
type HookLog = std::sync::Arc<std::sync::Mutex<Vec<(&'static str, Vec<f64>, Vec<f64>)>>>;

fn log_ready(log: &HookLog, name: &'static str, x: &NDArray, other: &NDArray) {
    let (log, var, other) = (log.clone(), x.clone(), other.clone());
    let hook = std::sync::Arc::new(move || {
        let mine = var.grad().unwrap().to_vec::<f64>().unwrap();
        let theirs = other.grad().unwrap().to_vec::<f64>().unwrap();
        log.lock().unwrap().push((name, mine, theirs));
    });
    assert!(autograd::set_grad_ready_hook(x, Some(hook)));
}

/// A gradient-ready hook runs once per backward pass, as soon as its
/// variable's gradient is complete in the buffer: `w2` (read late in the
/// forward pass) is announced while `w1`'s gradient is still unwritten,
/// and `w1`, read twice, only after both contributions.
#[test]
fn gradient_ready_hooks_run_as_each_gradient_completes() {
    let x = arr(&[0.5, -1.0, 2.0]);
    let (w1, w2) = (arr(&[0.3, 0.7, -0.2]), arr(&[1.5, -0.4, 0.9]));
    w1.attach_grad(Req::Write).unwrap();
    w2.attach_grad(Req::Write).unwrap();
    let log: HookLog = Default::default();
    log_ready(&log, "w1", &w1, &w2);
    log_ready(&log, "w2", &w2, &w1);
    assert!(!autograd::set_grad_ready_hook(&x, None), "x is no variable");
    let forward = || {
        let _r = autograd::record();
        let h = invoke1("elemwise_mul", &[&w1, &x], &[]).unwrap();
        let y = invoke1("elemwise_mul", &[&invoke1("sin", &[&h], &[]).unwrap(), &w2], &[]).unwrap();
        let extra = invoke1("sum", &[&w1], &[]).unwrap();
        invoke1("elemwise_add", &[&invoke1("sum", &[&y], &[]).unwrap(), &extra], &[]).unwrap()
    };
    // d/dw1 = cos(w1 x) x w2 + 1, d/dw2 = sin(w1 x)
    let (xs, a, b): ([f64; 3], [f64; 3], [f64; 3]) = ([0.5, -1.0, 2.0], [0.3, 0.7, -0.2], [1.5, -0.4, 0.9]);
    let g1: Vec<f64> = (0..3).map(|i| (a[i] * xs[i]).cos() * xs[i] * b[i] + 1.0).collect();
    let g2: Vec<f64> = (0..3).map(|i| (a[i] * xs[i]).sin()).collect();
    forward().backward().unwrap();
    {
        let log = log.lock().unwrap();
        assert_eq!(log.iter().map(|e| e.0).collect::<Vec<_>>(), ["w2", "w1"]);
        close(&log[0].1, &g2, 1e-12);
        close(&log[0].2, &[0.0; 3], 0.0); // w1's gradient was not complete yet
        close(&log[1].1, &g1, 1e-12);
    }
    assert_eq!(autograd::fresh_grad(&w2), Some(true));
    // autograd.grad leaves the buffers (and the hooks) alone
    let y = forward();
    autograd::grad(&[&y], &[&w1], &[], BackwardOptions::default()).unwrap();
    assert_eq!(log.lock().unwrap().len(), 2);
    // a removed hook no longer runs
    autograd::set_grad_ready_hook(&w2, None);
    forward().backward().unwrap();
    assert_eq!(log.lock().unwrap().iter().map(|e| e.0).collect::<Vec<_>>(), ["w2", "w1", "w1"]);
}

/// With `grad_req='add'` the hook runs after the pass has added its whole
/// contribution (two uses of the variable) into the buffer.
#[test]
fn gradient_ready_hooks_see_accumulated_gradients() {
    let w = arr(&[1.0, 2.0]);
    w.attach_grad(Req::Add).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (s, wc) = (seen.clone(), w.clone());
    autograd::set_grad_ready_hook(
        &w,
        Some(std::sync::Arc::new(move || {
            s.lock().unwrap().push(wc.grad().unwrap().to_vec::<f64>().unwrap())
        })),
    );
    for _ in 0..2 {
        let y = {
            let _r = autograd::record();
            let sq = invoke1("elemwise_mul", &[&w, &w], &[]).unwrap();
            invoke1("sum", &[&invoke1("elemwise_add", &[&sq, &w], &[]).unwrap()], &[]).unwrap()
        };
        y.backward().unwrap();
    }
    // 2w + 1 per pass, accumulated
    assert_eq!(*seen.lock().unwrap(), vec![vec![3.0, 5.0], vec![6.0, 10.0]]);
}
