//! The convolution, pooling and batch-normalization layers: values against
//! direct references, the transposed convolution as the adjoint of the
//! convolution, MXNet's parameter names, BatchNorm's running statistics,
//! hybridized against imperative, and a small CNN that learns.

use oxnet_core::{autograd, random, DType, NDArray};
use oxnet_nn::block::Block;
use oxnet_nn::init::{Uniform, Xavier};
use oxnet_nn::layers::{Activation, BatchNorm, Conv, Dense, Flatten, Pool, PoolType, Sequential};
use oxnet_nn::loss::{Loss, SoftmaxCrossEntropyLoss};
use oxnet_nn::parameter::shared_init;
use oxnet_nn::trainer::Trainer;

fn values(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "[{i}]: {g} vs {w}");
    }
}

/// Direct 2-D convolution (NCHW, OIHW weight, groups), by loops.
#[allow(clippy::too_many_arguments)]
fn conv2d_reference(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    b: &[f64],
    stride: [usize; 2],
    pad: usize,
    groups: usize,
) -> (Vec<f64>, [usize; 4]) {
    let [n, c, h, wd] = xs;
    let [f, cg, kh, kw] = ws;
    let oh = (h + 2 * pad - kh) / stride[0] + 1;
    let ow = (wd + 2 * pad - kw) / stride[1] + 1;
    let fg = f / groups;
    let mut y = vec![0.0; n * f * oh * ow];
    for ni in 0..n {
        for fi in 0..f {
            let g = fi / fg;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = b[fi];
                    for ci in 0..cg {
                        let cin = g * cg + ci;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * stride[0] + ky) as i64 - pad as i64;
                                let ix = (ox * stride[1] + kx) as i64 - pad as i64;
                                if iy < 0 || ix < 0 || iy >= h as i64 || ix >= wd as i64 {
                                    continue;
                                }
                                let xv = x[((ni * c + cin) * h + iy as usize) * wd + ix as usize];
                                acc += xv * w[((fi * cg + ci) * kh + ky) * kw + kx];
                            }
                        }
                    }
                    y[((ni * f + fi) * oh + oy) * ow + ox] = acc;
                }
            }
        }
    }
    (y, [n, f, oh, ow])
}

#[test]
fn conv2d_matches_a_direct_convolution_with_strides_padding_and_groups() {
    random::seed(5);
    let conv = Conv::conv2d(4, [3, 2]).strides(&[2, 1]).unwrap().padding(&[1, 1]).unwrap().groups(2).unwrap();
    conv.initialize(&shared_init(Uniform::new(1.0))).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[2, 6, 5, 4], DType::F32).unwrap();
    conv.call(&x).unwrap();
    conv.bias().unwrap().set_data(&NDArray::from_vec(vec![0.1f32, -0.2, 0.3, 0.0], &[4]).unwrap()).unwrap();
    let y = conv.call(&x).unwrap();
    // weight (4, 6/2, 3, 2) inferred from the input
    assert_eq!(conv.weight().shape(), vec![4, 3, 3, 2]);
    assert_eq!(conv.weight().name(), format!("{}weight", conv.prefix()));
    assert!(conv.prefix().starts_with("conv"));
    let w = values(&conv.weight().data().unwrap());
    let b = values(&conv.bias().unwrap().data().unwrap());
    let (want, shape) = conv2d_reference(&values(&x), [2, 6, 5, 4], &w, [4, 3, 3, 2], &b, [2, 1], 1, 2);
    assert_eq!(y.shape(), &shape);
    close(&values(&y), &want, 1e-5);
}

#[test]
fn the_transposed_convolution_is_the_adjoint_of_the_convolution() {
    // <conv(x), y> == <x, conv_transpose(y)> for the same weight, no bias
    random::seed(6);
    let conv = Conv::conv2d(3, [3, 3]).strides(&[2, 2]).unwrap().padding(&[1, 1]).unwrap().use_bias(false);
    conv.initialize(&shared_init(Uniform::new(1.0))).unwrap();
    let x = NDArray::random_uniform(-1.0, 1.0, &[1, 2, 7, 7], DType::F64).unwrap();
    let cx = conv.call(&x.astype(DType::F32).unwrap()).unwrap();
    assert_eq!(cx.shape(), &[1, 3, 4, 4]);
    let deconv = Conv::conv2d_transpose(2, [3, 3])
        .strides(&[2, 2])
        .unwrap()
        .padding(&[1, 1])
        .unwrap()
        .use_bias(false)
        .in_channels(3)
        .unwrap();
    deconv.initialize(&shared_init(Uniform::new(1.0))).unwrap();
    deconv.weight().set_data(&conv.weight().data().unwrap()).unwrap();
    let y = NDArray::random_uniform(-1.0, 1.0, &[1, 3, 4, 4], DType::F32).unwrap();
    let ty = deconv.call(&y).unwrap();
    assert_eq!(ty.shape(), &[1, 2, 7, 7]);
    let lhs: f64 = values(&cx).iter().zip(values(&y)).map(|(a, b)| a * b).sum();
    let rhs: f64 = values(&x).iter().zip(values(&ty)).map(|(a, b)| a * b).sum();
    assert!((lhs - rhs).abs() < 1e-4 * (1.0 + lhs.abs()), "{lhs} vs {rhs}");
}

