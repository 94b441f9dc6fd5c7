//! Tests of `BatchNorm`: values MXNet 1.9.1 computed, the moving statistics
//! over two training steps, inference mode, gradients by central
//! differences, errors.

use oxnet_core::check::{compare, OpChecker};
use oxnet_core::{autograd, invoke, invoke1, AttrValue, DType, Device, NDArray, Req};

fn arr(v: Vec<f32>, shape: &[usize]) -> NDArray {
    NDArray::from_vec(v, shape).unwrap()
}

fn close(got: &NDArray, want: &[f64], tol: f64) {
    compare("BatchNorm", "values", &got.to_vec::<f64>().unwrap(), want, tol, tol).unwrap();
}

/// MXNet's sample: x = arange(24).reshape(2, 3, 2, 2) ** 1.5 / 10.
fn sample() -> NDArray {
    arr((0..24).map(|i| (i as f32).powf(1.5) / 10.0).collect(), &[2, 3, 2, 2])
}

struct Params {
    gamma: NDArray,
    beta: NDArray,
    mean: NDArray,
    var: NDArray,
}

fn params() -> Params {
    Params {
        gamma: arr(vec![1., 2., 3.], &[3]),
        beta: arr(vec![0.1, 0.2, 0.3], &[3]),
        mean: NDArray::zeros(&[3], DType::F32, Device::Cpu).unwrap(),
        var: NDArray::ones(&[3], DType::F32, Device::Cpu).unwrap(),
    }
}

/// One recorded train-mode step with head gradient `head` (ones if None).
fn train_step(x: &NDArray, p: &Params, head: Option<&NDArray>) -> NDArray {
    let attrs = [("fix_gamma", AttrValue::from(false))];
    let y = {
        let _r = autograd::record();
        let _t = autograd::train_mode();
        invoke1("BatchNorm", &[x, &p.gamma, &p.beta, &p.mean, &p.var], &attrs).unwrap()
    };
    let ones = NDArray::ones(y.shape(), DType::F32, Device::Cpu).unwrap();
    autograd::backward(&[&y], &[Some(head.unwrap_or(&ones))], Default::default()).unwrap();
    y
}

#[test]
fn train_step_values_gradients_and_moving_stats_match_mxnet() {
    let x = sample();
    let p = params();
    for a in [&x, &p.gamma, &p.beta] {
        a.attach_grad(Req::Write).unwrap();
    }
    let head = arr((0..24).map(|i| (i % 5) as f32).collect(), &[2, 3, 2, 2]);
    let y = train_step(&x, &p, Some(&head));
    #[rustfmt::skip]
    let want_y = [
        -0.97517, -0.9338062, -0.85817546, -0.7602372, -2.0980096, -1.8904397, -1.6609236, -1.4113886,
        -3.2188382, -2.8523686, -2.4649298, -2.057601, 0.7442928, 0.96364313, 1.1916008, 1.4278523,
        1.556916, 1.9545716, 2.3641016, 2.785172, 2.3810089, 2.9501994, 3.5331082, 4.129421,
    ];
    close(&y, &want_y, 1e-5);
    #[rustfmt::skip]
    let want_dx = [
        -0.62463856, -0.21680678, 0.18621455, 0.58610433, 1.571676, -1.070412, -0.45249656, 0.16238804,
        0.8461537, 1.7052454, -1.6250042, -0.76357293, -0.03874172, 0.3441041, 0.7257417, -0.96197754,
        -0.9396914, -0.3472329, 0.24342774, 0.8323412, -1.3475353, -0.47683603, 0.3946486, 1.2669008,
    ];
    close(&x.grad().unwrap(), &want_dx, 1e-4);
    close(&p.gamma.grad().unwrap(), &[2.715049, 3.7116566, -1.6396371], 1e-4);
    close(&p.beta.grad().unwrap(), &[15., 17., 14.], 1e-5);
    // the backward pass moved the statistics (biased batch variance)
    close(&p.mean, &[0.25992996, 0.4320963, 0.6461291], 1e-5);
    close(&p.var, &[1.4843646, 1.8389292, 2.1811745], 1e-5);
    // a second step on 2x
    let x2 = invoke1("_mul_scalar", &[&x], &[("scalar", 2.0.into())]).unwrap();
    train_step(&x2, &p, None);
    close(&p.mean, &[0.7537969, 1.2530793, 1.8737743], 1e-5);
    close(&p.var, &[3.6733866, 5.410753, 7.0877547], 1e-4);
    // inference: the moving statistics, the inverse std as third output
    let outs = invoke(
        "BatchNorm",
        &[&x, &p.gamma, &p.beta, &p.mean, &p.var],
        &[("fix_gamma", false.into()), ("output_mean_var", true.into())],
    )
    .unwrap();
    assert_eq!(outs.len(), 3);
    close(&outs[1], &[0.7537969, 1.2530793, 1.8737743], 1e-6);
    close(&outs[2], &[0.52168405, 0.42986396, 0.37559086], 1e-6);
    let y0: Vec<f64> = outs[0].to_vec::<f64>().unwrap()[..4].to_vec();
    compare("BatchNorm", "inference", &y0, &[-0.29324383, -0.2410754, -0.14568928, -0.02216883], 1e-5, 1e-5)
        .unwrap();
    // and a forward pass alone, even in train mode, leaves them unchanged
    let before = p.mean.to_vec::<f32>().unwrap();
    {
        let _t = autograd::train_mode();
        invoke1("BatchNorm", &[&x, &p.gamma, &p.beta, &p.mean, &p.var], &[]).unwrap();
    }
    assert_eq!(p.mean.to_vec::<f32>().unwrap(), before);
}

