//! Tests of the random operators: sample moments against the
//! distributions (fixed seed, bounds of several standard errors), density
//! values against hand-computed numbers, gradients by the op checker, and
//! errors.

use super::pdf_maths::digamma;
use oxnet_core::check::OpChecker;
use oxnet_core::{autograd, invoke, invoke1, random, AttrValue, DType, NDArray, Req};

use super::generator;

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::Ints(v.to_vec())
}

fn arr(v: &[f64], shape: &[usize]) -> NDArray {
    NDArray::from_vec(v.to_vec(), shape).unwrap()
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
}

/// Asserts that the sample mean and variance of `v` match `mean` and
/// `var` within five standard errors (`kurt`: the fourth central moment
/// over var², for the variance's error).
fn assert_moments(what: &str, v: &[f64], mean: f64, var: f64, kurt: f64) {
    let n = v.len() as f64;
    let (m, s2) = mean_var(v);
    let se_mean = (var / n).sqrt();
    let se_var = var * ((kurt - 1.0) / n).sqrt();
    assert!((m - mean).abs() < 5.0 * se_mean, "{what}: mean {m}, expected {mean}");
    assert!((s2 - var).abs() < 5.0 * se_var, "{what}: variance {s2}, expected {var}");
}

fn draw(op: &str, attrs: &[(&str, AttrValue)]) -> Vec<f64> {
    invoke1(op, &[], attrs).unwrap().to_vec::<f64>().unwrap()
}

const N: i64 = 200_000;

#[test]
fn scalar_samplers_have_the_distributions_moments() {
    let _generator = generator();
    random::seed(42);
    let shape = ("shape", ints(&[N]));
    let u = draw("_random_uniform", &[("low", (-1.5).into()), ("high", 3.0.into()), shape.clone()]);
    assert!(u.iter().all(|x| (-1.5..3.0).contains(x)));
    assert_moments("uniform", &u, 0.75, 4.5 * 4.5 / 12.0, 1.8);
    let z = draw("_random_normal", &[("loc", 10.0.into()), ("scale", 0.5.into()), shape.clone()]);
    assert_moments("normal", &z, 10.0, 0.25, 3.0);
    // gamma(shape 9, scale 0.5): mean 4.5, variance 2.25, kurtosis 3 + 6/9
    let g = draw("_random_gamma", &[("alpha", 9.0.into()), ("beta", 0.5.into()), shape.clone()]);
    assert_moments("gamma", &g, 4.5, 2.25, 3.0 + 6.0 / 9.0);
    let e = draw("_random_exponential", &[("lam", 4.0.into()), shape.clone()]);
    assert_moments("exponential", &e, 0.25, 0.0625, 9.0);
    let p = draw("_random_poisson", &[("lam", 4.0.into()), shape.clone()]);
    assert!(p.iter().all(|x| x.fract() == 0.0 && *x >= 0.0));
    assert_moments("poisson", &p, 4.0, 4.0, 3.0 + 0.25);
    // failures before the 3rd success, p = 0.4: mean k(1-p)/p, variance k(1-p)/p²
    let nb = draw("_random_negative_binomial", &[("k", 3i64.into()), ("p", 0.4.into()), shape.clone()]);
    assert_moments("negative_binomial", &nb, 4.5, 11.25, 5.0);
    let gnb = draw(
        "_random_generalized_negative_binomial",
        &[("mu", 2.0.into()), ("alpha", 0.3.into()), shape.clone()],
    );
    assert_moments("generalized_negative_binomial", &gnb, 2.0, 2.0 + 0.3 * 4.0, 5.0);
}

#[test]
fn seeding_makes_draws_reproducible() {
    let _generator = generator();
    let attrs = [("shape", ints(&[4, 5])), ("dtype", AttrValue::DType(DType::F64))];
    random::seed(7);
    let a = draw("_random_normal", &attrs);
    let b = draw("_random_normal", &attrs);
    random::seed(7);
    assert_eq!(draw("_random_normal", &attrs), a);
    assert_ne!(a, b);
    let y =
        invoke1("_random_uniform", &[], &[("shape", ints(&[2, 3])), ("dtype", "float16".into())]).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[2usize, 3][..], DType::F16));
}

#[test]
fn like_samplers_take_the_inputs_shape_and_dtype() {
    let _generator = generator();
    let x = NDArray::zeros(&[300, 300], DType::F64, oxnet_core::Device::Cpu).unwrap();
    let y = invoke1("_random_exponential_like", &[&x], &[("lam", 2.0.into())]).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[300usize, 300][..], DType::F64));
    assert_moments("exponential_like", &y.to_vec::<f64>().unwrap(), 0.5, 0.25, 9.0);
}

