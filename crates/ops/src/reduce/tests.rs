use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke, invoke1, registry, AttrValue, DType, Device, NDArray, Req};

fn arr(v: Vec<f64>, shape: &[usize]) -> NDArray {
    NDArray::from_vec(v, shape).unwrap()
}

fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// Distinct values (no ties) away from zero.
fn distinct(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            (if i % 3 == 1 { -1.0 } else { 1.0 }) * (0.5 + ((i as f64) * 0.618).fract() + i as f64 * 1e-3)
        })
        .collect()
}

/// Reference reduction with plain loops: groups the elements of a row-major
/// array by their position on the kept axes.
fn reference(data: &[f64], shape: &[usize], reduced: &[bool], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let out_len: usize = shape.iter().zip(reduced).filter(|(_, r)| !**r).map(|(d, _)| *d).product();
    let mut groups = vec![Vec::new(); out_len];
    for (lin, v) in data.iter().enumerate() {
        let mut idx = vec![0; shape.len()];
        let mut r = lin;
        for ax in (0..shape.len()).rev() {
            idx[ax] = r % shape[ax];
            r /= shape[ax];
        }
        let mut o = 0;
        for ax in 0..shape.len() {
            if !reduced[ax] {
                o = o * shape[ax] + idx[ax];
            }
        }
        groups[o].push(*v);
    }
    groups.iter().map(|g| f(g)).collect()
}

type F = fn(&[f64]) -> f64;

fn reducers() -> Vec<(&'static str, F)> {
    vec![
        ("sum", |g| g.iter().sum()),
        ("mean", |g| g.iter().sum::<f64>() / g.len() as f64),
        ("prod", |g| g.iter().product()),
        ("max", |g| g.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        ("min", |g| g.iter().cloned().fold(f64::INFINITY, f64::min)),
    ]
}

/// (shape, axis attribute, exclude, reduced mask)
fn cases() -> Vec<(Vec<usize>, AttrValue, bool, Vec<bool>)> {
    vec![
        (vec![2, 3, 4], AttrValue::None, false, vec![true, true, true]),
        (vec![2, 3, 4], AttrValue::Ints(vec![]), false, vec![true, true, true]),
        (vec![2, 3, 4], AttrValue::Int(1), false, vec![false, true, false]),
        (vec![2, 3, 4], AttrValue::Int(-1), false, vec![false, false, true]),
        (vec![2, 3, 4], AttrValue::Ints(vec![0, 2]), false, vec![true, false, true]),
        (vec![2, 3, 4], AttrValue::Ints(vec![0]), false, vec![true, false, false]),
        (vec![2, 3, 4], AttrValue::Ints(vec![1]), true, vec![true, false, true]),
        (vec![2, 3, 4], AttrValue::Ints(vec![0, -1]), true, vec![false, true, false]),
        (vec![3, 1, 2, 2], AttrValue::Ints(vec![1, 3]), false, vec![false, true, false, true]),
        (vec![5], AttrValue::Int(0), false, vec![true]),
        (vec![], AttrValue::None, false, vec![]),
    ]
}

fn out_shape(shape: &[usize], mask: &[bool], keepdims: bool) -> Vec<usize> {
    if keepdims {
        return shape.iter().zip(mask).map(|(d, m)| if *m { 1 } else { *d }).collect();
    }
    let s: Vec<usize> = shape.iter().zip(mask).filter(|(_, m)| !**m).map(|(d, _)| *d).collect();
    if s.is_empty() {
        vec![1]
    } else {
        s
    }
}

#[test]
fn forward_matches_loops() {
    for (name, f) in reducers() {
        for (shape, axis, exclude, mask) in cases() {
            let data = distinct(numel(&shape));
            let want = reference(&data, &shape, &mask, f);
            for keepdims in [false, true] {
                for dt in [DType::F64, DType::F32] {
                    let x = arr(data.clone(), &shape).astype(dt).unwrap();
                    let out = invoke1(
                        name,
                        &[&x],
                        &[("axis", axis.clone()), ("keepdims", keepdims.into()), ("exclude", exclude.into())],
                    )
                    .unwrap();
                    assert_eq!(
                        out.shape(),
                        out_shape(&shape, &mask, keepdims).as_slice(),
                        "{name} {shape:?} {axis:?}"
                    );
                    assert_eq!(out.dtype(), dt);
                    let got = out.to_vec::<f64>().unwrap();
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (g - w).abs() <= 1e-6 * (1.0 + w.abs()),
                            "{name} {shape:?} {axis:?}: {got:?} vs {want:?}"
                        );
                    }
                }
            }
        }
    }
    // MXNet names and a string-typed axis as from Python
    let x = arr(vec![1.0, 5.0, 3.0, 2.0], &[2, 2]);
    assert_eq!(
        invoke1("sum_axis", &[&x], &[("axis", "1".into())]).unwrap().to_vec::<f64>().unwrap(),
        vec![6.0, 5.0]
    );
    assert_eq!(
        invoke1("max_axis", &[&x], &[("axis", "(0,)".into())]).unwrap().to_vec::<f64>().unwrap(),
        vec![3.0, 5.0]
    );
    assert_eq!(
        invoke1("min_axis", &[&x], &[("axis", "-1".into())]).unwrap().to_vec::<f64>().unwrap(),
        vec![1.0, 2.0]
    );
    let all = invoke1("sum", &[&x], &[]).unwrap();
    assert_eq!(all.shape(), &[1]);
    assert_eq!(all.to_scalar().unwrap(), 11.0);
}