#[test]
fn batch_statistics_outputs_match_mxnet() {
    let x = arr((0..24).map(|i| i as f32).collect(), &[2, 3, 2, 2]);
    let p = params();
    let outs = {
        let _t = autograd::train_mode();
        invoke(
            "BatchNorm",
            &[&x, &p.gamma, &p.beta, &p.mean, &p.var],
            &[("fix_gamma", false.into()), ("output_mean_var", true.into())],
        )
        .unwrap()
    };
    close(&outs[1], &[7.5, 11.5, 15.5], 1e-6);
    close(&outs[2], &[0.16384418; 3], 1e-6);
    let y = outs[0].to_vec::<f64>().unwrap();
    compare("BatchNorm", "y", &y[..4], &[-1.1288314, -0.96498716, -0.801143, -0.6372988], 1e-5, 1e-5)
        .unwrap();
    compare("BatchNorm", "y", &y[4..6], &[-2.2576628, -1.9299743], 1e-5, 1e-5).unwrap();
}

#[test]
fn other_axes_match_a_direct_reference() {
    let x = NDArray::random_uniform(-2.0, 2.0, &[3, 4, 5], DType::F64).unwrap();
    let xv = x.to_vec::<f64>().unwrap();
    for axis in [-1i64, 0, 2] {
        let a = axis.rem_euclid(3) as usize;
        let c = x.shape()[a];
        let gamma = NDArray::random_uniform(0.5, 1.5, &[c], DType::F64).unwrap();
        let beta = NDArray::random_uniform(-1.0, 1.0, &[c], DType::F64).unwrap();
        let mm = NDArray::zeros(&[c], DType::F64, Device::Cpu).unwrap();
        let mv = NDArray::ones(&[c], DType::F64, Device::Cpu).unwrap();
        x.attach_grad(Req::Write).unwrap();
        let y = {
            let _r = autograd::record();
            let _t = autograd::train_mode();
            invoke1(
                "BatchNorm",
                &[&x, &gamma, &beta, &mm, &mv],
                &[("axis", axis.into()), ("fix_gamma", false.into())],
            )
            .unwrap()
        };
        // the backward pass moves the statistics
        let ones = NDArray::ones(y.shape(), DType::F64, Device::Cpu).unwrap();
        autograd::backward(&[&y], &[Some(&ones)], Default::default()).unwrap();
        let (g, b) = (gamma.to_vec::<f64>().unwrap(), beta.to_vec::<f64>().unwrap());
        let strides = [20, 5, 1];
        let ch = |i: usize| (i / strides[a]) % c;
        // MXNet's default eps is the float 1e-3 and its momentum a float
        // (0.9 -> 0.89999997615814209), which float64 data see
        let (eps, momentum) = (f64::from(1e-3f32), f64::from(0.9f32));
        let mut want = vec![0.0; 60];
        let mut moved = vec![0.0; c];
        for k in 0..c {
            let vals: Vec<f64> = (0..60).filter(|&i| ch(i) == k).map(|i| xv[i]).collect();
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / vals.len() as f64;
            for i in (0..60).filter(|&i| ch(i) == k) {
                want[i] = g[k] * (xv[i] - mean) / (var + eps).sqrt() + b[k];
            }
            moved[k] = mean * (1.0 - momentum);
        }
        close(&y, &want, 1e-12);
        close(&mm, &moved, 1e-15);
    }
}

