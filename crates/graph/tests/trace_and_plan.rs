//! Tracing imperative code, backward graphs (differentiable again), and
//! the memory plan.

use oxnet_core::{autograd, invoke1, DType, Device, NDArray, Req};
use oxnet_graph::gradient::gradient;
use oxnet_graph::trace::trace;
use oxnet_graph::{infer, simple_bind, Executor, GradReqs, Symbol};
use std::collections::HashMap;

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn traced_code_becomes_the_same_graph_and_runs() {
    let traced = trace(&[("x", &[2, 3], DType::F64), ("w", &[4, 3], DType::F64)], |xs| {
        let h = invoke1(
            "FullyConnected",
            &[&xs[0], &xs[1]],
            &[("num_hidden", 4.into()), ("no_bias", true.into())],
        )?;
        let y = invoke1("tanh", &[&h], &[])?;
        // reading a traced array's values is an error, not a crash
        let err = y.to_vec::<f64>().unwrap_err().to_string();
        assert!(err.contains("traced array"), "{err}");
        Ok(vec![invoke1("sum", &[&y], &[("axis", 1.into())])?])
    })
    .unwrap();
    let sym = traced.symbol;
    assert_eq!(sym.list_arguments().unwrap(), ["x", "w"]);
    assert!(traced.constants.is_empty());
    let x = NDArray::from_vec(vec![0.1f64, -0.2, 0.3, 0.4, 0.5, -0.6], &[2, 3]).unwrap();
    let w = NDArray::from_vec((0..12).map(|i| (i as f64 - 6.0) / 10.0).collect::<Vec<_>>(), &[4, 3]).unwrap();
    let mut exe = Executor::new(
        &sym,
        Device::Cpu,
        vec![x.clone(), w.clone()],
        vec![None, None],
        vec![Req::Null; 2],
        vec![],
    )
    .unwrap();
    let got = exe.forward(false).unwrap()[0].to_vec::<f64>().unwrap();
    let h =
        invoke1("FullyConnected", &[&x, &w], &[("num_hidden", 4.into()), ("no_bias", true.into())]).unwrap();
    let want = invoke1("sum", &[&invoke1("tanh", &[&h], &[]).unwrap()], &[("axis", 1.into())]).unwrap();
    close(&got, &want.to_vec::<f64>().unwrap(), 1e-12);
}

#[test]
fn traced_arrays_cannot_reach_eager_kernels() {
    let traced = std::cell::RefCell::new(None);
    trace(&[("x", &[2], DType::F32)], |xs| {
        *traced.borrow_mut() = Some(xs[0].clone());
        Ok(vec![invoke1("relu", &[&xs[0]], &[])?])
    })
    .unwrap();
    let escaped = traced.into_inner().unwrap();
    let err = invoke1("relu", &[&escaped], &[]).unwrap_err().to_string();
    assert!(err.contains("traced array"), "{err}");
}

#[test]
fn a_captured_real_array_becomes_a_constant() {
    let c = NDArray::from_vec(vec![2.0f32, 3.0], &[2]).unwrap();
    let traced =
        trace(&[("x", &[2], DType::F32)], |xs| Ok(vec![invoke1("elemwise_mul", &[&xs[0], &c], &[])?]))
            .unwrap();
    assert_eq!(traced.constants.len(), 1);
    assert_eq!(traced.symbol.list_arguments().unwrap(), ["x", "_const0"]);
}