#[test]
fn array_samplers_draw_per_parameter_element() {
    let _generator = generator();
    random::seed(3);
    let mu = arr(&[0.0, 2.5, -9.75, -7.0], &[2, 2]);
    let sigma = arr(&[1.0, 3.7, 4.2, 1.5], &[2, 2]);
    let y = invoke1("_sample_normal", &[&mu, &sigma], &[("shape", ints(&[50_000]))]).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[2usize, 2, 50_000][..], DType::F32));
    let v = y.to_vec::<f64>().unwrap();
    for (i, (m, s)) in [(0.0, 1.0), (2.5, 3.7), (-9.75, 4.2), (-7.0, 1.5)].into_iter().enumerate() {
        assert_moments("sample_normal", &v[i * 50_000..(i + 1) * 50_000], m, s * s, 3.0);
    }
    let lam = arr(&[25.0, 0.5], &[2]);
    let p = invoke1("_sample_poisson", &[&lam], &[("shape", ints(&[2, 20_000]))]).unwrap();
    assert_eq!(p.shape(), &[2, 2, 20_000]);
    let pv = p.to_vec::<f64>().unwrap();
    assert_moments("sample_poisson", &pv[..40_000], 25.0, 25.0, 3.04);
    assert_moments("sample_poisson", &pv[40_000..], 0.5, 0.5, 5.0);
    // exponential's parameter is the rate
    let e = invoke1("_sample_exponential", &[&arr(&[4.0], &[1])], &[("shape", ints(&[N]))]).unwrap();
    assert_moments("sample_exponential", &e.to_vec::<f64>().unwrap(), 0.25, 0.0625, 9.0);
}

#[test]
fn randint_draws_integers_in_range() {
    let _generator = generator();
    random::seed(5);
    let y = invoke1(
        "_random_randint",
        &[],
        &[("low", (-3i64).into()), ("high", 4i64.into()), ("shape", ints(&[70_000]))],
    )
    .unwrap();
    assert_eq!(y.dtype(), DType::I32);
    let v = y.to_vec::<i64>().unwrap();
    for k in -3..4 {
        let c = v.iter().filter(|x| **x == k).count() as f64 / 70_000.0;
        assert!((c - 1.0 / 7.0).abs() < 0.01, "value {k}: frequency {c}");
    }
    assert!(v.iter().all(|x| (-3..4).contains(x)));
    let big = invoke1(
        "_random_randint",
        &[],
        &[
            ("low", 50_000_000_000i64.into()),
            ("high", 50_000_000_010i64.into()),
            ("shape", ints(&[100])),
            ("dtype", "int64".into()),
        ],
    )
    .unwrap();
    assert!(big.to_vec::<i64>().unwrap().iter().all(|x| (50_000_000_000..50_000_000_010).contains(x)));
}

#[test]
fn multinomial_frequencies_log_probs_and_gradient() {
    let _generator = generator();
    random::seed(11);
    let probs = [0.1, 0.2, 0.3, 0.4, 0.0, 0.4, 0.3, 0.2, 0.1, 0.0];
    let x = arr(&probs, &[2, 5]);
    x.attach_grad(Req::Write).unwrap();
    let outs = {
        let _r = autograd::record();
        invoke("_sample_multinomial", &[&x], &[("shape", ints(&[20_000])), ("get_prob", true.into())])
            .unwrap()
    };
    let (y, logp) = (&outs[0], &outs[1]);
    assert_eq!((y.shape(), y.dtype(), logp.dtype()), (&[2usize, 20_000][..], DType::I32, DType::F64));
    let yv = y.to_vec::<i64>().unwrap();
    let lv = logp.to_vec::<f64>().unwrap();
    for row in 0..2 {
        for k in 0..5 {
            let f = yv[row * 20_000..(row + 1) * 20_000].iter().filter(|v| **v == k as i64).count() as f64
                / 20_000.0;
            assert!((f - probs[row * 5 + k]).abs() < 0.015, "row {row}, class {k}: {f}");
        }
    }
    for (j, (&c, &l)) in yv.iter().zip(&lv).enumerate() {
        assert!((l - probs[(j / 20_000) * 5 + c as usize].ln()).abs() < 1e-12);
    }
    logp.backward().unwrap();
    // d/dx[r, k] of sum(log x[r, y]) = count(y = k) / x[r, k]
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    for row in 0..2 {
        for k in 0..5 {
            let count =
                yv[row * 20_000..(row + 1) * 20_000].iter().filter(|v| **v == k as i64).count() as f64;
            let want = if count == 0.0 { 0.0 } else { count / probs[row * 5 + k] };
            assert!((g[row * 5 + k] - want).abs() < 1e-6 * want.max(1.0));
        }
    }
    // without get_prob there is one output; a narrow dtype must hold the classes
    assert_eq!(invoke("_sample_multinomial", &[&x], &[]).unwrap().len(), 1);
    let wide = NDArray::zeros(&[300], DType::F32, oxnet_core::Device::Cpu).unwrap();
    let err = invoke("_sample_multinomial", &[&wide], &[("dtype", "uint8".into())]).unwrap_err().to_string();
    assert!(err.contains("_sample_multinomial") && err.contains("uint8"), "{err}");
}