#[test]
fn pools_reduce_windows_and_whole_axes() {
    let x = NDArray::from_vec((0..18).map(|v| v as f32).collect(), &[1, 2, 9]).unwrap();
    let max = Pool::new(PoolType::Max, &[3]).unwrap();
    assert_eq!(values(&max.call(&x).unwrap()), vec![2.0, 5.0, 8.0, 11.0, 14.0, 17.0]);
    // average of windows of 2 with stride 2, padding 1, padded zeros counted
    let avg = Pool::with_options(PoolType::Avg, &[2], &[2], &[1], false, true).unwrap();
    let y = values(&avg.call(&x).unwrap());
    assert_eq!(y[..5], [0.0, 1.5, 3.5, 5.5, 7.5]);
    // rounding the output size up (ceil_mode) adds a window
    let ceil = Pool::with_options(PoolType::Max, &[2], &[2], &[0], true, true).unwrap();
    assert_eq!(ceil.call(&x).unwrap().shape(), &[1, 2, 5]);
    let global = Pool::global(PoolType::Avg, 1).unwrap();
    assert_eq!(values(&global.call(&x).unwrap()), vec![4.0, 13.0]);
    // a window larger than the input is an error naming the layer
    let big = Pool::new(PoolType::Max, &[3, 3]).unwrap();
    let err = big.call(&NDArray::zeros(&[1, 1, 2, 2], DType::F32, Default::default()).unwrap()).unwrap_err();
    assert!(err.to_string().contains("MaxPool2D"), "{err}");
}

#[test]
fn batch_norm_moves_its_running_statistics_in_train_mode_only() {
    let bn = BatchNorm::new().momentum(0.5);
    bn.initialize(&shared_init(Xavier::default())).unwrap();
    let names: Vec<String> = bn.collect_params().unwrap().iter().map(|p| p.name().to_string()).collect();
    let p = bn.prefix().to_string();
    assert_eq!(
        names,
        [format!("{p}gamma"), format!("{p}beta"), format!("{p}running_mean"), format!("{p}running_var")]
    );
    // channel 0: 1, 3, 5, 7 (mean 4, variance 5); channel 1: all 2
    let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 2.0, 5.0, 2.0, 7.0, 2.0], &[4, 2]).unwrap();
    let y = {
        let _r = autograd::record();
        bn.call(&x).unwrap()
    };
    y.backward().unwrap();
    let want0: Vec<f64> = [1.0, 3.0, 5.0, 7.0].iter().map(|v| (v - 4.0) / (5.0f64 + 1e-5).sqrt()).collect();
    let got = values(&y);
    close(&[got[0], got[2], got[4], got[6]], &want0, 1e-5);
    // running = 0.5 * old + 0.5 * batch (MXNet keeps the biased variance)
    close(&values(&bn.running_mean().data().unwrap()), &[2.0, 1.0], 1e-6);
    close(&values(&bn.running_var().data().unwrap()), &[3.0, 0.5], 1e-6);
    // predict mode normalizes with the running statistics and moves nothing
    let z = values(&bn.call(&x).unwrap());
    close(&[z[0], z[1]], &[(1.0 - 2.0) / (3.0f64 + 1e-5).sqrt(), (2.0 - 1.0) / (0.5f64 + 1e-5).sqrt()], 1e-5);
    close(&values(&bn.running_mean().data().unwrap()), &[2.0, 1.0], 1e-6);
}

fn small_cnn() -> Sequential {
    let mut net = Sequential::new();
    net.name_scope(|net| {
        net.add(Conv::conv2d(6, [3, 3]).padding(&[1, 1]).unwrap());
        net.add(BatchNorm::new());
        net.add(Activation::new("relu").unwrap());
        net.add(Pool::new(PoolType::Max, &[2, 2]).unwrap());
        net.add(Flatten::new().unwrap());
        net.add(Dense::new(3));
    });
    net
}