#[test]
fn gradients_match_central_differences() {
    let x = NDArray::random_uniform(-1.0, 1.0, &[3, 2, 2, 3], DType::F64).unwrap();
    let gamma = NDArray::random_uniform(0.5, 1.5, &[2], DType::F64).unwrap();
    let beta = NDArray::random_uniform(-1.0, 1.0, &[2], DType::F64).unwrap();
    let mm = NDArray::random_uniform(-0.5, 0.5, &[2], DType::F64).unwrap();
    let mv = NDArray::random_uniform(0.5, 1.5, &[2], DType::F64).unwrap();
    for (fix_gamma, global) in [(false, false), (true, false), (false, true)] {
        OpChecker::new("BatchNorm", &[x.clone(), gamma.clone(), beta.clone(), mm.clone(), mv.clone()])
            .attr("fix_gamma", fix_gamma)
            .attr("use_global_stats", global)
            .no_grad(&[3, 4])
            .run()
            .unwrap();
    }
    let c3 = |lo: f64, hi: f64| NDArray::random_uniform(lo, hi, &[3], DType::F64).unwrap();
    let xt = x.transpose(None).unwrap().copy().unwrap();
    OpChecker::new("BatchNorm", &[xt, c3(0.5, 1.5), c3(-1.0, 1.0), c3(-0.5, 0.5), c3(0.5, 1.5)])
        .attr("fix_gamma", false)
        .attr("axis", 3)
        .attr("eps", 1e-5)
        .no_grad(&[3, 4])
        .run()
        .unwrap();
}

#[test]
fn errors_and_names() {
    let x = NDArray::zeros(&[2, 3, 4], DType::F32, Device::Cpu).unwrap();
    let c3 = NDArray::ones(&[3], DType::F32, Device::Cpu).unwrap();
    let c4 = NDArray::ones(&[4], DType::F32, Device::Cpu).unwrap();
    let e = invoke1("BatchNorm", &[&x, &c4, &c3, &c3, &c3], &[]).unwrap_err().to_string();
    assert!(e.contains("gamma") && e.contains("(4,)") && e.contains("(3,)"), "{e}");
    let e = invoke1("BatchNorm", &[&x, &c3, &c3, &c3, &c3], &[("axis", 3.into())]).unwrap_err().to_string();
    assert!(e.contains("axis") && e.contains("(2, 3, 4)"), "{e}");
    let e = invoke1("BatchNorm", &[&x, &c3, &c3, &c3], &[]).unwrap_err().to_string();
    assert!(e.contains("moving_var"), "{e}");
    let e =
        invoke1("BatchNorm", &[&x, &c3, &c3, &c3, &c3], &[("momentum", 2.0.into())]).unwrap_err().to_string();
    assert!(e.contains("momentum"), "{e}");
    let op = oxnet_core::registry::get("BatchNorm").unwrap();
    let attrs = op.parse_attrs(&[]).unwrap();
    assert_eq!((op.outputs)(&attrs).unwrap(), vec!["output".to_string()]);
    assert_eq!((op.aux_states)(&attrs).unwrap(), vec!["moving_mean".to_string(), "moving_var".to_string()]);
}

#[test]
fn v1_and_sync_forms_output_the_variance() {
    let x = arr((0..24).map(|i| i as f32).collect(), &[2, 3, 2, 2]);
    let p = params();
    let ins = [&x, &p.gamma, &p.beta, &p.mean, &p.var];
    let _t = autograd::train_mode();
    for (op, extra) in
        [("BatchNorm_v1", None), ("_contrib_SyncBatchNorm", Some(("key", AttrValue::from("bn0"))))]
    {
        let mut attrs: Vec<(&str, AttrValue)> = vec![("output_mean_var", true.into())];
        attrs.extend(extra);
        let outs = invoke(op, &ins, &attrs).unwrap();
        close(&outs[1], &[7.5, 11.5, 15.5], 1e-6);
        close(&outs[2], &[37.25; 3], 1e-5);
        let y = outs[0].to_vec::<f64>().unwrap();
        compare(op, "y", &y[..2], &[-1.1288314, -0.96498716], 1e-5, 1e-5).unwrap();
    }
    let e = invoke("_contrib_SyncBatchNorm", &ins, &[]).unwrap_err().to_string();
    assert!(e.contains("key"), "{e}");
    let e = invoke("BatchNorm_v1", &ins, &[("axis", 0.into())]).unwrap_err().to_string();
    assert!(e.contains("axis"), "{e}");
}

#[test]
fn half_data_takes_float32_parameters_as_in_mxnet() {
    let x = sample().astype(DType::F16).unwrap();
    let p = params();
    let y = {
        let _t = autograd::train_mode();
        invoke1("BatchNorm", &[&x, &p.gamma, &p.beta, &p.mean, &p.var], &[("fix_gamma", false.into())])
            .unwrap()
    };
    assert_eq!(y.dtype(), DType::F16);
    let want = [-0.97517, -0.9338062, -0.85817546, -0.7602372];
    compare("BatchNorm", "f16", &y.to_vec::<f64>().unwrap()[..4], &want, 5e-3, 5e-3).unwrap();
    let half = |a: &NDArray| a.astype(DType::F16).unwrap();
    let e =
        invoke1("BatchNorm", &[&x, &half(&p.gamma), &p.beta, &p.mean, &p.var], &[]).unwrap_err().to_string();
    assert!(e.contains("gamma") && e.contains("float32"), "{e}");
}