#[test]
fn shuffle_permutes_rows() {
    let _generator = generator();
    random::seed(1);
    let x = NDArray::from_vec((0..12).map(|v| v as f32).collect(), &[4, 3]).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let y = invoke1("_shuffle", &[&x], &[]).unwrap().to_vec::<f32>().unwrap();
        let mut firsts: Vec<i64> = y.chunks(3).map(|r| r[0] as i64).collect();
        for r in y.chunks(3) {
            assert_eq!((r[1] - r[0], r[2] - r[0]), (1.0, 2.0));
        }
        seen.insert(firsts.clone());
        firsts.sort();
        assert_eq!(firsts, vec![0, 3, 6, 9]);
    }
    assert_eq!(seen.len(), 24, "every order of 4 rows appears");
}

#[test]
fn unique_zipfian_draws_distinct_classes() {
    let _generator = generator();
    random::seed(9);
    let outs = invoke(
        "_sample_unique_zipfian",
        &[],
        &[("range_max", 793_472i64.into()), ("shape", ints(&[2, 8192]))],
    )
    .unwrap();
    assert_eq!(
        (outs[0].dtype(), outs[0].shape(), outs[1].shape()),
        (DType::I64, &[2usize, 8192][..], &[2usize][..])
    );
    let c = outs[0].to_vec::<i64>().unwrap();
    for row in c.chunks(8192) {
        let set: std::collections::HashSet<_> = row.iter().collect();
        assert_eq!(set.len(), 8192);
        assert!(row.iter().all(|v| (0..793_472).contains(v)));
    }
    // the expected number of draws for these sizes is about 16,000
    for t in outs[1].to_vec::<i64>().unwrap() {
        assert!((14_500..17_000).contains(&t), "{t} trials");
    }
}

fn pdf(op: &str, inputs: &[NDArray], is_log: bool) -> Vec<f64> {
    let refs: Vec<&NDArray> = inputs.iter().collect();
    invoke1(op, &refs, &[("is_log", is_log.into())]).unwrap().to_vec::<f64>().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-7 * b.abs().max(1e-3)
}

#[test]
fn densities_match_hand_computed_values() {
    let _generator = generator();
    let one = |v: f64| arr(&[v], &[1]);
    let cases: [(&str, Vec<NDArray>, f64); 8] = [
        // 1/(2√(2π))·e^(-1/8)
        ("_random_pdf_normal", vec![one(1.0), one(0.0), one(2.0)], 0.176_032_663_382_150_1),
        // rate 0.5: 0.5³·2²·e⁻¹/Γ(3)
        ("_random_pdf_gamma", vec![one(2.0), one(3.0), one(0.5)], 0.091_969_860_292_860_58),
        ("_random_pdf_exponential", vec![one(0.5), one(2.0)], 0.735_758_882_342_884_6),
        ("_random_pdf_poisson", vec![one(3.0), one(2.0)], 0.180_447_044_315_483_6),
        // C(4,2)·0.4³·0.6²
        ("_random_pdf_negative_binomial", vec![one(2.0), one(3.0), one(0.4)], 0.13824),
        // k = 2, p = 1/2: C(3,2)/16
        ("_random_pdf_generalized_negative_binomial", vec![one(2.0), one(2.0), one(0.5)], 0.1875),
        ("_random_pdf_uniform", vec![one(0.5), one(0.0), one(2.0)], 0.5),
        // Γ(5)/(Γ(2)Γ(3))·0.2·0.8²
        ("_random_pdf_dirichlet", vec![arr(&[0.2, 0.8], &[2]), arr(&[2.0, 3.0], &[2])], 1.536),
    ];
    for (op, inputs, want) in cases {
        let p = pdf(op, &inputs, false);
        assert!(close(p[0], want), "{op}: {} vs {want}", p[0]);
        let lp = pdf(op, &inputs, true);
        assert!(close(lp[0], want.ln()), "{op} (log): {} vs {}", lp[0], want.ln());
    }
    // outside the uniform's support
    assert_eq!(pdf("_random_pdf_uniform", &[one(3.0), one(0.0), one(2.0)], false), vec![0.0]);
}