#[test]
fn gradients() {
    for (name, _) in reducers() {
        for (shape, axis, exclude, _) in cases() {
            for keepdims in [false, true] {
                let x = arr(distinct(numel(&shape)), &shape);
                OpChecker::new(name, &[x])
                    .attr("axis", axis.clone())
                    .attr("keepdims", keepdims)
                    .attr("exclude", exclude)
                    .run()
                    .unwrap_or_else(|e| panic!("{name} {shape:?} {axis:?} keepdims={keepdims}: {e}"));
            }
        }
    }
}

#[test]
fn max_ties_share_the_gradient() {
    let x = arr(vec![1.0, 3.0, 3.0, 2.0, 0.0, 2.0], &[2, 3]);
    x.attach_grad(Req::Write).unwrap();
    let y = {
        let _r = autograd::record();
        invoke1("max", &[&x], &[("axis", 1.into())]).unwrap()
    };
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![3.0, 2.0]);
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![0.0, 1.0, 1.0, 1.0, 0.0, 1.0]);
}

#[test]
fn integer_reductions() {
    let x = NDArray::from_vec(vec![3i32, -7, 2, 9, 4, -1], &[2, 3]).unwrap();
    let run = |name: &str, axis: i64| invoke1(name, &[&x], &[("axis", axis.into())]).unwrap();
    let s = run("sum", 1);
    assert_eq!(s.dtype(), DType::I32);
    assert_eq!(s.to_vec::<i32>().unwrap(), vec![-2, 12]);
    assert_eq!(run("sum", 0).to_vec::<i32>().unwrap(), vec![12, -3, 1]);
    assert_eq!(run("prod", 1).to_vec::<i32>().unwrap(), vec![-42, -36]);
    assert_eq!(run("max", 1).to_vec::<i32>().unwrap(), vec![3, 9]);
    assert_eq!(run("min", 0).to_vec::<i32>().unwrap(), vec![3, -7, -1]);
    assert_eq!(run("mean", 1).to_vec::<i32>().unwrap(), vec![0, 4]);
    let u = NDArray::from_vec(vec![200u8, 100, 7], &[3]).unwrap();
    assert_eq!(invoke1("sum", &[&u], &[]).unwrap().to_vec::<u8>().unwrap(), vec![51]); // wraps like uint8
    let l = NDArray::from_vec(vec![(1i64 << 60) + 1, 1], &[2]).unwrap();
    // (read back exactly: to_vec converts through f64)
    assert_eq!(invoke1("sum", &[&l], &[]).unwrap().as_slice::<i64>().unwrap(), &[(1i64 << 60) + 2]);
    assert_eq!(invoke1("max", &[&l], &[]).unwrap().as_slice::<i64>().unwrap(), &[(1i64 << 60) + 1]);
}

