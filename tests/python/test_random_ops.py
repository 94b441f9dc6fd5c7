"""mx.random / mx.nd.random / mx.sym.random: samplers as registry operators
(scalar and array parameters), densities with gradients, seeding."""

import numpy as np
import pytest
import scipy.stats as ss

import oxnet as mx
from oxnet import nd


def _moments_ok(x, mean, std, tol=0.05):
    x = np.asarray(x, dtype=np.float64)
    return abs(x.mean() - mean) < tol * max(1.0, abs(mean)) and abs(x.std() - std) < tol * max(1.0, std)


@pytest.mark.parametrize("func, params, mean, std", [
    (nd.random.uniform, dict(low=-1.5, high=3.0), 0.75, 4.5 / np.sqrt(12)),
    (nd.random.normal, dict(loc=10.0, scale=0.5), 10.0, 0.5),
    (nd.random.gamma, dict(alpha=9.0, beta=0.5), 4.5, 1.5),
    (nd.random.exponential, dict(scale=0.25), 0.25, 0.25),
    (nd.random.poisson, dict(lam=4.0), 4.0, 2.0),
    (nd.random.negative_binomial, dict(k=3, p=0.4), 4.5, np.sqrt(11.25)),
    (nd.random.generalized_negative_binomial, dict(mu=2.0, alpha=0.3), 2.0, np.sqrt(3.2)),
])
def test_scalar_samplers_moments_and_seed(func, params, mean, std):
    mx.random.seed(128)
    a = func(shape=(300, 300), **params)
    mx.random.seed(128)
    b = func(shape=(300, 300), **params)
    assert a.shape == (300, 300) and a.dtype == np.float32
    assert (a.asnumpy() == b.asnumpy()).all()
    assert _moments_ok(a.asnumpy(), mean, std)


def test_array_parameters_dispatch_to_sample_ops():
    mx.random.seed(1)
    mu = nd.array([[0.0, 2.5], [-9.75, -7.0]])
    sigma = nd.array([[1.0, 3.7], [4.2, 1.5]])
    y = nd.random.normal(mu, sigma, shape=20000)
    assert y.shape == (2, 2, 20000)
    v = y.asnumpy()
    for i in range(2):
        for j in range(2):
            assert _moments_ok(v[i, j], mu.asnumpy()[i, j], sigma.asnumpy()[i, j])
    assert nd.random.normal(mu, sigma).shape == (2, 2)
    with pytest.raises(TypeError):
        nd.random.normal(mu, 1.0)


def test_defaults_shapes_dtypes_and_out():
    assert nd.random.uniform().shape == (1,)
    assert nd.random.uniform(shape=(2, 3), dtype="float64").dtype == np.float64
    assert nd.random.randn(2, 3, loc=1).shape == (2, 3)
    r = nd.random.randint(-1, 3, shape=(1000,))
    assert r.dtype == np.int32 and set(np.unique(r.asnumpy())) == {-1, 0, 1, 2}
    r64 = nd.random.randint(50000000000, 50000000010, shape=(10,), dtype="int64")
    assert ((r64.asnumpy() >= 50000000000) & (r64.asnumpy() < 50000000010)).all()
    out = nd.zeros((4, 5), dtype="float64")
    res = nd.random.uniform(2, 3, out=out)
    assert res is out or (res.asnumpy() == out.asnumpy()).all()
    assert ((out.asnumpy() >= 2) & (out.asnumpy() < 3)).all()
    like = nd.random.normal_like(nd.ones((3, 4), dtype="float16"), loc=5)
    assert like.shape == (3, 4) and like.dtype == np.float16
    assert mx.random.uniform is nd.random.uniform


def test_seed_accepts_any_integer_modulo_2_32():
    for s in [-5, 2 ** 40, -(1 << 31)]:
        mx.random.seed(s)
        a = mx.random.uniform(shape=5).asnumpy()
        mx.random.seed(s)
        assert (mx.random.uniform(shape=5).asnumpy() == a).all()
    mx.random.seed(-(1 << 31))
    a = mx.random.uniform(shape=5).asnumpy()
    mx.random.seed(1 << 31)
    assert (mx.random.uniform(shape=5).asnumpy() == a).all()
    mx.random.seed(3, ctx=mx.cpu())
    with pytest.raises(ValueError):
        mx.random.seed(1.5)


def test_invalid_parameters_raise_mxnet_errors():
    for call, words in [
        (lambda: nd.random.normal(0, -1), ("_random_normal", "scale")),
        (lambda: nd.random.uniform(2, 1), ("_random_uniform", "low")),
        (lambda: nd.random.gamma(-1, 1), ("_random_gamma", "alpha")),
        (lambda: nd.random.randint(5, 1), ("_random_randint", "low")),
        (lambda: nd.random.poisson(-1), ("_random_poisson", "lam")),
    ]:
        with pytest.raises(mx.MXNetError) as e:
            call()
        assert all(w in str(e.value) for w in words), str(e.value)