/// d/dx sum(tanh(x)) as a graph, then that graph differentiated again.
#[test]
fn a_backward_graph_can_itself_be_differentiated() {
    let x = Symbol::var("x");
    let y = Symbol::op("tanh", &[&x], &[], Some("t")).unwrap();
    let g = y.indexed().unwrap();
    let shapes = vec![vec![3], vec![3]];
    let types = vec![DType::F64; 2];
    let first = gradient(&g, &shapes, &types, &[0], Device::Cpu).unwrap();
    // first.symbol: gx = head_grad * (1 - tanh(x)^2), reading x and the head gradient
    let gsym = first.symbol.clone();
    let args = gsym.list_arguments().unwrap();
    assert!(args.contains(&"x".to_string()) && args.contains(&"_head_grad0".to_string()), "{args:?}");
    let xv = vec![0.3f64, -0.7, 1.1];
    let inputs: Vec<NDArray> = args
        .iter()
        .map(|a| {
            if a == "x" {
                NDArray::from_vec(xv.clone(), &[3]).unwrap()
            } else {
                NDArray::ones(&[3], DType::F64, Device::Cpu).unwrap()
            }
        })
        .collect();
    let grads: Vec<Option<NDArray>> =
        args.iter().map(|_| Some(NDArray::zeros(&[3], DType::F64, Device::Cpu).unwrap())).collect();
    let reqs: Vec<Req> = args.iter().map(|a| if a == "x" { Req::Write } else { Req::Null }).collect();
    let grads: Vec<Option<NDArray>> =
        grads.into_iter().zip(&reqs).map(|(g, r)| if *r == Req::Null { None } else { g }).collect();
    let mut exe = Executor::new(&gsym, Device::Cpu, inputs, grads, reqs, vec![]).unwrap();
    let first_grad = exe.forward(true).unwrap()[0].to_vec::<f64>().unwrap();
    close(&first_grad, &xv.iter().map(|v| 1.0 - v.tanh().powi(2)).collect::<Vec<_>>(), 1e-12);
    exe.backward(&[]).unwrap();
    let xi = args.iter().position(|a| a == "x").unwrap();
    let second = exe.grad_arrays()[xi].as_ref().unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = xv.iter().map(|v| -2.0 * v.tanh() * (1.0 - v.tanh().powi(2))).collect();
    close(&second, &want, 1e-10);
}

fn mlp() -> Symbol {
    let data = Symbol::var("data");
    let mut h = data;
    for (i, n) in [256usize, 256, 10].iter().enumerate() {
        h = Symbol::op("FullyConnected", &[&h], &[("num_hidden", (*n).into())], Some(&format!("fc{i}")))
            .unwrap();
        if i < 2 {
            h = Symbol::op("Activation", &[&h], &[("act_type", "relu".into())], Some(&format!("relu{i}")))
                .unwrap();
        }
    }
    Symbol::op("log_softmax", &[&h], &[], Some("out")).unwrap()
}