#[test]
fn empty_and_bad_inputs() {
    let e = NDArray::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    let s = invoke1("sum", &[&e], &[("axis", 0.into())]).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert_eq!(invoke1("prod", &[&e], &[("axis", 0.into())]).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 3]);
    assert_eq!(invoke1("sum", &[&e], &[]).unwrap().to_vec::<f32>().unwrap(), vec![0.0]);
    assert_eq!(invoke1("sum", &[&e], &[("axis", 1.into())]).unwrap().shape(), &[0]);
    assert!(invoke1("mean", &[&e], &[]).unwrap().to_scalar().unwrap().is_nan());
    let err = invoke("max", &[&e], &[("axis", 0.into())]).unwrap_err().to_string();
    assert!(err.contains("empty"), "{err}");
    assert!(invoke("min", &[&e], &[]).is_err());
    assert!(invoke("argmax", &[&e], &[("axis", 0.into())]).is_err());
    // max over a non-empty axis of an array with an empty kept axis is fine
    assert_eq!(invoke1("max", &[&e], &[("axis", 1.into())]).unwrap().shape(), &[0]);

    let x = arr(vec![1.0; 6], &[2, 3]);
    let err = invoke("sum", &[&x], &[("axis", 2.into())]).unwrap_err().to_string();
    assert!(err.contains("axis 2") && err.contains("rank 2"), "{err}");
    let err = invoke("mean", &[&x], &[("axis", (-3).into())]).unwrap_err().to_string();
    assert!(err.contains("axis -3"), "{err}");
    let err = invoke("sum", &[&x], &[("axis", AttrValue::Ints(vec![1, -1]))]).unwrap_err().to_string();
    assert!(err.contains("more than once"), "{err}");
    assert!(invoke("argmax", &[&x], &[("axis", 5.into())]).is_err());
    let err = invoke("norm", &[&x], &[("ord", 3.into())]).unwrap_err().to_string();
    assert!(err.contains("ord"), "{err}");
    let b = NDArray::zeros(&[2], DType::Bool, Device::Cpu).unwrap();
    assert!(invoke("sum", &[&b], &[]).is_err());
    let i = NDArray::zeros(&[2], DType::I32, Device::Cpu).unwrap();
    let err = invoke("norm", &[&i], &[]).unwrap_err().to_string();
    assert!(err.contains("int32"), "{err}");
}

#[test]
fn argmax_argmin() {
    let v = vec![1.0, 7.0, 7.0, -2.0, 4.0, -2.0, 0.5, 9.0, 3.0, 3.0, -5.0, 8.0];
    let x = arr(v.clone(), &[2, 2, 3]);
    let amax = invoke1("argmax", &[&x], &[("axis", 2.into())]).unwrap();
    assert_eq!(amax.dtype(), DType::F64);
    assert_eq!(amax.shape(), &[2, 2]);
    assert_eq!(amax.to_vec::<f64>().unwrap(), vec![1.0, 1.0, 1.0, 2.0]); // ties go to the first
    let amin = invoke1("argmin", &[&x], &[("axis", 1.into()), ("keepdims", true.into())]).unwrap();
    assert_eq!(amin.shape(), &[2, 1, 3]);
    assert_eq!(amin.to_vec::<f64>().unwrap(), vec![1.0, 1.0, 1.0, 0.0, 1.0, 0.0]);
    let flat = invoke1("argmax", &[&x], &[]).unwrap();
    assert_eq!(flat.shape(), &[1]);
    assert_eq!(flat.to_vec::<f64>().unwrap(), vec![7.0]);
    let flat_k = invoke1("argmin", &[&x], &[("keepdims", true.into())]).unwrap();
    assert_eq!(flat_k.shape(), &[1, 1, 1]);
    assert_eq!(flat_k.to_vec::<f64>().unwrap(), vec![10.0]);
    let x32 = x.astype(DType::F32).unwrap();
    assert_eq!(invoke1("argmax", &[&x32], &[("axis", 0.into())]).unwrap().dtype(), DType::F32);
    let xi = x.astype(DType::I32).unwrap();
    let ai = invoke1("argmax", &[&xi], &[("axis", (-1).into())]).unwrap();
    assert_eq!(ai.dtype(), DType::I64);
    assert_eq!(ai.to_vec::<i64>().unwrap(), vec![1, 1, 1, 2]);
    let nan = arr(vec![1.0, f64::NAN, 3.0], &[3]);
    assert_eq!(invoke1("argmax", &[&nan], &[]).unwrap().to_scalar().unwrap(), 1.0);
    let d = arr(distinct(12), &[2, 2, 3]);
    OpChecker::new("argmax", std::slice::from_ref(&d)).attr("axis", 1).run().unwrap();
    OpChecker::new("argmin", &[d]).run().unwrap();
}

