use oxnet_core::autograd::{self, BackwardOptions};
use oxnet_core::check::OpChecker;
use oxnet_core::{invoke, invoke1, registry, DType, Device, NDArray, Req};

fn arr(v: Vec<f64>, shape: &[usize]) -> NDArray {
    NDArray::from_vec(v, shape).unwrap()
}

fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// Values away from each other and from kinks: a in [1, 2].
fn vals_a(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + ((i as f64) * 0.37).fract()).collect()
}

/// b alternates below 0.9 and above 2.1, so max/min never tie with `vals_a`.
fn vals_b(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                0.2 + ((i as f64) * 0.29).fract() * 0.7
            } else {
                2.1 + ((i as f64) * 0.41).fract() * 0.8
            }
        })
        .collect()
}

/// Broadcast shape computed independently of oxnet_core::shape.
fn bshape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, n - s.len()).chain(s.iter().copied()).collect()
    };
    let (pa, pb) = (pad(a), pad(b));
    pa.iter().zip(&pb).map(|(x, y)| if *x == 1 { *y } else { *x }).collect()
}

/// Reference broadcast evaluation with plain index arithmetic.
fn reference(
    a: &[f64],
    sa: &[usize],
    b: &[f64],
    sb: &[usize],
    f: impl Fn(f64, f64) -> f64,
) -> (Vec<f64>, Vec<usize>) {
    let out = bshape(sa, sb);
    let n = out.len();
    let index_of = |s: &[usize], idx: &[usize]| -> usize {
        let lead = n - s.len();
        let mut k = 0;
        for (i, &d) in s.iter().enumerate() {
            k = k * d + if d == 1 { 0 } else { idx[lead + i] };
        }
        k
    };
    let total = numel(&out);
    let mut res = Vec::with_capacity(total);
    for lin in 0..total {
        let mut idx = vec![0; n];
        let mut r = lin;
        for ax in (0..n).rev() {
            idx[ax] = r % out[ax];
            r /= out[ax];
        }
        res.push(f(a[index_of(sa, &idx)], b[index_of(sb, &idx)]));
    }
    (res, out)
}

fn truth(c: bool) -> f64 {
    if c {
        1.0
    } else {
        0.0
    }
}

type F = fn(f64, f64) -> f64;

fn ops() -> Vec<(&'static str, F)> {
    vec![
        ("broadcast_add", |x, y| x + y),
        ("broadcast_sub", |x, y| x - y),
        ("broadcast_mul", |x, y| x * y),
        ("broadcast_div", |x, y| x / y),
        ("broadcast_power", |x, y| x.powf(y)),
        ("broadcast_maximum", |x, y| if x > y { x } else { y }),
        ("broadcast_minimum", |x, y| if x < y { x } else { y }),
        ("broadcast_equal", |x, y| truth(x == y)),
        ("broadcast_not_equal", |x, y| truth(x != y)),
        ("broadcast_greater", |x, y| truth(x > y)),
        ("broadcast_greater_equal", |x, y| truth(x >= y)),
        ("broadcast_lesser", |x, y| truth(x < y)),
        ("broadcast_lesser_equal", |x, y| truth(x <= y)),
    ]
}

const SHAPES: [(&[usize], &[usize]); 6] =
    [(&[2, 3], &[3]), (&[2, 1, 4], &[3, 1]), (&[2, 3], &[]), (&[], &[2, 3]), (&[4], &[4]), (&[1], &[3, 1])];

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: element {i} is {g}, expected {w}");
    }
}

