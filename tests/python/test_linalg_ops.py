"""MXNet's linalg operators (``mx.nd.linalg.*`` / ``mx.sym.linalg.*``):
values against numpy and against numbers MXNet 1.9.1 computed for the same
inputs (sign conventions of gelqf and syevd, gradients), batches, the
``axis`` of gemm/gemm2, float32/float64, shape inference and errors."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd
from oxnet.base import MXNetError

S = np.array([[2., 1., 0.5], [1., 3., 0.2], [0.5, 0.2, 1.]])
T = np.array([[1.5, 0.7, 0.2], [0.3, 2., -0.5], [-0.4, 0.6, 1.2]])
H = np.array([[0.3, -1., 2.], [0.5, 0.1, -0.7], [1.1, 0.4, 0.9]])
A23 = np.array([[1., 2., 3.], [4., 5., 7.]])


def nd(x, dtype="float64"):
    return mx.nd.array(np.asarray(x), dtype=dtype)


def grad_of(f, *xs, heads=None, dtype="float64"):
    """Gradients of ``f(*xs)`` (one output, or a list) for head gradients
    ``heads`` (ones when None), as numpy arrays."""
    arrs = [nd(x, dtype) for x in xs]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        out = f(*arrs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if heads is None:
        autograd.backward(outs)
    else:
        autograd.backward(outs, [nd(h, dtype) for h in heads])
    return [a.grad.asnumpy() for a in arrs]


def test_namespaces_expose_the_linalg_operators():
    names = ["gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "sumlogdiag", "extractdiag", "makediag",
             "extracttrian", "maketrian", "syrk", "gelqf", "syevd", "inverse", "det", "slogdet"]
    for n in names:
        assert callable(getattr(mx.nd.linalg, n)), n
        assert callable(getattr(mx.sym.linalg, n)), n
    assert mx.nd.linalg.gemm2.__name__ == "_linalg_gemm2"
    # MXNet's aliases in the top namespaces (syevd has none)
    assert callable(mx.nd.linalg_gemm2) and callable(mx.sym.linalg_potrf)
    assert not hasattr(mx.nd, "linalg_syevd")
    out = mx.nd.linalg_gemm2(nd(A23), nd(A23), transpose_b=True)
    np.testing.assert_array_equal(out.asnumpy(), A23 @ A23.T)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_and_gemm2_match_numpy(dtype, ta, tb):
    rng = np.random.RandomState(0)
    a = rng.randn(2, 3, 4, 5)
    b = rng.randn(2, 3, 5, 6)
    c = rng.randn(2, 3, 4, 6)
    at = np.swapaxes(a, -1, -2) if ta else a
    bt = np.swapaxes(b, -1, -2) if tb else b
    tol = 1e-5 if dtype == "float32" else 1e-12
    out = mx.nd.linalg.gemm2(nd(at, dtype), nd(bt, dtype), transpose_a=ta, transpose_b=tb, alpha=0.5)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.asnumpy(), 0.5 * a @ b, rtol=tol, atol=tol)
    out = mx.nd.linalg.gemm(nd(at, dtype), nd(bt, dtype), nd(c, dtype), transpose_a=ta, transpose_b=tb,
                            alpha=2.0, beta=-1.5)
    np.testing.assert_allclose(out.asnumpy(), 2.0 * a @ b - 1.5 * c, rtol=tol, atol=tol)


def test_gemm_axis_puts_the_rows_on_that_axis():
    # MXNet 1.9.1: rows on `axis`, columns on the last axis, the rest batch
    a = np.arange(24.).reshape(2, 3, 4)
    b = a / 10
    out = mx.nd.linalg.gemm2(nd(a), nd(b), axis=0, transpose_b=True)
    want = [[[1.4, 8.6], [12.6, 39.], [36.6, 82.2]], [[8.6, 73.4], [39., 123.], [82.2, 185.4]]]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12)
    # the same through numpy: move the row axis next to the last one
    rng = np.random.RandomState(1)
    x, y, c = rng.randn(4, 2, 3, 5), rng.randn(5, 2, 3, 6), rng.randn(4, 2, 3, 6)
    got = mx.nd.linalg.gemm(nd(x), nd(y), nd(c), axis=-4, beta=2.0).asnumpy()
    ref = np.moveaxis(np.moveaxis(x, 0, -2) @ np.moveaxis(y, 0, -2) + 2 * np.moveaxis(c, 0, -2), -2, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(MXNetError):
        mx.nd.linalg.gemm2(nd(a), nd(b), axis=-1)


def test_gemm_errors():
    with pytest.raises(MXNetError, match="gemm2"):
        mx.nd.linalg.gemm2(nd(np.ones((2, 3))), nd(np.ones((4, 2))))
    with pytest.raises(MXNetError):
        mx.nd.linalg.gemm2(nd(np.ones((2, 2, 3))), nd(np.ones((3, 3, 2))))
    with pytest.raises(MXNetError, match="float32"):
        mx.nd.linalg.gemm2(nd(np.ones((2, 3)), "float16"), nd(np.ones((3, 2)), "float16"))


def test_potrf_potri_match_numpy_and_mxnet():
    l = mx.nd.linalg.potrf(nd(S)).asnumpy()
    np.testing.assert_allclose(l, np.linalg.cholesky(S), rtol=1e-12, atol=1e-14)
    u = mx.nd.linalg.potrf(nd(S), lower=False).asnumpy()
    np.testing.assert_allclose(u, np.linalg.cholesky(S).T, rtol=1e-12, atol=1e-14)
    # only the named triangle is read (MXNet 1.9.1)
    l2 = mx.nd.linalg.potrf(nd([[4., 100.], [2., 3.]])).asnumpy()
    np.testing.assert_allclose(l2, [[2., 0.], [1., 1.41421356]], rtol=1e-8)
    inv = mx.nd.linalg.potri(nd(l)).asnumpy()
    np.testing.assert_allclose(inv, np.linalg.inv(S), rtol=1e-10)
    np.testing.assert_allclose(mx.nd.linalg.potri(nd(u), lower=False).asnumpy(), np.linalg.inv(S), rtol=1e-10)
    full = nd([[1., 5.], [2., 3.]])
    np.testing.assert_allclose(mx.nd.linalg.potri(full).asnumpy(),
                               [[1.44444444, -0.22222222], [-0.22222222, 0.11111111]], rtol=1e-7)
    np.testing.assert_allclose(mx.nd.linalg.potri(full, lower=False).asnumpy(),
                               [[3.77777778, -0.55555556], [-0.55555556, 0.11111111]], rtol=1e-7)
    # batches and float32
    batch = np.stack([S, 2 * S + np.eye(3)])
    got = mx.nd.linalg.potrf(nd(batch, "float32"))
    assert got.dtype == np.float32 and got.shape == (2, 3, 3)
    np.testing.assert_allclose(got.asnumpy(), np.linalg.cholesky(batch), rtol=1e-5, atol=1e-6)


def test_potrf_refuses_a_matrix_that_is_not_positive_definite():
    with pytest.raises(MXNetError, match="positive definite"):
        mx.nd.linalg.potrf(nd([[1., 2.], [2., 1.]])).asnumpy()
    with pytest.raises(MXNetError, match="square"):
        mx.nd.linalg.potrf(nd(np.ones((2, 3))))


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("rightside", [False, True])
@pytest.mark.parametrize("lower", [False, True])
def test_trmm_trsm_match_numpy(transpose, rightside, lower):
    rng = np.random.RandomState(2)
    a = rng.randn(2, 3, 3) + 3 * np.eye(3)
    b = rng.randn(2, 3, 4) if not rightside else rng.randn(2, 4, 3)
    tri = np.tril(a) if lower else np.triu(a)
    op = np.swapaxes(tri, -1, -2) if transpose else tri
    kw = dict(transpose=transpose, rightside=rightside, lower=lower, alpha=1.5)
    want = 1.5 * (b @ op if rightside else op @ b)
    np.testing.assert_allclose(mx.nd.linalg.trmm(nd(a), nd(b), **kw).asnumpy(), want, rtol=1e-12, atol=1e-12)
    x = mx.nd.linalg.trsm(nd(a), nd(b), **kw).asnumpy()
    back = x @ op if rightside else op @ x
    np.testing.assert_allclose(back, 1.5 * b, rtol=1e-10, atol=1e-10)


def test_trmm_trsm_values_and_gradients_match_mxnet():
    t, b = nd([[1., 5.], [2., 3.]]), nd([[1., 2.], [3., 4.]])
    np.testing.assert_array_equal(mx.nd.linalg.trmm(t, b).asnumpy(), [[1., 2.], [11., 16.]])
    np.testing.assert_array_equal(mx.nd.linalg.trmm(t, b, lower=False).asnumpy(), [[16., 22.], [9., 12.]])
    got = mx.nd.linalg.trsm(t, b, lower=False, transpose=True, rightside=True, alpha=2).asnumpy()
    np.testing.assert_allclose(got, [[-4.66666667, 1.33333333], [-7.33333333, 2.66666667]], rtol=1e-8)
    B = np.array([[1., 2.], [3., -1.], [0.5, 0.25]])
    da, db = grad_of(lambda x, y: mx.nd.linalg.trmm(x, y, alpha=0.5), T, B,
                     heads=[[[1., 2.], [0.3, -1.], [0.5, 0.7]]])
    np.testing.assert_allclose(da.ravel(), [2.5, 0., 0., -0.85, 0.95, 0., 0.95, 0.4, 0.2125], rtol=1e-12)
    np.testing.assert_allclose(db.ravel(), [0.695, 1.21, 0.45, -0.79, 0.3, 0.42], rtol=1e-12)
    da, db = grad_of(lambda x, y: mx.nd.linalg.trsm(x, y, transpose=True, rightside=True, lower=False,
                                                    alpha=2), T, B.T, heads=[[[1., 2., 0.3], [-1., 0.5, 0.7]]])
    want_a = [2.202777777777778, -2.736111111111111, -0.2777777777777778, 0., -2.0267361111111115,
              -0.8402777777777778, 0., 0., -0.7552083333333334]
    want_b = [1.3333333333333333, 1.5333333333333334, 0.9166666666666667, -1.3333333333333333,
              0.9666666666666666, 1.7916666666666667]
    np.testing.assert_allclose(da.ravel(), want_a, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(db.ravel(), want_b, rtol=1e-12)


def test_gelqf_matches_mxnet_signs_and_reconstructs():
    a = np.array([[[1., 2., 3.], [4., 5., 6.]], [[7., 8., 9.], [10., 11., 12.]]])
    q, l = mx.nd.linalg.gelqf(nd(a))
    assert q.shape == (2, 2, 3) and l.shape == (2, 2, 2)
    want_q = [[[-0.2672612419124243, -0.5345224838248488, -0.8017837257372732],
               [0.8728715609439696, 0.21821789023599236, -0.43643578047198456]],
              [[-0.5025707110324165, -0.5743665268941904, -0.6461623427559643],
               [0.7620734962887136, 0.05862103817605563, -0.6448314199366044]]]
    want_l = [[[-3.7416573867739413, 0.], [-8.55235974119758, 1.963961012123933]],
              [[-13.928388277184121, 0.], [-19.09768701923183, 0.5275893435844944]]]
    np.testing.assert_allclose(q.asnumpy(), want_q, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(l.asnumpy(), want_l, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(l.asnumpy() @ q.asnumpy(), a, rtol=1e-12, atol=1e-12)
    # a negative leading element keeps a positive diagonal entry (LAPACK's reflector)
    q, l = mx.nd.linalg.gelqf(nd([[-1., 2., 3.], [4., -5., 7.]]))
    np.testing.assert_allclose(l.asnumpy(), [[3.741657, 0.], [1.870829, 9.300538]], rtol=1e-6)
    with pytest.raises(MXNetError):
        mx.nd.linalg.gelqf(nd(np.ones((3, 2))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelqf_gradient_of_sum_l_matches_mxnet(dtype):
    # what MXNet's test_infer_type.py::test_infer_multiout_op2 does, on fixed data
    x = nd(A23, dtype)
    x.attach_grad()
    with autograd.record():
        q, l = mx.nd.linalg.gelqf(x)
        s = mx.nd.sum(l)
    s.backward()
    assert x.grad.dtype == np.dtype(dtype)
    want = [-3.0398613499073464, -0.5345224838248492, 0.122416310261034, 0.6814220561380896,
            -0.5345224838248486, -1.118011491754111]
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), want, rtol=tol, atol=tol)


def test_gelqf_float32_and_float64_gradients_agree():
    data32 = mx.nd.random.normal(shape=(2, 3), dtype=np.float32)
    grads = []
    for d in [data32, mx.nd.Cast(data32, dtype=np.float64)]:
        d.attach_grad()
        with autograd.record():
            s = mx.nd.sum(mx.nd.linalg.gelqf(d)[1])
            s.backward()
        grads.append(d.grad.asnumpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-5)
    assert np.abs(grads[0]).sum() > 0


def test_syevd_matches_mxnet_signs():
    u, lam = mx.nd.linalg.syevd(nd(S))
    want_u = [[-0.459711, 0.127175, 0.878915], [0.706736, -0.546912, 0.448789], [0.537764, 0.827474, 0.161543]]
    np.testing.assert_allclose(u.asnumpy(), want_u, atol=2e-6)
    np.testing.assert_allclose(lam.asnumpy(), np.linalg.eigvalsh(S), rtol=1e-12)
    u, lam = u.asnumpy(), lam.asnumpy()
    np.testing.assert_allclose(u.T @ np.diag(lam) @ u, S, atol=1e-12)
    u, lam = mx.nd.linalg.syevd(nd(-S))
    want_u = [[0.537764, 0.827474, 0.161543], [0.706736, -0.546912, 0.448789], [-0.459711, 0.127175, 0.878915]]
    np.testing.assert_allclose(u.asnumpy(), want_u, atol=2e-6)
    # the lower triangle is read (MXNet 1.9.1 on a non-symmetric input)
    ns = np.array([[2., 1., 0.5], [7., 3., 0.2], [-3., 9., 1.]])
    lam = mx.nd.linalg.syevd(nd(ns))[1].asnumpy()
    np.testing.assert_allclose(lam, [-10.8925085, 4.52995262, 12.36255588], rtol=1e-8)


def test_factorization_gradients_match_mxnet():
    g, = grad_of(lambda x: mx.nd.linalg.potrf(x), S, heads=[H])
    want = [-0.006849639683973762, 0.12557462341347658, 0.20051338062087035, 0.12557462341347655,
            0.03434513687724675, 0.13611801377814772, 0.20051338062087032, 0.13611801377814775,
            0.48134536857062793]
    np.testing.assert_allclose(g.ravel(), want, rtol=1e-9, atol=1e-12)
    L = np.array([[1.5, 0, 0], [0.3, 2, 0], [-0.4, 0.6, 1.2]])
    g, = grad_of(lambda x: mx.nd.linalg.potri(x), L, heads=[H])
    want = [-0.7195987654320988, 0., 0., 0.5819444444444445, -0.17930555555555555, 0., -1.5953703703703703,
            0.4210185185185185, -2.4220833333333336]
    np.testing.assert_allclose(g.ravel(), want, rtol=1e-9, atol=1e-12)
    g, = grad_of(lambda x: mx.nd.linalg.syevd(x), S, heads=[H, [0.5, -1., 2.]])
    want = [1.2970857075465945, 0.712876918907392, -0.9042264618765208, 0.712876918907392, 1.1731509745731872,
            1.3825047788679716, -0.9042264618765208, 1.3825047788679716, -0.9702366821197812]
    np.testing.assert_allclose(g.ravel(), want, rtol=1e-7, atol=1e-9)
    g, = grad_of(lambda x: mx.nd.linalg.gelqf(x), A23,
                 heads=[np.arange(6).reshape(2, 3) / 5 - 0.3, [[1., 0.], [-2., 0.5]]])
    want = [-0.8008482596324842, -0.5380200926894497, -0.6215896472541858, 1.007057117044295,
            1.0780800466787501, 1.440032521048696]
    np.testing.assert_allclose(g.ravel(), want, rtol=1e-9, atol=1e-12)


def test_sumlogdiag_syrk_and_their_gradients():
    np.testing.assert_allclose(mx.nd.linalg.sumlogdiag(nd(S)).asnumpy(), [np.log(6.)], rtol=1e-12)
    batch = np.stack([S, 2 * S]).reshape(2, 1, 3, 3)
    got = mx.nd.linalg.sumlogdiag(nd(batch))
    assert got.shape == (2, 1)
    np.testing.assert_allclose(got.asnumpy().ravel(), np.log(np.diagonal(batch, axis1=-2, axis2=-1)).sum(-1).ravel())
    g, = grad_of(lambda x: mx.nd.linalg.sumlogdiag(x), S)
    np.testing.assert_allclose(g, np.diag([0.5, 1 / 3, 1.]), rtol=1e-12)
    B = np.array([[1., 2.], [3., -1.], [0.5, 0.25]])
    np.testing.assert_allclose(mx.nd.linalg.syrk(nd(B), alpha=0.5).asnumpy(), 0.5 * B @ B.T, rtol=1e-12)
    np.testing.assert_allclose(mx.nd.linalg.syrk(nd(B), transpose=True).asnumpy(), B.T @ B, rtol=1e-12)
    g, = grad_of(lambda x: mx.nd.linalg.syrk(x, alpha=0.5), B, heads=[H])
    np.testing.assert_allclose(g.ravel(), [0.325, 1.2375, -0.025, -0.6375, 1.55, 3.475], rtol=1e-12, atol=1e-14)
    g, = grad_of(lambda x: mx.nd.linalg.syrk(x, transpose=True), B, heads=[[[1., 2.], [0.5, -1.]]])
    np.testing.assert_allclose(g.ravel(), [7., -1.5, 3.5, 9.5, 1.625, 0.75], rtol=1e-12)


def test_inverse_det_slogdet_match_numpy_and_mxnet():
    rng = np.random.RandomState(3)
    a = rng.randn(2, 3, 4, 4)
    np.testing.assert_allclose(mx.nd.linalg.inverse(nd(a)).asnumpy(), np.linalg.inv(a), rtol=1e-9, atol=1e-10)
    det = mx.nd.linalg.det(nd(a))
    assert det.shape == (2, 3)
    np.testing.assert_allclose(det.asnumpy(), np.linalg.det(a), rtol=1e-10)
    sign, logdet = mx.nd.linalg.slogdet(nd(a))
    ws, wl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign.asnumpy(), ws)
    np.testing.assert_allclose(logdet.asnumpy(), wl, rtol=1e-10)
    assert mx.nd.linalg.det(nd(T)).shape == (1,)
    g, = grad_of(lambda x: mx.nd.linalg.det(x), T)
    np.testing.assert_allclose(g.ravel(), [2.7, -0.16, 0.98, -0.72, 1.88, -1.18, -0.75, 0.81, 2.79], rtol=1e-9)
    g, = grad_of(lambda x: mx.nd.linalg.slogdet(x)[1], T)
    np.testing.assert_allclose(g, np.linalg.inv(T).T, rtol=1e-10)
    g, = grad_of(lambda x: mx.nd.linalg.inverse(x), T, heads=[H])
    want = [-0.10294818781277135, -0.030470529005458043, -1.307985813421638, -0.05850102832330289,
            0.12762232974736742, 0.6863224223631704, -0.4117892404170028, -0.204808017059845, -0.1243607648843566]
    np.testing.assert_allclose(g.ravel(), want, rtol=1e-9)
    # singular: no error for det/slogdet (sign 0, log -inf), an error for inverse
    sing = nd([[1., 2.], [2., 4.]])
    assert mx.nd.linalg.det(sing).asnumpy()[0] == 0
    sign, logdet = mx.nd.linalg.slogdet(sing)
    assert sign.asnumpy()[0] == 0 and logdet.asnumpy()[0] == -np.inf
    with pytest.raises(MXNetError, match="singular"):
        mx.nd.linalg.inverse(sing).asnumpy()


def test_diag_and_trian_match_mxnet():
    m = np.arange(16.).reshape(4, 4)
    np.testing.assert_array_equal(mx.nd.linalg.extractdiag(nd(S), offset=1).asnumpy(), [1., 0.2])
    np.testing.assert_array_equal(mx.nd.linalg.makediag(nd([1., 2.]), offset=-1).asnumpy(),
                                  [[0., 0., 0.], [1., 0., 0.], [0., 2., 0.]])
    np.testing.assert_array_equal(mx.nd.linalg.makediag(nd([[1., 2.], [3., 4.]]), offset=1).asnumpy(),
                                  [[[0., 1., 0.], [0., 0., 2.], [0., 0., 0.]],
                                   [[0., 3., 0.], [0., 0., 4.], [0., 0., 0.]]])
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(nd(S)).asnumpy(), [2., 1., 3., 0.5, 0.2, 1.])
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(nd(m), lower=False).asnumpy(),
                                  [0., 1., 5., 2., 6., 10., 3., 7., 11., 15.])
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(nd(m), offset=2).asnumpy(), [2., 3., 7.])
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(nd(m), offset=-1).asnumpy(),
                                  [4., 8., 9., 12., 13., 14.])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(nd([1., 2., 3.]), offset=1).asnumpy(),
                                  [[0., 1., 2.], [0., 0., 3.], [0., 0., 0.]])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(nd([1., 2., 3.]), offset=-1, lower=False).asnumpy(),
                                  [[0., 0., 0.], [1., 0., 0.], [2., 3., 0.]])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(nd(np.arange(6.)), lower=False).asnumpy(),
                                  [[0., 1., 3.], [0., 2., 4.], [0., 0., 5.]])
    g, = grad_of(lambda x: mx.nd.linalg.extracttrian(x, offset=1), T, heads=[[1., 2., 3.]])
    np.testing.assert_array_equal(g, [[0., 1., 2.], [0., 0., 3.], [0., 0., 0.]])
    g, = grad_of(lambda x: mx.nd.linalg.makediag(x), [1., 2.], heads=[[[1., 2.], [3., 4.]]])
    np.testing.assert_array_equal(g, [1., 4.])
    with pytest.raises(MXNetError, match="offset"):
        mx.nd.linalg.extractdiag(nd(np.ones((2, 2))), offset=3)
    with pytest.raises(MXNetError, match="triangular"):
        mx.nd.linalg.maketrian(nd([1., 2., 3., 4.]))


def test_symbols_infer_shapes_and_types_as_mxnet():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert mx.sym.linalg.gemm2(a, b, transpose_a=True).infer_shape(a=(2, 4, 3), b=(2, 4, 5))[1] == [(2, 3, 5)]
    assert mx.sym.linalg.gelqf(a).infer_shape(a=(5, 2, 3))[1] == [(5, 2, 3), (5, 2, 2)]
    assert mx.sym.linalg.syevd(a).infer_shape(a=(5, 3, 3))[1] == [(5, 3, 3), (5, 3)]
    assert mx.sym.linalg.det(a).infer_shape(a=(3, 3))[1] == [(1,)]
    assert mx.sym.linalg.slogdet(a).infer_shape(a=(4, 3, 3))[1] == [(4,), (4,)]
    assert mx.sym.linalg.maketrian(a, offset=-1).infer_shape(a=(2, 6))[1] == [(2, 4, 4)]
    assert mx.sym.linalg.extracttrian(a, offset=1).infer_shape(a=(2, 4, 4))[1] == [(2, 6)]
    assert mx.sym.linalg.syrk(a, transpose=True).infer_shape(a=(2, 4, 3))[1] == [(2, 3, 3)]
    assert mx.sym.linalg.gemm2(a, b).infer_type(a="float64", b="float64")[1] == [np.float64]
    assert len(mx.sym.linalg.gelqf(a).list_outputs()) == 2


def test_symbol_executor_forward_and_backward():
    a = mx.sym.var("a")
    q, l = mx.sym.linalg.gelqf(a)
    net = mx.sym.sum(l)
    x = nd(A23)
    grad = mx.nd.zeros((2, 3), dtype="float64")
    exe = net.bind(mx.cpu(), args={"a": x}, args_grad={"a": grad})
    exe.forward(is_train=True)
    exe.backward()
    want = [-3.0398613499073464, -0.5345224838248492, 0.122416310261034, 0.6814220561380896,
            -0.5345224838248486, -1.118011491754111]
    np.testing.assert_allclose(grad.asnumpy().ravel(), want, rtol=1e-12)


def test_sym_arange_is_mxnets():
    # MXNet's test_laop builds its triangle masks with mx.sym.arange
    s = mx.sym.arange(start=0, stop=4, step=1, dtype="int32")
    assert s.infer_shape()[1] == [(4,)]
    exe = s.bind(mx.cpu(), args={})
    out = exe.forward()[0]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), [0, 1, 2, 3])
    assert mx.sym.arange(3).infer_shape()[1] == [(3,)]
    out = mx.sym.arange(1, 2, step=0.5, repeat=2).bind(mx.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), [1., 1., 1.5, 1.5])