#[test]
fn the_memory_plan_of_an_mlp_takes_less_than_one_buffer_per_entry() {
    let shapes = HashMap::from([("data".to_string(), vec![64, 784])]);
    let exe = simple_bind(&mlp(), Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
    let plan = exe.memory_plan();
    assert!(plan.planned_bytes() < plan.naive_bytes, "{}", plan.summary());
    assert!(plan.summary().contains("bytes planned against"));
    // the ReLUs write over their FullyConnected outputs
    assert!(plan.in_place.iter().any(|x| *x), "{}", plan.summary());
    println!("{}", plan.summary());
    // every planned entry fits its block
    let total: usize = plan.block_bytes.iter().sum();
    assert_eq!(total, plan.planned_bytes());
}

#[test]
fn a_bound_gradient_is_written_into_its_array_and_a_zero_one_takes_no_planned_memory() {
    let data = Symbol::var("data");
    let mut y = data.clone();
    for _ in 0..3 {
        y = Symbol::op("elemwise_mul", &[&y, &y], &[], None).unwrap();
    }
    let stopped = Symbol::op("BlockGrad", &[&y], &[], None).unwrap();
    let shapes = HashMap::from([("data".to_string(), vec![4, 5])]);
    let planned = |sym: &Symbol, req: Req| {
        let exe = simple_bind(sym, Device::Cpu, &GradReqs::All(req), &HashMap::new(), &shapes).unwrap();
        exe.memory_plan().planned_bytes()
    };
    // the zero gradient of `data` is written into its bound array: the plan
    // is the forward pass's alone, as with no gradient at all
    assert_eq!(planned(&stopped, Req::Write), planned(&y, Req::Null));
    assert!(planned(&y, Req::Write) > planned(&stopped, Req::Write));

    // and the values are right: d(x^8)/dx = 8 x^7, zero through BlockGrad
    for (sym, scale) in [(&y, 8.0), (&stopped, 0.0)] {
        let mut exe =
            simple_bind(sym, Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
        let x: Vec<f32> = (0..20).map(|i| 0.5 + i as f32 * 0.03).collect();
        exe.arg_arrays()[0].assign_from(&NDArray::from_vec(x.clone(), &[4, 5]).unwrap()).unwrap();
        exe.grad_arrays()[0].as_ref().unwrap().fill(7.0).unwrap();
        exe.forward(true).unwrap();
        exe.backward(&[]).unwrap();
        let g = exe.grad_arrays()[0].as_ref().unwrap().to_vec::<f64>().unwrap();
        let want: Vec<f64> = x.iter().map(|&v| scale * (v as f64).powi(7)).collect();
        close(&g, &want, 1e-5);
    }
}

/// `mlp()` run imperatively on `args` (data, then weight and bias of each
/// layer) under autograd: attaches `write` gradients to every argument,
/// back-propagates from the output and returns it.
fn eager_mlp(args: &[NDArray]) -> NDArray {
    for a in args {
        a.attach_grad(Req::Write).unwrap();
    }
    let y = {
        let _rec = autograd::record();
        let mut h = args[0].clone();
        for i in 0..3 {
            let n: usize = [256, 256, 10][i];
            h = invoke1(
                "FullyConnected",
                &[&h, &args[1 + 2 * i], &args[2 + 2 * i]],
                &[("num_hidden", n.into())],
            )
            .unwrap();
            if i < 2 {
                h = invoke1("Activation", &[&h], &[("act_type", "relu".into())]).unwrap();
            }
        }
        invoke1("log_softmax", &[&h], &[]).unwrap()
    };
    y.backward().unwrap();
    y
}

#[test]
fn planned_execution_matches_imperative_autograd_on_an_mlp() {
    let sym = mlp();
    let shapes = HashMap::from([("data".to_string(), vec![8, 784])]);
    let g = sym.indexed().unwrap();
    let inferred = infer::infer_shapes(&g, &shapes).unwrap();
    let mut exe =
        simple_bind(&sym, Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
    let args: Vec<NDArray> = exe
        .arg_arrays()
        .iter()
        .map(|a| NDArray::random_uniform(-0.1, 0.1, a.shape(), DType::F32).unwrap())
        .collect();
    for (dst, src) in exe.arg_arrays().iter().zip(&args) {
        dst.assign_from(src).unwrap();
    }
    assert!(inferred.iter().all(|s| s.is_some()));
    let out = exe.forward(true).unwrap()[0].clone();
    exe.backward(&[]).unwrap();
    let y = eager_mlp(&args);
    close(&out.to_vec::<f64>().unwrap(), &y.to_vec::<f64>().unwrap(), 1e-5);
    for (i, a) in args.iter().enumerate() {
        close(
            &exe.grad_arrays()[i].as_ref().unwrap().to_vec::<f64>().unwrap(),
            &a.grad().unwrap().to_vec::<f64>().unwrap(),
            1e-4,
        );
    }
}

/// Bound `write` gradient arrays are written by the backward steps
/// themselves where they can be; arrays that cannot (a strided view, one
/// sharing memory with an argument) get the same values by copying.
#[test]
fn bound_gradient_arrays_of_every_layout_get_the_gradients() {
    let sym = mlp();
    let shapes = HashMap::from([("data".to_string(), vec![4, 784])]);
    let reference =
        simple_bind(&sym, Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
    let args: Vec<NDArray> = reference
        .arg_arrays()
        .iter()
        .map(|a| NDArray::random_uniform(-0.1, 0.1, a.shape(), DType::F64).unwrap())
        .collect();
    let zeros = |a: &NDArray| NDArray::zeros(a.shape(), DType::F64, Device::Cpu).unwrap();
    eager_mlp(&args);
    // fc3_weight (10, 256) gets a transposed view of a (256, 10) array; the
    // data gradient shares its storage with a copy of the data itself
    let bound_args: Vec<NDArray> = args.iter().map(|a| a.copy().unwrap()).collect();
    let mut grads: Vec<Option<NDArray>> = args.iter().map(|a| Some(zeros(a))).collect();
    let base = NDArray::zeros(&[256, 10], DType::F64, Device::Cpu).unwrap();
    grads[5] = Some(base.transpose(None).unwrap());
    grads[0] = Some(bound_args[0].clone());
    let data_values = bound_args[0].copy().unwrap();
    let mut exe = Executor::new(
        &sym,
        Device::Cpu,
        bound_args.clone(),
        grads.clone(),
        vec![Req::Write; args.len()],
        vec![],
    )
    .unwrap();
    for round in 0..2 {
        // the data gradient overwrote the data: put it back
        bound_args[0].assign_from(&data_values).unwrap();
        exe.forward(true).unwrap();
        exe.backward(&[]).unwrap();
        for (i, a) in args.iter().enumerate() {
            close(
                &grads[i].as_ref().unwrap().to_vec::<f64>().unwrap(),
                &a.grad().unwrap().to_vec::<f64>().unwrap(),
                1e-9,
            );
            let shown = exe.grad_arrays()[i].as_ref().unwrap();
            assert!(shown.same_handle(grads[i].as_ref().unwrap()), "round {round}: gradient array {i}");
        }
    }
}

#[test]
fn backward_runs_after_a_forward_in_either_mode_and_forwards_first_without_one() {
    // y = sum(x * w) over a Dropout that is inactive in predict mode
    let x = Symbol::var("x");
    let w = Symbol::var("w");
    let prod = Symbol::op("elemwise_mul", &[&x, &w], &[], Some("prod")).unwrap();
    let dropped = Symbol::op("Dropout", &[&prod], &[("p", 0.5.into())], Some("drop")).unwrap();
    let shapes = HashMap::from([("x".to_string(), vec![3]), ("w".to_string(), vec![3])]);
    let mut exe =
        simple_bind(&dropped, Device::Cpu, &GradReqs::All(Req::Write), &HashMap::new(), &shapes).unwrap();
    exe.arg_arrays()[0].assign_from(&NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap()).unwrap();
    exe.arg_arrays()[1].assign_from(&NDArray::from_vec(vec![4.0f32, 5.0, 6.0], &[3]).unwrap()).unwrap();
    // no forward yet: a train-mode one runs first, so Dropout is active
    // (each gradient of x is w / (1 - p) or 0)
    exe.backward(&[]).unwrap();
    let gx = exe.grad_arrays()[0].as_ref().unwrap().to_vec::<f32>().unwrap();
    for (g, w) in gx.iter().zip([4.0f32, 5.0, 6.0]) {
        assert!(*g == 0.0 || *g == 2.0 * w, "{gx:?}");
    }
    assert_eq!(exe.forward(false).unwrap()[0].to_vec::<f32>().unwrap(), vec![4.0, 10.0, 18.0]);
    exe.backward(&[]).unwrap();
    // predict mode: the mask is all ones, so the gradient of x is w
    assert_eq!(exe.grad_arrays()[0].as_ref().unwrap().to_vec::<f32>().unwrap(), vec![4.0, 5.0, 6.0]);
    assert_eq!(exe.grad_arrays()[1].as_ref().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
}

#[test]
fn in_place_pairs_past_a_nodes_outputs_are_ignored() {
    // preloaded_multi_sgd_update declares (input 2i, output i) for 64 weights; with
    // num_weights = 1 the pair (2, 1) names its `lrs` input and an output it lacks
    let names = ["w", "g", "lrs", "wds"];
    let vars: Vec<Symbol> = names.iter().map(|n| Symbol::var(n)).collect();
    let refs: Vec<&Symbol> = vars.iter().collect();
    let sym = Symbol::op("preloaded_multi_sgd_update", &refs, &[("num_weights", 1.into())], None).unwrap();
    let shapes = HashMap::from([("w".to_string(), vec![1]), ("g".to_string(), vec![1])]);
    let mut exe =
        simple_bind(&sym, Device::Cpu, &GradReqs::All(Req::Null), &HashMap::new(), &shapes).unwrap();
    for (a, v) in exe.arg_arrays().iter().zip([1.0, 2.0, 0.5, 0.0]) {
        a.fill(v).unwrap();
    }
    exe.forward(false).unwrap();
    assert_eq!(exe.outputs()[0].to_vec::<f64>().unwrap(), vec![0.0]);
}
