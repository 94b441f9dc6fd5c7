//! Cached graphs: called like an operator, one tape node under autograd,
//! mixed with imperative code, differentiated twice, called from threads.

use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::{invoke1, DType, NDArray, Req};
use oxnet_graph::{CachedGraph, Symbol};

fn close(a: &NDArray, b: &NDArray, tol: f64) {
    let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

/// y = tanh(FullyConnected(x, w, no_bias)) as a cached graph.
fn layer() -> CachedGraph {
    let x = Symbol::var("x");
    let w = Symbol::var("w");
    let h = Symbol::compose_op(
        "FullyConnected",
        &[x, w],
        &[],
        vec![("num_hidden".into(), "3".into()), ("no_bias".into(), "True".into())],
        Some("fc"),
        Default::default(),
    )
    .unwrap();
    CachedGraph::new(&Symbol::op("tanh", &[&h], &[], Some("t")).unwrap()).unwrap()
}

fn eager_layer(x: &NDArray, w: &NDArray) -> NDArray {
    let h =
        invoke1("FullyConnected", &[x, w], &[("num_hidden", 3.into()), ("no_bias", true.into())]).unwrap();
    invoke1("tanh", &[&h], &[]).unwrap()
}

fn data() -> (NDArray, NDArray) {
    let x = NDArray::from_vec(vec![0.1f64, -0.2, 0.3, 0.4, -0.5, 0.6], &[2, 3]).unwrap();
    let w = NDArray::from_vec((0..9).map(|i| (i as f64 - 4.0) / 5.0).collect::<Vec<_>>(), &[3, 3]).unwrap();
    (x, w)
}

#[test]
fn a_call_computes_what_eager_code_computes_and_reuses_its_executor() {
    let cg = layer();
    assert_eq!(cg.input_names(), ["x", "w"]);
    let (x, w) = data();
    let y = cg.call(&[&x, &w]).unwrap();
    close(&y[0], &eager_layer(&x, &w), 1e-12);
    assert_eq!(cg.pooled_executors(), 1);
    cg.call(&[&x, &w]).unwrap();
    assert_eq!(cg.pooled_executors(), 1);
    let err = cg.call(&[&x]).unwrap_err().to_string();
    assert!(err.contains("takes 2 inputs"), "{err}");
}

#[test]
fn graph_and_imperative_code_mix_under_autograd() {
    let cg = layer();
    let (x, w) = data();
    let (x2, w2) = (x.copy().unwrap(), w.copy().unwrap());
    for a in [&x, &w, &x2, &w2] {
        a.attach_grad(Req::Write).unwrap();
    }
    let mixed = {
        let _rec = autograd::record();
        let pre = invoke1("sigmoid", &[&x], &[]).unwrap();
        let y = cg.call(&[&pre, &w]).unwrap().remove(0);
        // a second call before any backward keeps its own buffers
        let y2 = cg.call(&[&pre, &w]).unwrap().remove(0);
        let s = invoke1(
            "elemwise_add",
            &[&y, &invoke1("_mul_scalar", &[&y2], &[("scalar", 2.0.into())]).unwrap()],
            &[],
        )
        .unwrap();
        invoke1("sum", &[&s], &[]).unwrap()
    };
    mixed.backward().unwrap();
    let eager = {
        let _rec = autograd::record();
        let pre = invoke1("sigmoid", &[&x2], &[]).unwrap();
        let y = eager_layer(&pre, &w2);
        let s = invoke1("_mul_scalar", &[&y], &[("scalar", 3.0.into())]).unwrap();
        invoke1("sum", &[&s], &[]).unwrap()
    };
    eager.backward().unwrap();
    close(&mixed, &eager, 1e-12);
    close(&x.grad().unwrap(), &x2.grad().unwrap(), 1e-10);
    close(&w.grad().unwrap(), &w2.grad().unwrap(), 1e-10);
}

#[test]
fn second_order_gradients_flow_through_a_cached_graph() {
    let cg = layer();
    let (x, w) = data();
    let x2 = x.copy().unwrap();
    x.attach_grad(Req::Write).unwrap();
    x2.attach_grad(Req::Write).unwrap();
    let opts = BackwardOptions { retain_graph: true, create_graph: true, train_mode: true };
    let second = |xv: &NDArray, f: &dyn Fn(&NDArray) -> NDArray| {
        let y = {
            let _rec = autograd::record();
            invoke1("sum", &[&f(xv)], &[]).unwrap()
        };
        let gx = autograd::grad(&[&y], &[xv], &[], opts).unwrap().remove(0);
        let z = {
            let _rec = autograd::record();
            invoke1("sum", &[&invoke1("square", &[&gx], &[]).unwrap()], &[]).unwrap()
        };
        z.backward().unwrap();
        (gx, xv.grad().unwrap())
    };
    let (g_graph, gg_graph) = second(&x, &|a| cg.call(&[a, &w]).unwrap().remove(0));
    let (g_eager, gg_eager) = second(&x2, &|a| eager_layer(a, &w));
    close(&g_graph, &g_eager, 1e-10);
    close(&gg_graph, &gg_eager, 1e-9);
    assert!(gg_eager.to_vec::<f64>().unwrap().iter().any(|v| v.abs() > 1e-6));
}

#[test]
fn one_cached_graph_serves_several_threads() {
    let cg = std::sync::Arc::new(layer());
    let (_, w) = data();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let cg = cg.clone();
            let w = w.copy().unwrap();
            std::thread::spawn(move || {
                for i in 0..20 {
                    let x = NDArray::full(
                        &[2, 3],
                        (t * 20 + i) as f64 / 100.0,
                        DType::F64,
                        oxnet_core::Device::Cpu,
                    )
                    .unwrap();
                    let y = cg.call(&[&x, &w]).unwrap().remove(0);
                    close(&y, &eager_layer(&x, &w), 1e-12);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn a_call_recorded_in_predict_mode_is_differentiable() {
    let cg = layer();
    let (x, w) = data();
    let w2 = w.copy().unwrap();
    w.attach_grad(Req::Write).unwrap();
    w2.attach_grad(Req::Write).unwrap();
    let y = {
        let _rec = autograd::record_with(false);
        invoke1("sum", &[&cg.call(&[&x, &w]).unwrap()[0]], &[]).unwrap()
    };
    y.backward().unwrap();
    let eager = {
        let _rec = autograd::record_with(false);
        invoke1("sum", &[&eager_layer(&x, &w2)], &[]).unwrap()
    };
    eager.backward().unwrap();
    close(&w.grad().unwrap(), &w2.grad().unwrap(), 1e-10);
}

/// A variable read only by one cached call gets its gradient written
/// straight into its buffer (overwritten on each pass, marked fresh); one
/// also read by imperative code gets the sum of both contributions.
#[test]
fn gradients_land_in_variable_buffers_whether_or_not_the_graph_is_their_only_consumer() {
    let cg = layer();
    let (x, w) = data();
    let (xe, we) = (x.copy().unwrap(), w.copy().unwrap());
    for a in [&x, &w, &xe, &we] {
        a.attach_grad(Req::Write).unwrap();
    }
    for _ in 0..2 {
        let loss = {
            let _rec = autograd::record();
            let y = cg.call(&[&x, &w]).unwrap().remove(0);
            invoke1("sum", &[&y], &[]).unwrap()
        };
        autograd::set_fresh_grad(&w, false);
        loss.backward().unwrap();
        assert!(autograd::fresh_grad(&w).unwrap());
        let eager = {
            let _rec = autograd::record();
            invoke1("sum", &[&eager_layer(&xe, &we)], &[]).unwrap()
        };
        eager.backward().unwrap();
        // the second pass overwrites (grad_req write), it does not add
        close(&w.grad().unwrap(), &we.grad().unwrap(), 1e-12);
        close(&x.grad().unwrap(), &xe.grad().unwrap(), 1e-12);
    }

    // w also feeds an imperative op: both contributions are summed
    let loss = {
        let _rec = autograd::record();
        let y = cg.call(&[&x, &w]).unwrap().remove(0);
        let extra = invoke1("sum", &[&w], &[]).unwrap();
        invoke1("elemwise_add", &[&invoke1("sum", &[&y], &[]).unwrap(), &extra], &[]).unwrap()
    };
    loss.backward().unwrap();
    let want = invoke1("_plus_scalar", &[&we.grad().unwrap()], &[("scalar", 1.0.into())]).unwrap();
    close(&w.grad().unwrap(), &want, 1e-12);
}

/// Calls with new input arrays (one changed, one kept; then a strided
/// view) compute with the new values: the executor rebinds only the slots
/// that read a changed input.
#[test]
fn new_input_arrays_are_picked_up_call_after_call() {
    let cg = layer();
    let (x, w) = data();
    close(&cg.call(&[&x, &w]).unwrap()[0], &eager_layer(&x, &w), 1e-12);
    let x2 = invoke1("_mul_scalar", &[&x], &[("scalar", 3.0.into())]).unwrap();
    close(&cg.call(&[&x2, &w]).unwrap()[0], &eager_layer(&x2, &w), 1e-12);
    let w2 = invoke1("_plus_scalar", &[&w], &[("scalar", 0.5.into())]).unwrap();
    close(&cg.call(&[&x2, &w2]).unwrap()[0], &eager_layer(&x2, &w2), 1e-12);
    // a transposed (non-contiguous) view of a 3x2 array as the 2x3 input
    let xt_base = NDArray::from_vec(vec![0.3f64, -0.1, 0.2, 0.5, -0.4, 0.6], &[3, 2]).unwrap();
    let xt = xt_base.transpose(None).unwrap();
    assert!(!xt.is_contiguous());
    let want = eager_layer(&xt.copy().unwrap(), &w2);
    close(&cg.call(&[&xt, &w2]).unwrap()[0], &want, 1e-12);
    // and back to the first arrays
    close(&cg.call(&[&x, &w]).unwrap()[0], &eager_layer(&x, &w), 1e-12);
    assert_eq!(cg.pooled_executors(), 1);
}

/// The gradient of `sum(layer(x, w))` with respect to `w`, imperatively.
fn eager_weight_grad(x: &NDArray, w: &NDArray) -> Vec<f64> {
    let w = w.copy().unwrap();
    w.attach_grad(Req::Write).unwrap();
    let loss = {
        let _rec = autograd::record();
        invoke1("sum", &[&eager_layer(x, &w)], &[]).unwrap()
    };
    loss.backward().unwrap();
    w.grad().unwrap().to_vec::<f64>().unwrap()
}

/// The executor writes a gradient straight into the buffer a backward
/// pass offers only while that buffer is offered: after `w` gets a new
/// buffer, the old one keeps its values; a strided buffer and an `add`
/// request are served by copying, and leave earlier buffers alone too.
#[test]
fn gradients_follow_the_buffers_offered_pass_after_pass() {
    let cg = layer();
    let (x, w) = data();
    let x2 = invoke1("_mul_scalar", &[&x], &[("scalar", (-3.0).into())]).unwrap();
    let pass = |x: &NDArray| {
        let loss = {
            let _rec = autograd::record();
            invoke1("sum", &[&cg.call(&[x, &w]).unwrap()[0]], &[]).unwrap()
        };
        loss.backward().unwrap();
    };
    let values = |a: &NDArray| a.to_vec::<f64>().unwrap();
    let near = |got: Vec<f64>, want: &[f64]| {
        assert_eq!(got.len(), want.len());
        for (g, e) in got.iter().zip(want) {
            assert!((g - e).abs() <= 1e-12 * (1.0 + e.abs()), "{got:?} vs {want:?}");
        }
    };
    let (g1, g2) = (eager_weight_grad(&x, &w), eager_weight_grad(&x2, &w));
    assert!(g1.iter().zip(&g2).any(|(a, b)| (a - b).abs() > 1e-3), "the two inputs must differ in gradient");

    let b1 = NDArray::zeros(&[3, 3], DType::F64, Default::default()).unwrap();
    autograd::mark_variables(&[&w], &[&b1], &[Req::Write]).unwrap();
    pass(&x);
    near(values(&b1), &g1);

    let b2 = NDArray::zeros(&[3, 3], DType::F64, Default::default()).unwrap();
    autograd::mark_variables(&[&w], &[&b2], &[Req::Write]).unwrap();
    pass(&x2);
    near(values(&b2), &g2);
    near(values(&b1), &g1);

    // a transposed view as the buffer: the gradient is copied into it
    let base = NDArray::zeros(&[3, 3], DType::F64, Default::default()).unwrap();
    let strided = base.transpose(None).unwrap();
    autograd::mark_variables(&[&w], &[&strided], &[Req::Write]).unwrap();
    pass(&x);
    near(values(&strided), &g1);
    near(values(&b2), &g2);

    // grad_req add: two passes accumulate; the earlier buffers stay
    let b3 = NDArray::zeros(&[3, 3], DType::F64, Default::default()).unwrap();
    autograd::mark_variables(&[&w], &[&b3], &[Req::Add]).unwrap();
    pass(&x);
    pass(&x2);
    let sum: Vec<f64> = g1.iter().zip(&g2).map(|(a, b)| a + b).collect();
    near(values(&b3), &sum);
    near(values(&b2), &g2);
    near(values(&strided), &g1);
}

/// Inside a cached graph, each gradient written straight into its
/// variable's buffer is announced by the graph step that completes it
/// (gradient-ready hooks), while the later steps still run: the second
/// layer's weight before the first layer's is written.
#[test]
fn gradient_ready_hooks_run_between_the_steps_of_a_cached_graph() {
    let x = Symbol::var("x");
    let fc = |input: Symbol, w: &str, name: &str| {
        Symbol::compose_op(
            "FullyConnected",
            &[input, Symbol::var(w)],
            &[],
            vec![("num_hidden".into(), "3".into()), ("no_bias".into(), "True".into())],
            Some(name),
            Default::default(),
        )
        .unwrap()
    };
    let h = Symbol::op("tanh", &[&fc(x, "w1", "fc1")], &[], Some("t")).unwrap();
    let cg = CachedGraph::new(&fc(h, "w2", "fc2")).unwrap();
    let (x, w1) = data();
    let w2 = invoke1("_mul_scalar", &[&w1], &[("scalar", (-0.5).into())]).unwrap();
    let (w1e, w2e) = (w1.copy().unwrap(), w2.copy().unwrap());
    for w in [&w1, &w2, &w1e, &w2e] {
        w.attach_grad(Req::Write).unwrap();
    }
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    for (name, w) in [("w1", &w1), ("w2", &w2)] {
        let (log, a, b) = (log.clone(), w1.clone(), w2.clone());
        let hook = std::sync::Arc::new(move || {
            log.lock().unwrap().push((
                name,
                a.grad().unwrap().copy().unwrap(),
                b.grad().unwrap().copy().unwrap(),
            ));
        });
        assert!(autograd::set_grad_ready_hook(w, Some(hook)));
    }
    let loss = {
        let _rec = autograd::record();
        invoke1("sum", &[&cg.call(&[&x, &w1, &w2]).unwrap()[0]], &[]).unwrap()
    };
    loss.backward().unwrap();
    let eager = {
        let _rec = autograd::record();
        let h1 = invoke1(
            "tanh",
            &[&invoke1("FullyConnected", &[&x, &w1e], &[("num_hidden", 3.into()), ("no_bias", true.into())])
                .unwrap()],
            &[],
        )
        .unwrap();
        let y =
            invoke1("FullyConnected", &[&h1, &w2e], &[("num_hidden", 3.into()), ("no_bias", true.into())])
                .unwrap();
        invoke1("sum", &[&y], &[]).unwrap()
    };
    eager.backward().unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.iter().map(|e| e.0).collect::<Vec<_>>(), ["w2", "w1"]);
    close(&log[0].2, &w2e.grad().unwrap(), 1e-12);
    assert!(log[0].1.to_vec::<f64>().unwrap().iter().all(|v| *v == 0.0), "w1's gradient was written early");
    close(&log[1].1, &w1e.grad().unwrap(), 1e-12);
    close(&w1.grad().unwrap(), &w1e.grad().unwrap(), 1e-12);
}