#[test]
fn broadcast_forward_matches_loops_f32() {
    for (name, f) in ops() {
        for (sa, sb) in SHAPES {
            // some exact ties so that equality is exercised
            let a: Vec<f64> = (0..numel(sa)).map(|i| 0.5 + (i % 5) as f64 * 0.5).collect();
            let b: Vec<f64> = (0..numel(sb)).map(|i| 0.5 + (i % 4) as f64 * 0.5).collect();
            let (want, shape) = reference(&a, sa, &b, sb, f);
            let x = arr(a, sa).astype(DType::F32).unwrap();
            let y = arr(b, sb).astype(DType::F32).unwrap();
            let out = invoke1(name, &[&x, &y], &[]).unwrap();
            assert_eq!(out.shape(), shape.as_slice(), "{name} {sa:?} {sb:?}");
            assert_eq!(out.dtype(), DType::F32);
            close(&out.to_vec::<f64>().unwrap(), &want, 1e-6, name);
        }
    }
    // numpy names are the same operators
    let x = arr(vec![1.0, 2.0], &[2]);
    let y = arr(vec![3.0], &[1]);
    for (alias, want) in [
        ("add", [4.0, 5.0]),
        ("broadcast_plus", [4.0, 5.0]),
        ("subtract", [-2.0, -1.0]),
        ("broadcast_minus", [-2.0, -1.0]),
        ("multiply", [3.0, 6.0]),
        ("divide", [1.0 / 3.0, 2.0 / 3.0]),
        ("power", [1.0, 8.0]),
        ("maximum", [3.0, 3.0]),
        ("minimum", [1.0, 2.0]),
        ("equal", [0.0, 0.0]),
        ("not_equal", [1.0, 1.0]),
        ("greater", [0.0, 0.0]),
        ("greater_equal", [0.0, 0.0]),
        ("lesser", [1.0, 1.0]),
        ("less", [1.0, 1.0]),
        ("lesser_equal", [1.0, 1.0]),
        ("less_equal", [1.0, 1.0]),
    ] {
        let out = invoke1(alias, &[&x, &y], &[]).unwrap();
        close(&out.to_vec::<f64>().unwrap(), &want, 1e-12, alias);
    }
}

#[test]
fn broadcast_gradients() {
    for (name, _) in ops() {
        for (sa, sb) in SHAPES {
            let a = arr(vals_a(numel(sa)), sa);
            let b = arr(vals_b(numel(sb)), sb);
            OpChecker::new(name, &[a, b]).run().unwrap_or_else(|e| panic!("{name} {sa:?} {sb:?}: {e}"));
        }
    }
}

#[test]
fn same_shape_ops() {
    let same: [(&str, F); 13] = [
        ("elemwise_add", |x, y| x + y),
        ("elemwise_sub", |x, y| x - y),
        ("elemwise_mul", |x, y| x * y),
        ("elemwise_div", |x, y| x / y),
        ("_power", |x, y| x.powf(y)),
        ("_maximum", |x, y| x.max(y)),
        ("_minimum", |x, y| x.min(y)),
        ("_equal", |x, y| truth(x == y)),
        ("_not_equal", |x, y| truth(x != y)),
        ("_greater", |x, y| truth(x > y)),
        ("_greater_equal", |x, y| truth(x >= y)),
        ("_lesser", |x, y| truth(x < y)),
        ("_lesser_equal", |x, y| truth(x <= y)),
    ];
    for (name, f) in same {
        let (va, vb) = (vals_a(6), vals_b(6));
        let want: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| f(*x, *y)).collect();
        let a = arr(va, &[2, 3]);
        let b = arr(vb, &[2, 3]);
        let out = invoke1(name, &[&a, &b], &[]).unwrap();
        close(&out.to_vec::<f64>().unwrap(), &want, 1e-12, name);
        OpChecker::new(name, &[a.clone(), b]).run().unwrap_or_else(|e| panic!("{name}: {e}"));
        let err = invoke(name, &[&a, &arr(vec![1.0, 2.0, 3.0], &[3])], &[]).unwrap_err().to_string();
        assert!(err.contains("[2, 3]") && err.contains("[3]"), "{name}: {err}");
    }
    for alias in ["_plus", "_add", "_minus", "_sub", "_mul", "_div"] {
        assert!(registry::contains(alias), "{alias}");
    }
    let a = arr(vec![1.0, 2.0], &[2]);
    assert_eq!(invoke1("_plus", &[&a, &a], &[]).unwrap().to_vec::<f64>().unwrap(), vec![2.0, 4.0]);
}