def test_multinomial_probs_and_gradient():
    mx.random.seed(2)
    x = nd.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]) / 10.0
    x.attach_grad()
    with mx.autograd.record():
        y, prob = nd.random.multinomial(x, shape=5000, get_prob=True)
        (prob * 5).backward()
    y, xv = y.asnumpy(), x.asnumpy()
    for i in range(2):
        freq = np.bincount(y[i], minlength=5) / 5000.0
        assert np.allclose(freq, xv[i], atol=0.03)
        np.testing.assert_allclose(prob.asnumpy()[i], np.log(xv[i][y[i]]), rtol=1e-5)
        want = np.bincount(y[i], minlength=5) * 5.0 / np.where(xv[i] > 0, xv[i], 1)
        np.testing.assert_allclose(x.grad.asnumpy()[i], want, rtol=1e-4)
    assert isinstance(nd.random.multinomial(x, shape=3), nd.NDArray)
    with pytest.raises(mx.MXNetError):
        nd.random.multinomial(nd.zeros(300), dtype="uint8")


def test_shuffle_permutes_first_axis():
    x = nd.arange(0, 12).reshape((4, 3))
    y = nd.random.shuffle(x).asnumpy()
    assert sorted(y[:, 0].tolist()) == [0, 3, 6, 9]
    assert (y[:, 1:] - y[:, :1] == [1, 2]).all()


@pytest.mark.parametrize("op, inputs, ref", [
    ("normal", [[0.3, 1.7], [0.5], [1.5]], lambda x, m, s: ss.norm.pdf(x, m, s)),
    ("gamma", [[0.3, 1.7], [2.5], [0.7]], lambda x, a, b: ss.gamma.pdf(x, a, 0, 1 / b)),
    ("exponential", [[0.3, 1.7], [2.0]], lambda x, l: ss.expon.pdf(x, 0, 1 / l)),
    ("poisson", [[0.0, 3.0], [2.5]], ss.poisson.pmf),
    ("negative_binomial", [[0.0, 4.0], [3.0], [0.4]], ss.nbinom.pmf),
    ("generalized_negative_binomial", [[1.0, 4.0], [2.0], [0.3]],
     lambda x, mu, a: ss.nbinom.pmf(x, 1 / a, 1 / (mu * a + 1))),
    ("uniform", [[0.3, 1.7], [0.1], [2.0]], lambda x, l, h: ss.uniform.pdf(x, l, h - l)),
])
def test_densities_match_scipy(op, inputs, ref):
    arrays = [nd.array([inputs[0]], dtype="float64")] + [nd.array(p, dtype="float64") for p in inputs[1:]]
    want = ref(np.array(inputs[0]), *[p[0] for p in inputs[1:]])
    got = getattr(nd.random, "pdf_" + op)(*arrays).asnumpy()[0]
    np.testing.assert_allclose(got, want, rtol=1e-7)
    got_log = getattr(nd, "random_pdf_" + op)(*arrays, is_log=True).asnumpy()[0]
    np.testing.assert_allclose(got_log, np.log(want), rtol=1e-7)


def test_dirichlet_density_and_gradient():
    alpha = np.array([[1.5, 0.7, 2.0]])
    x = ss.dirichlet.rvs(alpha[0], size=4, random_state=0)[None]
    got = nd.random_pdf_dirichlet(nd.array(x, dtype="float64"), nd.array(alpha, dtype="float64"), is_log=True)
    np.testing.assert_allclose(got.asnumpy()[0], [ss.dirichlet.logpdf(v, alpha[0]) for v in x[0]], rtol=1e-7)
    v0, v1 = mx.sym.var("v0"), mx.sym.var("v1")
    mx.test_utils.check_numeric_gradient(mx.sym.random_pdf_dirichlet(v0, v1), [x, alpha],
                                         numeric_eps=1e-5, atol=1e-2, rtol=1e-2, dtype=np.float64)


def test_symbol_samplers_reseed_in_graphs():
    x = mx.sym.var("X")
    y = mx.sym.random.uniform(low=-1, high=2, shape=(50, 50)) + x
    exe = y.bind(mx.cpu(), {"X": nd.zeros((50, 50))})
    mx.random.seed(5)
    a = exe.forward()[0].asnumpy()
    mx.random.seed(5)
    b = exe.forward()[0].asnumpy()
    assert (a == b).all() and a.min() >= -1 and a.max() < 2
    c = exe.forward()[0].asnumpy()
    assert not (a == c).all()
    # shape inferred from the graph, array parameters as symbols
    z = mx.sym.random.normal() + x
    assert z.infer_shape(X=(2, 3))[1] == [(2, 3)]
    s = mx.sym.random.poisson(mx.sym.var("lam"), shape=(4,))
    assert s.infer_shape(lam=(2,))[1] == [(2, 4)]
    assert hasattr(mx.sym.random, "uniform_like") and hasattr(mx.sym.random, "pdf_normal")


def test_rand_zipfian():
    mx.random.seed(0)
    true_classes = nd.array([1, 3, 7], dtype="int32")
    sampled, exp_true, exp_sampled = nd.contrib.rand_zipfian(true_classes, 1000, 20)
    assert sampled.dtype == np.int64 and sampled.shape == (1000,)
    s = sampled.asnumpy()
    assert s.min() >= 0 and s.max() < 20
    expected = (np.log(np.arange(20) + 2) - np.log(np.arange(20) + 1)) / np.log(21) * 1000
    np.testing.assert_allclose(exp_true.asnumpy(), expected[[1, 3, 7]], rtol=1e-6)
    np.testing.assert_allclose(exp_sampled.asnumpy(), expected[s], rtol=1e-6)