#[test]
fn a_hybridized_cnn_matches_the_imperative_one_and_learns() {
    random::seed(9);
    let x = NDArray::random_uniform(-1.0, 1.0, &[6, 2, 6, 6], DType::F32).unwrap();
    let labels = NDArray::from_vec(vec![0.0f32, 1.0, 2.0, 0.0, 1.0, 2.0], &[6]).unwrap();
    let imperative = small_cnn();
    imperative.initialize(&shared_init(Xavier::default())).unwrap();
    imperative.call(&x).unwrap();
    let hybrid = small_cnn().hybridize();
    hybrid.initialize(&shared_init(Xavier::default())).unwrap();
    hybrid.call(&x).unwrap();
    let (a, b) = (imperative.collect_params().unwrap(), hybrid.collect_params().unwrap());
    for (p, q) in a.iter().zip(b.iter()) {
        assert_eq!(p.name().split_once('_').unwrap().1, q.name().split_once('_').unwrap().1);
        q.set_data(&p.data().unwrap()).unwrap();
    }
    let loss_fn = SoftmaxCrossEntropyLoss::new();
    let mut trainers: Vec<Trainer> = [&a, &b]
        .iter()
        .map(|ps| {
            Trainer::from_name(ps.iter(), "sgd", &[("learning_rate", "0.2"), ("momentum", "0.9")]).unwrap()
        })
        .collect();
    let mut losses = [Vec::new(), Vec::new()];
    for _ in 0..15 {
        for (k, net) in [&imperative as &dyn Block, &hybrid].into_iter().enumerate() {
            let loss = {
                let _r = autograd::record();
                loss_fn.loss(&net.call(&x).unwrap(), &labels).unwrap()
            };
            loss.backward().unwrap();
            trainers[k].step(6).unwrap();
            losses[k].push(values(&loss).iter().sum::<f64>() / 6.0);
        }
    }
    close(&losses[1], &losses[0], 1e-3);
    assert!(losses[0][14] < 0.5 * losses[0][0], "{:?}", losses[0]);
    // the running statistics moved the same way in both
    let stat = |ps: &oxnet_nn::collection::ParameterCollection| {
        values(&ps.iter().find(|p| p.name().ends_with("running_mean")).unwrap().data().unwrap())
    };
    close(&stat(&b), &stat(&a), 1e-4);
}

#[test]
fn layer_group_and_instance_norms_normalize_and_learn_their_affine_parameters() {
    use oxnet_nn::layers::{GroupNorm, InstanceNorm, LayerNorm};
    random::seed(4);
    let x = NDArray::random_uniform(-2.0, 2.0, &[2, 4, 3], DType::F64).unwrap();
    let xs = values(&x);
    // the reference: normalize each run of `len` consecutive values starting every `len`
    let normalize = |runs: &[Vec<usize>]| -> Vec<f64> {
        let mut out = vec![0.0; xs.len()];
        for run in runs {
            let mean = run.iter().map(|&i| xs[i]).sum::<f64>() / run.len() as f64;
            let var = run.iter().map(|&i| (xs[i] - mean).powi(2)).sum::<f64>() / run.len() as f64;
            for &i in run {
                out[i] = (xs[i] - mean) / (var + 1e-5).sqrt();
            }
        }
        out
    };
    let chunks = |len: usize| -> Vec<Vec<usize>> {
        (0..xs.len() / len).map(|k| (k * len..(k + 1) * len).collect()).collect()
    };
    let ln = LayerNorm::new(-1, 1e-5).unwrap().dtype(DType::F64);
    let gn = GroupNorm::new(2, 1e-5).unwrap().dtype(DType::F64);
    let inorm = InstanceNorm::new(1e-5).unwrap().dtype(DType::F64);
    for (block, runs, param_len) in
        [(&ln as &dyn Block, chunks(3), 3), (&gn, chunks(6), 2), (&inorm, chunks(3), 4)]
    {
        block.initialize(&shared_init(Xavier::default())).unwrap();
        close(&values(&block.call(&x).unwrap()), &normalize(&runs), 1e-9);
        let params = block.collect_params().unwrap();
        assert_eq!(params.iter().map(|p| p.shape()).collect::<Vec<_>>(), vec![vec![param_len]; 2]);
        assert!(params.iter().next().unwrap().name().ends_with("_gamma"));
    }
    assert!(ln.prefix().starts_with("layernorm") && gn.prefix().starts_with("groupnorm"));
    // a beta kept at 0 (center false) takes no gradient; gamma learns
    let fixed = LayerNorm::new(-1, 1e-5).unwrap().center(false).unwrap().dtype(DType::F64);
    fixed.initialize(&shared_init(Xavier::default())).unwrap();
    fixed.call(&x).unwrap();
    let params = fixed.collect_params().unwrap();
    let mut trainer = Trainer::from_name(params.iter(), "sgd", &[("learning_rate", "0.5")]).unwrap();
    let y = {
        let _r = autograd::record();
        let y = fixed.call(&x).unwrap();
        oxnet_core::invoke1("sum", &[&oxnet_core::invoke1("square", &[&y], &[]).unwrap()], &[]).unwrap()
    };
    y.backward().unwrap();
    trainer.step(1).unwrap();
    assert_eq!(values(&fixed.beta().data().unwrap()), vec![0.0; 3]);
    assert!(values(&fixed.gamma().data().unwrap()).iter().all(|&g| g != 1.0));
    // the wrong channel count for the groups is an error naming the layer
    let err = GroupNorm::new(3, 1e-5).unwrap();
    err.initialize(&shared_init(Xavier::default())).unwrap();
    let e = err.call(&x).unwrap_err().to_string();
    assert!(e.contains("GroupNorm"), "{e}");
}