#[test]
fn errors_name_the_problem() {
    let a = arr(vec![0.0; 6], &[2, 3]);
    let b = arr(vec![0.0; 4], &[4]);
    let e = invoke("broadcast_add", &[&a, &b], &[]).unwrap_err().to_string();
    assert!(e.contains("broadcast") && e.contains("[2, 3]") && e.contains("[4]"), "{e}");
    let i = NDArray::zeros(&[2, 3], DType::I32, Device::Cpu).unwrap();
    let e = invoke("broadcast_mul", &[&a, &i], &[]).unwrap_err();
    assert!(matches!(e.root(), oxnet_core::Error::DType(_)), "{e}");
    let e = e.to_string();
    assert!(e.contains("float64") && e.contains("int32"), "{e}");
    let e = invoke("elemwise_add", &[&a, &i], &[]).unwrap_err().to_string();
    assert!(e.contains("float64") && e.contains("int32"), "{e}");
    let t = NDArray::zeros(&[2], DType::Bool, Device::Cpu).unwrap();
    assert!(invoke("broadcast_add", &[&t, &t], &[]).is_err());
    assert!(invoke("_plus_scalar", &[&t], &[("scalar", 1.0.into())]).is_err());
    let e = invoke("_plus_scalar", &[&a], &[("scalar", "abc".into())]).unwrap_err().to_string();
    assert!(e.contains("scalar"), "{e}");
    let e = invoke("add_n", &[&a], &[("num_args", 0.into())]).unwrap_err().to_string();
    assert!(e.contains("num_args"), "{e}");
}

#[test]
fn int32_arithmetic() {
    let a = NDArray::from_vec(vec![7i32, -7, 9, 0, 5, i32::MIN], &[2, 3]).unwrap();
    let b = NDArray::from_vec(vec![2i32, 0, -4], &[3]).unwrap();
    let run = |name: &str| invoke1(name, &[&a, &b], &[]).unwrap();
    assert_eq!(run("broadcast_add").to_vec::<i32>().unwrap(), vec![9, -7, 5, 2, 5, i32::MIN.wrapping_sub(4)]);
    assert_eq!(run("broadcast_sub").to_vec::<i32>().unwrap(), vec![5, -7, 13, -2, 5, i32::MIN + 4]);
    assert_eq!(run("broadcast_mul").to_vec::<i32>().unwrap(), vec![14, 0, -36, 0, 0, 0]);
    // truncating division; by zero gives 0
    assert_eq!(run("broadcast_div").to_vec::<i32>().unwrap(), vec![3, 0, -2, 0, 0, i32::MIN / -4]);
    assert_eq!(run("broadcast_maximum").to_vec::<i32>().unwrap(), vec![7, 0, 9, 2, 5, -4]);
    assert_eq!(run("broadcast_minimum").to_vec::<i32>().unwrap(), vec![2, -7, -4, 0, 0, i32::MIN]);
    assert_eq!(run("broadcast_greater").to_vec::<i32>().unwrap(), vec![1, 0, 1, 0, 1, 0]);
    assert_eq!(run("broadcast_equal").to_vec::<i32>().unwrap(), vec![0, 0, 0, 0, 0, 0]);
    let out = run("broadcast_lesser_equal");
    assert_eq!(out.dtype(), DType::I32);
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![0, 1, 0, 1, 0, 1]);
    let p = NDArray::from_vec(vec![2i32, 3, -2], &[3]).unwrap();
    let e = NDArray::from_vec(vec![3i32, 2, 2], &[3]).unwrap();
    assert_eq!(invoke1("power", &[&p, &e], &[]).unwrap().to_vec::<i32>().unwrap(), vec![8, 9, 4]);
    // i32::MIN / -1 wraps instead of panicking
    let m = NDArray::from_vec(vec![i32::MIN], &[1]).unwrap();
    let n1 = NDArray::from_vec(vec![-1i32], &[1]).unwrap();
    assert_eq!(invoke1("elemwise_div", &[&m, &n1], &[]).unwrap().to_vec::<i32>().unwrap(), vec![i32::MIN]);
    // scalar ops keep the integer dtype; the scalar is truncated to it
    let s = invoke1("_div_scalar", &[&a], &[("scalar", 2.0.into())]).unwrap();
    assert_eq!(s.dtype(), DType::I32);
    assert_eq!(s.to_vec::<i32>().unwrap(), vec![3, -3, 4, 0, 2, i32::MIN / 2]);
    let z = invoke1("_div_scalar", &[&a], &[("scalar", 0.0.into())]).unwrap();
    assert_eq!(z.to_vec::<i32>().unwrap(), vec![0; 6]);
    let u = NDArray::from_vec(vec![250u8, 3], &[2]).unwrap();
    assert_eq!(
        invoke1("_plus_scalar", &[&u], &[("scalar", 10.0.into())]).unwrap().to_vec::<u8>().unwrap(),
        vec![4, 13]
    );
    let l = NDArray::from_vec(vec![(1i64 << 60) + 1, 3], &[2]).unwrap();
    assert_eq!(
        invoke1("elemwise_add", &[&l, &l], &[]).unwrap().as_slice::<i64>().unwrap(),
        &[(1i64 << 61) + 2, 6]
    );
}