#[test]
fn norms() {
    let data = distinct(24);
    let shape = [2, 3, 4];
    for (ord, f) in [
        (1i64, (|g: &[f64]| g.iter().map(|v| v.abs()).sum()) as F),
        (2, |g| g.iter().map(|v| v * v).sum::<f64>().sqrt()),
    ] {
        for (axis, mask) in [
            (AttrValue::None, vec![true, true, true]),
            (AttrValue::Int(1), vec![false, true, false]),
            (AttrValue::Ints(vec![0, 2]), vec![true, false, true]),
        ] {
            let want = reference(&data, &shape, &mask, f);
            for keepdims in [false, true] {
                let x = arr(data.clone(), &shape);
                let attrs =
                    [("ord", AttrValue::Int(ord)), ("axis", axis.clone()), ("keepdims", keepdims.into())];
                let out = invoke1("norm", &[&x], &attrs).unwrap();
                assert_eq!(out.shape(), out_shape(&shape, &mask, keepdims).as_slice());
                let got = out.to_vec::<f64>().unwrap();
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-12, "norm ord={ord} {axis:?}: {got:?} vs {want:?}");
                }
                OpChecker::new("norm", &[x])
                    .attr("ord", ord)
                    .attr("axis", axis.clone())
                    .attr("keepdims", keepdims)
                    .run()
                    .unwrap();
            }
        }
    }
    let h = arr(vec![3.0, 4.0], &[2]).astype(DType::F16).unwrap();
    let n = invoke1("norm", &[&h], &[]).unwrap();
    assert_eq!(n.dtype(), DType::F16);
    assert_eq!(n.to_vec::<f64>().unwrap(), vec![5.0]);
}

#[test]
fn half_precision_and_f32_accuracy() {
    for dt in [DType::F16, DType::BF16] {
        let x = arr(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).astype(dt).unwrap();
        let s = invoke1("sum", &[&x], &[("axis", 0.into())]).unwrap();
        assert_eq!(s.dtype(), dt);
        assert_eq!(s.to_vec::<f64>().unwrap(), vec![5.0, 7.0, 9.0]);
        assert_eq!(
            invoke1("max", &[&x], &[("axis", 1.into())]).unwrap().to_vec::<f64>().unwrap(),
            vec![3.0, 6.0]
        );
        assert_eq!(invoke1("mean", &[&x], &[]).unwrap().to_vec::<f64>().unwrap(), vec![3.5]);
    }
    // f32 sums accumulate in f64: a million 0.1s stay accurate
    let n = 1_000_000;
    let x = NDArray::full(&[n], 0.1, DType::F32, Device::Cpu).unwrap();
    let s = invoke1("sum", &[&x], &[]).unwrap().to_scalar().unwrap();
    assert!((s - 0.1f32 as f64 * n as f64).abs() < 1e-2, "{s}");
}

/// Large inputs take the parallel paths; results must match the loops.
#[test]
fn large_arrays_all_paths() {
    let cases: Vec<(Vec<usize>, Vec<i64>)> = vec![
        (vec![100_000], vec![0]),
        (vec![2000, 64], vec![0]),
        (vec![64, 2000], vec![1]),
        (vec![3, 40_000], vec![0]),
        (vec![10, 50, 8, 30], vec![1, 3]),
        (vec![10, 50, 8, 30], vec![0, 2]),
        (vec![2, 50_000, 3], vec![1]),
        (vec![6000, 3, 4], vec![1, 2]),
    ];
    for (shape, axes) in cases {
        let n = numel(&shape);
        let data: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 * 0.01 - 5.0).collect();
        let mut mask = vec![false; shape.len()];
        for a in &axes {
            mask[*a as usize] = true;
        }
        for (name, f) in [
            ("sum", (|g: &[f64]| g.iter().sum()) as F),
            ("max", |g| g.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        ] {
            let want = reference(&data, &shape, &mask, f);
            let x = arr(data.clone(), &shape).astype(DType::F32).unwrap();
            let out = invoke1(name, &[&x], &[("axis", AttrValue::Ints(axes.clone()))]).unwrap();
            let got = out.to_vec::<f64>().unwrap();
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "{name} {shape:?} {axes:?} at {k}: {g} vs {w}"
                );
            }
            // req = add
            let op = registry::get(name).unwrap();
            let attrs = op.parse_attrs(&[("axis", AttrValue::Ints(axes.clone()))]).unwrap();
            let acc = NDArray::ones(out.shape(), DType::F32, Device::Cpu).unwrap();
            oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&acc), &[Req::Add]).unwrap();
            for (g, w) in acc.to_vec::<f64>().unwrap().iter().zip(&want) {
                assert!((g - (w + 1.0)).abs() <= 1e-5 * (1.0 + w.abs()), "{name} add {shape:?} {axes:?}");
            }
            let xi =
                arr(data.iter().map(|v| (v * 100.0).round()).collect(), &shape).astype(DType::I32).unwrap();
            let wi = reference(&xi.to_vec::<f64>().unwrap(), &shape, &mask, f);
            let gi = invoke1(name, &[&xi], &[("axis", AttrValue::Ints(axes.clone()))]).unwrap();
            assert_eq!(gi.to_vec::<f64>().unwrap(), wi, "{name} int32 {shape:?} {axes:?}");
        }
        let amax = invoke1("argmax", &[&arr(data.clone(), &shape)], &[("axis", axes[0].into())]).unwrap();
        let ax = axes[0] as usize;
        let (pre, len, post) = (numel(&shape[..ax]), shape[ax], numel(&shape[ax + 1..]));
        let got = amax.to_vec::<f64>().unwrap();
        for p in 0..pre {
            for q in 0..post {
                let mut best = 0;
                for k in 1..len {
                    if data[(p * len + k) * post + q] > data[(p * len + best) * post + q] {
                        best = k;
                    }
                }
                assert_eq!(got[p * post + q], best as f64, "argmax {shape:?} axis {ax}");
            }
        }
    }
}