#[test]
fn densities_broadcast_parameters_over_samples() {
    let _generator = generator();
    let mu = arr(&[0.0, 1.0], &[2]);
    let sigma = arr(&[1.0, 2.0], &[2]);
    let x = arr(&[0.0, 1.0, 1.0, 3.0], &[2, 2]);
    let p = pdf("_random_pdf_normal", &[x, mu, sigma], true);
    let c = -0.5 * (2.0 * std::f64::consts::PI).ln();
    let want = [c, c - 0.5, c - 2f64.ln(), c - 2f64.ln() - 0.5];
    for (a, b) in p.iter().zip(want) {
        assert!(close(*a, b), "{a} vs {b}");
    }
    let err = invoke1(
        "_random_pdf_normal",
        &[&arr(&[0.0; 3], &[3]), &arr(&[0.0; 2], &[2]), &arr(&[1.0; 2], &[2])],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("_random_pdf_normal") && err.contains("begin with"), "{err}");
}

#[test]
fn digamma_matches_known_values() {
    let _generator = generator();
    assert!((digamma(1.0) + 0.577_215_664_901_532_9).abs() < 1e-12);
    assert!((digamma(0.5) + 1.963_510_026_021_423_5).abs() < 1e-12);
    assert!((digamma(10.0) - 2.251_752_589_066_721).abs() < 1e-12);
}

#[test]
fn density_gradients_pass_the_op_checker() {
    let _generator = generator();
    let s = arr(&[0.3, 1.2, 0.8, 2.5, 1.7, 0.4], &[2, 3]);
    let two = |a: f64, b: f64| arr(&[a, b], &[2]);
    for is_log in [false, true] {
        let check = |op: &str, inputs: Vec<NDArray>, no_grad: &[usize]| {
            OpChecker::new(op, &inputs)
                .attr("is_log", is_log)
                .no_grad(no_grad)
                .run()
                .unwrap_or_else(|e| panic!("{op} (is_log={is_log}): {e}"));
        };
        check("_random_pdf_normal", vec![s.clone(), two(0.5, 1.0), two(1.0, 2.0)], &[]);
        check("_random_pdf_gamma", vec![s.clone(), two(2.0, 3.5), two(1.5, 0.7)], &[]);
        check("_random_pdf_exponential", vec![s.clone(), two(1.5, 0.5)], &[]);
        check("_random_pdf_uniform", vec![s.clone(), two(0.1, 0.2), two(2.0, 3.0)], &[]);
        let counts = arr(&[0.0, 2.0, 5.0, 1.0, 3.0, 4.0], &[2, 3]);
        check("_random_pdf_poisson", vec![counts.clone(), two(2.0, 3.5)], &[0]);
        check("_random_pdf_negative_binomial", vec![counts.clone(), two(3.0, 4.5), two(0.4, 0.7)], &[0]);
        check("_random_pdf_generalized_negative_binomial", vec![counts, two(2.0, 1.3), two(0.5, 0.2)], &[0]);
        let x = arr(&[0.2, 0.8, 0.6, 0.4, 0.3, 0.7, 0.9, 0.1], &[2, 2, 2]);
        check("_random_pdf_dirichlet", vec![x, arr(&[2.0, 3.0, 0.7, 1.5], &[2, 2])], &[]);
    }
}

#[test]
fn invalid_parameters_name_the_operator_and_argument() {
    let _generator = generator();
    type Case = (&'static str, Vec<(&'static str, AttrValue)>, &'static str);
    let cases: [Case; 7] = [
        ("_random_normal", vec![("scale", (-1.0).into())], "`scale`"),
        ("_random_uniform", vec![("low", 2.0.into()), ("high", 1.0.into())], "`low`"),
        ("_random_gamma", vec![("alpha", (-1.0).into())], "`alpha`"),
        ("_random_exponential", vec![("lam", 0.0.into())], "`lam`"),
        ("_random_poisson", vec![("lam", (-1.0).into())], "`lam`"),
        ("_random_negative_binomial", vec![("p", 2.0.into())], "`p`"),
        ("_random_randint", vec![("low", 5i64.into()), ("high", 1i64.into())], "`low`"),
    ];
    for (op, mut attrs, arg) in cases {
        attrs.push(("shape", ints(&[2])));
        let err = invoke1(op, &[], &attrs).unwrap_err().to_string();
        assert!(err.contains(op) && err.contains(arg), "{op}: {err}");
    }
    let err =
        invoke1("_sample_normal", &[&arr(&[0.0], &[1]), &arr(&[-1.0], &[1])], &[]).unwrap_err().to_string();
    assert!(err.contains("_sample_normal") && err.contains("`sigma`"), "{err}");
    let err = invoke1("_random_uniform", &[], &[]).unwrap_err().to_string();
    assert!(err.contains("_random_uniform") && err.contains("shape"), "{err}");
    let err = invoke1("_random_uniform", &[], &[("shape", ints(&[2])), ("dtype", "int32".into())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("`dtype`"), "{err}");
}