#[test]
fn scalar_ops() {
    let xs = vec![0.7, 1.3, 2.2, 0.4, 1.9, 3.1];
    let s = 1.6;
    let table: [(&str, F); 16] = [
        ("_plus_scalar", |x, s| x + s),
        ("_minus_scalar", |x, s| x - s),
        ("_rminus_scalar", |x, s| s - x),
        ("_mul_scalar", |x, s| x * s),
        ("_div_scalar", |x, s| x / s),
        ("_rdiv_scalar", |x, s| s / x),
        ("_power_scalar", |x, s| x.powf(s)),
        ("_rpower_scalar", |x, s| s.powf(x)),
        ("_maximum_scalar", |x, s| x.max(s)),
        ("_minimum_scalar", |x, s| x.min(s)),
        ("_equal_scalar", |x, s| truth(x == s)),
        ("_not_equal_scalar", |x, s| truth(x != s)),
        ("_greater_scalar", |x, s| truth(x > s)),
        ("_greater_equal_scalar", |x, s| truth(x >= s)),
        ("_lesser_scalar", |x, s| truth(x < s)),
        ("_lesser_equal_scalar", |x, s| truth(x <= s)),
    ];
    for (name, f) in table {
        let x = arr(xs.clone(), &[2, 3]);
        let want: Vec<f64> = xs.iter().map(|v| f(*v, s)).collect();
        let out = invoke1(name, &[&x], &[("scalar", s.into())]).unwrap();
        close(&out.to_vec::<f64>().unwrap(), &want, 1e-12, name);
        let out32 = invoke1(name, &[&x.astype(DType::F32).unwrap()], &[("scalar", s.into())]).unwrap();
        assert_eq!(out32.dtype(), DType::F32);
        close(&out32.to_vec::<f64>().unwrap(), &want, 1e-6, name);
        OpChecker::new(name, &[x]).attr("scalar", s).run().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // the square fast path and its gradient, string-typed attribute as from Python
    let x = arr(vec![-1.5, 0.5, 2.0], &[3]);
    let sq = invoke1("_power_scalar", &[&x], &[("scalar", "2".into())]).unwrap();
    assert_eq!(sq.to_vec::<f64>().unwrap(), vec![2.25, 0.25, 4.0]);
    OpChecker::new("_power_scalar", std::slice::from_ref(&x)).attr("scalar", 2.0).run().unwrap();
    OpChecker::new("_power_scalar", std::slice::from_ref(&x)).attr("scalar", 0.0).run().unwrap();
    OpChecker::new("_power_scalar", &[x]).attr("scalar", 3.0).run().unwrap();
    // 0-d input
    let z = NDArray::scalar(2.0f64);
    let out = invoke1("_rminus_scalar", &[&z], &[("scalar", 5.0.into())]).unwrap();
    assert_eq!(out.shape(), &[] as &[usize]);
    assert_eq!(out.to_scalar().unwrap(), 3.0);
}

#[test]
fn half_precision() {
    for dt in [DType::F16, DType::BF16] {
        let a = arr(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).astype(dt).unwrap();
        let b = arr(vec![0.5, 0.25, 2.0], &[3]).astype(dt).unwrap();
        let out = invoke1("broadcast_mul", &[&a, &b], &[]).unwrap();
        assert_eq!(out.dtype(), dt);
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![0.5, 0.5, 6.0, 2.0, 1.25, 12.0]);
        let d = invoke1("broadcast_div", &[&a, &b], &[]).unwrap();
        assert_eq!(d.to_vec::<f64>().unwrap(), vec![2.0, 8.0, 1.5, 8.0, 20.0, 3.0]);
        let g = invoke1("broadcast_greater", &[&a, &b], &[]).unwrap();
        assert_eq!(g.to_vec::<f64>().unwrap(), vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        let s = invoke1("_mul_scalar", &[&a], &[("scalar", 0.5.into())]).unwrap();
        assert_eq!(s.to_vec::<f64>().unwrap(), vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0]);
        let n = invoke1("add_n", &[&a, &a, &a], &[("num_args", 3.into())]).unwrap();
        assert_eq!(n.to_vec::<f64>().unwrap(), vec![3.0, 6.0, 9.0, 12.0, 15.0, 18.0]);
    }
}