#[test]
fn hidden_helpers() {
    let x = arr(distinct(6), &[2, 3]);
    let r = invoke1("_backward_reshape_to", &[&x], &[("shape", AttrValue::Ints(vec![3, 1, 2]))]).unwrap();
    assert_eq!(r.shape(), &[3, 1, 2]);
    assert_eq!(r.to_vec::<f64>().unwrap(), x.to_vec::<f64>().unwrap());
    OpChecker::new("_backward_reshape_to", std::slice::from_ref(&x))
        .attr("shape", AttrValue::Ints(vec![6]))
        .run()
        .unwrap();
    assert!(invoke("_backward_reshape_to", &[&x], &[("shape", AttrValue::Ints(vec![4]))]).is_err());
    let b = arr(distinct(3), &[3, 1]);
    let bb = invoke1("_backward_broadcast_to", &[&b], &[("shape", AttrValue::Ints(vec![2, 3, 4]))]).unwrap();
    let bv = b.to_vec::<f64>().unwrap();
    let want: Vec<f64> = (0..24).map(|i| bv[(i / 4) % 3]).collect();
    assert_eq!(bb.to_vec::<f64>().unwrap(), want);
    OpChecker::new("_backward_broadcast_to", std::slice::from_ref(&b))
        .attr("shape", AttrValue::Ints(vec![2, 3, 4]))
        .run()
        .unwrap();
    assert!(invoke("_backward_broadcast_to", &[&b], &[("shape", AttrValue::Ints(vec![2, 4]))]).is_err());
    // 0-d target
    let one = arr(vec![2.5], &[1, 1]);
    let z = invoke1("_backward_reshape_to", &[&one], &[("shape", AttrValue::Ints(vec![]))]).unwrap();
    assert_eq!(z.shape(), &[] as &[usize]);
}

#[test]
fn second_order_through_reductions() {
    // f(x) = sum(mean(x, axis=1)^2 * 3): df/dx_ij = 6 m_i / n; d2f/dx_ij dx_ik = 6 / n^2
    let x = arr(distinct(6), &[2, 3]);
    x.attach_grad(Req::Write).unwrap();
    let dx = {
        let _r = autograd::record();
        let m = invoke1("mean", &[&x], &[("axis", 1.into())]).unwrap();
        let sq = invoke1("_power_scalar", &[&m], &[("scalar", 2.0.into())]).unwrap();
        let y = invoke1("sum", &[&invoke1("_mul_scalar", &[&sq], &[("scalar", 3.0.into())]).unwrap()], &[])
            .unwrap();
        let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
        autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0)
    };
    let xv = x.to_vec::<f64>().unwrap();
    let m: Vec<f64> = (0..2).map(|i| (xv[3 * i] + xv[3 * i + 1] + xv[3 * i + 2]) / 3.0).collect();
    let want: Vec<f64> = (0..6).map(|k| 6.0 * m[k / 3] / 3.0).collect();
    for (g, w) in dx.to_vec::<f64>().unwrap().iter().zip(&want) {
        assert!((g - w).abs() < 1e-12);
    }
    dx.backward().unwrap();
    // sum over k of d2f/dx_ij dx_ik = 3 * 6 / 9 = 2
    for g in x.grad().unwrap().to_vec::<f64>().unwrap() {
        assert!((g - 2.0).abs() < 1e-12, "{g}");
    }
}