#[test]
fn add_n_sums_everything() {
    let xs: Vec<NDArray> =
        (0..4).map(|k| arr((0..6).map(|i| (i * 10 + k) as f64).collect(), &[2, 3])).collect();
    let refs: Vec<&NDArray> = xs.iter().collect();
    let out = invoke1("add_n", &refs, &[("num_args", 4.into())]).unwrap();
    let want: Vec<f64> = (0..6).map(|i| (0..4).map(|k| (i * 10 + k) as f64).sum()).collect();
    assert_eq!(out.to_vec::<f64>().unwrap(), want);
    let one = invoke1("ElementWiseSum", &refs[..1], &[("num_args", 1.into())]).unwrap();
    assert_eq!(one.to_vec::<f64>().unwrap(), xs[0].to_vec::<f64>().unwrap());
    OpChecker::new("add_n", &xs[..3]).attr("num_args", 3).skip_error_checks().run().unwrap();
    assert!(invoke("add_n", &refs[..3], &[("num_args", 4.into())]).is_err());
    let bad = arr(vec![1.0; 3], &[3]);
    assert!(invoke("add_n", &[&xs[0], &bad], &[("num_args", 2.into())]).is_err());
    let i = NDArray::from_vec(vec![1i32, 2], &[2]).unwrap();
    assert_eq!(
        invoke1("add_n", &[&i, &i, &i], &[("num_args", 3.into())]).unwrap().to_vec::<i32>().unwrap(),
        vec![3, 6]
    );
    // large: parallel blocks, and output aliasing the second input
    let n = 70_000;
    let a = arr((0..n).map(|i| i as f64).collect(), &[n]).astype(DType::F32).unwrap();
    let b = arr((0..n).map(|i| 0.5 * i as f64).collect(), &[n]).astype(DType::F32).unwrap();
    let op = registry::get("add_n").unwrap();
    let attrs = op.parse_attrs(&[("num_args", 2.into())]).unwrap();
    oxnet_core::invoke_into(&op, &[&a, &b], &attrs, std::slice::from_ref(&b), &[Req::Inplace]).unwrap();
    let got = b.to_vec::<f64>().unwrap();
    assert!(got.iter().enumerate().all(|(i, v)| *v == 1.5 * i as f64));
    // three inputs, the output aliasing the last one (small and large)
    for len in [5, 50_000] {
        let xs: Vec<NDArray> =
            (0..3).map(|k| arr((0..len).map(|i| (i + k) as f64).collect(), &[len])).collect();
        let attrs = op.parse_attrs(&[("num_args", 3.into())]).unwrap();
        oxnet_core::invoke_into(
            &op,
            &[&xs[0], &xs[1], &xs[2]],
            &attrs,
            std::slice::from_ref(&xs[2]),
            &[Req::Inplace],
        )
        .unwrap();
        let got = xs[2].to_vec::<f64>().unwrap();
        assert!(got.iter().enumerate().all(|(i, v)| *v == (3 * i + 3) as f64), "len {len}");
    }
}

/// Large operands take the parallel and row-collapsed paths; results must
/// match the loops, with write and add requests.
#[test]
fn large_arrays_all_paths() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[300, 256], &[256]),
        (&[300, 1], &[1, 256]),
        (&[100_000], &[100_000]),
        (&[100_000], &[]),
        (&[40, 30, 50], &[40, 1, 50]),
        (&[70_000, 2], &[70_000, 1]),
    ];
    for (sa, sb) in cases {
        let a: Vec<f64> = (0..numel(sa)).map(|i| ((i * 7) % 13) as f64 - 6.0).collect();
        let b: Vec<f64> = (0..numel(sb)).map(|i| ((i * 5) % 11) as f64 + 1.0).collect();
        for (name, f) in [
            ("broadcast_sub", (|x, y| x - y) as F),
            ("broadcast_mul", |x, y| x * y),
            ("broadcast_greater", |x, y| truth(x > y)),
        ] {
            let (want, shape) = reference(&a, sa, &b, sb, f);
            for dt in [DType::F32, DType::I32] {
                let x = arr(a.clone(), sa).astype(dt).unwrap();
                let y = arr(b.clone(), sb).astype(dt).unwrap();
                let out = invoke1(name, &[&x, &y], &[]).unwrap();
                assert_eq!(out.shape(), shape.as_slice());
                assert_eq!(out.to_vec::<f64>().unwrap(), want, "{name} {sa:?} {sb:?} {dt}");
                // req = add on top of ones
                let op = registry::get(name).unwrap();
                let acc = NDArray::ones(&shape, dt, Device::Cpu).unwrap();
                oxnet_core::invoke_into(
                    &op,
                    &[&x, &y],
                    &op.parse_attrs(&[]).unwrap(),
                    std::slice::from_ref(&acc),
                    &[Req::Add],
                )
                .unwrap();
                let plus: Vec<f64> = want.iter().map(|v| v + 1.0).collect();
                assert_eq!(acc.to_vec::<f64>().unwrap(), plus, "{name} add {sa:?} {sb:?} {dt}");
            }
        }
    }
    // in-place: the output is the first operand
    let x = arr((0..50_000).map(|i| i as f64).collect(), &[50_000]).astype(DType::F32).unwrap();
    let op = registry::get("_mul_scalar").unwrap();
    let attrs = op.parse_attrs(&[("scalar", 2.0.into())]).unwrap();
    oxnet_core::invoke_into(&op, &[&x], &attrs, std::slice::from_ref(&x), &[Req::Inplace]).unwrap();
    assert!(x.to_vec::<f32>().unwrap().iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));
    // non-contiguous inputs are handled (the dispatcher hands over copies)
    let m = arr((0..6).map(|i| i as f64).collect(), &[2, 3]);
    let t = m.transpose(None).unwrap();
    let r = invoke1("broadcast_add", &[&t, &arr(vec![10.0, 20.0], &[2])], &[]).unwrap();
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![10.0, 23.0, 11.0, 24.0, 12.0, 25.0]);
}

#[test]
fn second_order_x_exp_x() {
    if !registry::contains("exp") {
        eprintln!("skipping: `exp` (ops/unary) is not registered yet");
        return;
    }
    let xs = vec![-1.0, 0.0, 0.5, 2.0];
    let x = arr(xs.clone(), &[4]);
    x.attach_grad(Req::Write).unwrap();
    let dx = {
        let _r = autograd::record();
        let y = invoke1("elemwise_mul", &[&x, &invoke1("exp", &[&x], &[]).unwrap()], &[]).unwrap();
        let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
        autograd::grad(&[&y], &[&x], &[], opts).unwrap().remove(0)
    };
    let first: Vec<f64> = xs.iter().map(|v| (v + 1.0) * v.exp()).collect();
    close(&dx.to_vec::<f64>().unwrap(), &first, 1e-12, "first derivative");
    dx.backward().unwrap();
    let second: Vec<f64> = xs.iter().map(|v| (v + 2.0) * v.exp()).collect();
    close(&x.grad().unwrap().to_vec::<f64>().unwrap(), &second, 1e-12, "second derivative");
}

#[test]
fn second_order_through_broadcasting() {
    // f(a, b) = sum((a * b)^2 / b) with a (2,3), b (3,): d2f/da2 = 2 b per element
    let a = arr(vals_a(6), &[2, 3]);
    let bv = vals_b(3);
    let b = arr(bv.clone(), &[3]);
    a.attach_grad(Req::Write).unwrap();
    b.attach_grad(Req::Write).unwrap();
    let da = {
        let _r = autograd::record();
        let p = invoke1("broadcast_mul", &[&a, &b], &[]).unwrap();
        let q = invoke1(
            "broadcast_div",
            &[&invoke1("_power_scalar", &[&p], &[("scalar", 2.0.into())]).unwrap(), &b],
            &[],
        )
        .unwrap();
        let opts = BackwardOptions { create_graph: true, retain_graph: true, ..Default::default() };
        autograd::grad(&[&q], &[&a], &[], opts).unwrap().remove(0)
    };
    // da = 2 a b; d(sum da)/da = 2 b, d(sum da)/db = 2 * sum over rows of a
    let av = vals_a(6);
    let want: Vec<f64> = (0..6).map(|i| 2.0 * av[i] * bv[i % 3]).collect();
    close(&da.to_vec::<f64>().unwrap(), &want, 1e-12, "da");
    da.backward().unwrap();
    let want_a: Vec<f64> = (0..6).map(|i| 2.0 * bv[i % 3]).collect();
    close(&a.grad().unwrap().to_vec::<f64>().unwrap(), &want_a, 1e-12, "d2/da2");
    let want_b: Vec<f64> = (0..3).map(|j| 2.0 * (av[j] + av[j + 3])).collect();
    close(&b.grad().unwrap().to_vec::<f64>().unwrap(), &want_b, 1e-12, "d2/dadb");
}
