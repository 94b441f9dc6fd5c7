"""Convolution, Pooling and BatchNorm through `import oxnet as mx`, against
values MXNet 1.9.1 computed (embedded below) and numpy references."""

import numpy as np
import pytest

import oxnet as mx


def conv_reference(x, w, b, stride, pad, dilate, groups):
    """Direct N-d convolution (1 to 3 spatial axes) by loops over taps."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    n, c = x.shape[:2]
    f = w.shape[0]
    cg, fg = c // groups, f // groups
    y = np.zeros((n, f, *out_sp))
    for tap in np.ndindex(*k):
        sl = tuple(
            slice(tap[i] * dilate[i], tap[i] * dilate[i] + stride[i] * (out_sp[i] - 1) + 1, stride[i])
            for i in range(nd)
        )
        patch = xp[(slice(None), slice(None)) + sl]  # (n, c, *out)
        for g in range(groups):
            wg = w[g * fg:(g + 1) * fg, :, *tap]  # (fg, cg)
            pg = patch[:, g * cg:(g + 1) * cg]
            y[:, g * fg:(g + 1) * fg] += np.einsum("fc,nc...->nf...", wg, pg)
    if b is not None:
        y += b.reshape((1, f) + (1,) * nd)
    return y


def test_convolution_values_and_gradients_match_mxnet():
    x = mx.nd.array(np.arange(2 * 2 * 4 * 4).reshape(2, 2, 4, 4) % 7 - 3)
    w = mx.nd.array(np.arange(3 * 2 * 3 * 3).reshape(3, 2, 3, 3) % 5 - 2)
    b = mx.nd.array([0.5, -1, 2])
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=3, pad=(1, 1), stride=(2, 1))
    want = [[[[-3.5, -3.5, 4.5, 3.5], [2.5, 14.5, -2.5, 5.5]], [[6.0, -1.0, -4.0, 4.0], [-16.0, -12.0, 17.0, -15.0]],
             [[10.0, 1.0, -3.0, 4.0], [10.0, -4.0, -4.0, 9.0]]],
            [[[-5.5, -6.5, 8.5, -10.5], [-8.5, 9.5, -7.5, -13.5]], [[1.0, -6.0, -2.0, 7.0], [5.0, -1.0, 14.0, 4.0]],
             [[7.0, -1.0, 2.0, 9.0], [-7.0, 3.0, 10.0, -9.0]]]]
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    y.backward(mx.nd.array(np.arange(y.size).reshape(y.shape) % 3))
    dx0 = [[[3, 0, 0, -5], [-8, 5, 5, -6], [-1, 0, 0, -1], [2, 7, -3, 2]],
           [[2, 1, -4, 4], [0, -13, 2, 2], [3, -4, 6, 3], [-4, 3, -2, -4]]]
    np.testing.assert_allclose(x.grad.asnumpy(), [dx0, dx0])
    dw = [[[[1, -1, 7], [-5, 7, -8], [1, 14, -2]], [[6, 1, -2], [-9, -7, 2], [-3, -7, 8]]],
          [[[1, 7, -1], [8, -12, -8], [14, -4, -2]], [[-1, -2, 4], [-10, 6, 2], [-4, 14, -6]]],
          [[[7, -3, 0], [-6, -10, 7], [0, -1, 13]], [[-2, 10, -2], [4, -2, -4], [10, -7, -5]]]]
    np.testing.assert_allclose(w.grad.asnumpy(), dw)
    np.testing.assert_allclose(b.grad.asnumpy(), [14, 16, 18])


def test_depthwise_dilated_1d_matches_mxnet():
    x = mx.nd.array(np.arange(1 * 4 * 5).reshape(1, 4, 5) % 6 - 2.5)
    w = mx.nd.array(np.arange(4 * 1 * 3).reshape(4, 1, 3) % 4 - 1.5)
    y = mx.nd.Convolution(x, w, kernel=(3,), num_filter=4, num_group=4, no_bias=True, dilate=(2,))
    np.testing.assert_allclose(y.asnumpy(), [[[4.75], [5.75], [-2.25], [-1.25]]])


@pytest.mark.parametrize(
    "shape,kernel,stride,pad,dilate,groups",
    [
        ((2, 3, 9), (3,), (2,), (1,), (2,), 1),
        ((2, 4, 6, 5), (3, 2), (1, 2), (1, 0), (1, 1), 2),
        ((1, 2, 4, 5, 4), (2, 3, 2), (1, 1, 2), (0, 1, 1), (1, 1, 1), 1),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_convolution_matches_numpy(shape, kernel, stride, pad, dilate, groups, dtype):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, shape)
    f = 4
    w = rng.uniform(-1, 1, (f, shape[1] // groups) + kernel)
    b = rng.uniform(-1, 1, (f,))
    y = mx.nd.Convolution(mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype=dtype), mx.nd.array(b, dtype=dtype),
                          kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=f, num_group=groups)
    assert y.dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y.asnumpy(), conv_reference(x, w, b, stride, pad, dilate, groups), rtol=tol, atol=tol)


def test_pooling_matches_mxnet():
    x = mx.nd.array(np.arange(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) % 11 / 3.0)
    y = mx.nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", count_include_pad=False)
    want00 = [[1.0, 1.5, 2.0], [1.666667, 1.555556, 2.055556], [2.333333, 1.611111, 1.5]]
    np.testing.assert_allclose(y.asnumpy()[0, 0], want00, rtol=1e-5)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", pooling_convention="full")
    assert y.shape == (2, 2, 3, 3)
    y.backward(mx.nd.array(np.arange(y.size).reshape(y.shape) + 1))
    want = [[0, 0, 0, 0, 0], [0, 1, 0, 2, 3], [4, 0, 0, 0, 0], [0, 0, 0, 5, 6], [0, 7, 0, 8, 9]]
    np.testing.assert_allclose(x.grad.asnumpy()[0, 0], want)
    g = mx.nd.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1))
    np.testing.assert_allclose(g.asnumpy()[:, :, 0, 0], x.asnumpy().mean(axis=(2, 3)), rtol=1e-6)
    lp = mx.nd.Pooling(mx.nd.array([[[1, 2, 3, 4, 5]]]), kernel=(3,), stride=(2,), pad=(1,), pool_type="lp", p_value=2)
    np.testing.assert_allclose(lp.asnumpy(), [[[2.236068, 5.3851647, 6.4031243]]], rtol=1e-6)


def test_batchnorm_train_step_and_inference_match_mxnet():
    x = mx.nd.array(np.arange(24).reshape(2, 3, 2, 2) ** 1.5 / 10)
    gamma, beta = mx.nd.array([1, 2, 3]), mx.nd.array([0.1, 0.2, 0.3])
    mean, var = mx.nd.zeros(3), mx.nd.ones(3)
    for a in (x, gamma, beta):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False)
    np.testing.assert_allclose(y.asnumpy()[0, 0].ravel(), [-0.97517, -0.9338062, -0.85817546, -0.7602372], rtol=1e-5)
    # the moving statistics move in the backward pass, as in MXNet
    np.testing.assert_allclose(mean.asnumpy(), [0, 0, 0])
    y.backward(mx.nd.array(np.arange(24).reshape(2, 3, 2, 2) % 5))
    np.testing.assert_allclose(mean.asnumpy(), [0.25992996, 0.4320963, 0.6461291], rtol=1e-5)
    np.testing.assert_allclose(var.asnumpy(), [1.4843646, 1.8389292, 2.1811745], rtol=1e-5)
    np.testing.assert_allclose(gamma.grad.asnumpy(), [2.715049, 3.7116566, -1.6396371], rtol=1e-4)
    np.testing.assert_allclose(beta.grad.asnumpy(), [15, 17, 14])
    np.testing.assert_allclose(x.grad.asnumpy()[0, 0].ravel(), [-0.62463856, -0.21680678, 0.18621455, 0.58610433],
                               rtol=1e-4)
    out, m, inv_std = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False, output_mean_var=True)
    np.testing.assert_allclose(m.asnumpy(), mean.asnumpy())
    np.testing.assert_allclose(inv_std.asnumpy(), 1 / np.sqrt(var.asnumpy() + 1e-3), rtol=1e-6)


def test_symbols_names_and_shapes():
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="c")
    assert conv.list_arguments() == ["data", "c_weight", "c_bias"]
    args, outs, _ = conv.infer_shape(data=(1, 2, 5, 5))
    assert args == [(1, 2, 5, 5), (4, 2, 3, 3), (4,)] and outs == [(1, 4, 3, 3)]
    bn = mx.sym.BatchNorm(conv, name="bn")
    assert bn.list_arguments() == ["data", "c_weight", "c_bias", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]
    assert mx.sym.BatchNorm(data, output_mean_var=True, name="b").list_outputs() == ["b_output", "b_mean", "b_var"]
    pool = mx.sym.Pooling(bn, kernel=(2, 2), stride=(2, 2), name="p")
    _, outs, aux = pool.infer_shape(data=(1, 2, 6, 6))
    assert outs == [(1, 4, 2, 2)] and aux == [(4,), (4,)]


def test_executor_trains_batchnorm_moving_stats():
    data = mx.sym.var("data")
    sym = mx.sym.BatchNorm(data, name="bn")
    ex = sym.simple_bind(mx.cpu(), data=(2, 3, 2, 2))
    ex.arg_dict["data"][:] = np.arange(24).reshape(2, 3, 2, 2)
    ex.aux_dict["bn_moving_var"][:] = 1
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), [0, 0, 0])
    ex.backward(mx.nd.ones((2, 3, 2, 2)))
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), [0.75, 1.15, 1.55], rtol=1e-6)


def test_errors_are_clear():
    x = mx.nd.ones((1, 3, 5, 5))
    with pytest.raises(mx.MXNetError, match="num_group"):
        mx.nd.Convolution(x, mx.nd.ones((2, 1, 3, 3)), kernel=(3, 3), num_filter=2, num_group=2, no_bias=True)
    with pytest.raises(mx.MXNetError, match=r"\(7, 7\)"):
        mx.nd.Convolution(x, mx.nd.ones((2, 3, 7, 7)), kernel=(7, 7), num_filter=2, no_bias=True)
    with pytest.raises(mx.MXNetError, match="pool_type"):
        mx.nd.Pooling(x, kernel=(2, 2), pool_type="median")
    with pytest.raises(mx.MXNetError, match="weight"):
        mx.nd.Convolution(x, mx.nd.ones((2, 3, 2, 2)), kernel=(3, 3), num_filter=2, no_bias=True)


def test_batchnorm_aux_variables_carry_their_initializers():
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    attrs = bn.attr_dict()
    assert attrs["bn_moving_mean"]["__init__"] == '["zero", {}]'
    assert attrs["bn_moving_var"]["__init__"] == '["one", {}]'
    mod = mx.mod.Module(bn, label_names=None)
    mod.bind(data_shapes=[("data", (4, 3, 2, 2))])
    mod.init_params(mx.init.Uniform(0.5))
    aux = mod.get_params()[1]
    assert (aux["bn_moving_mean"].asnumpy() == 0).all() and (aux["bn_moving_var"].asnumpy() == 1).all()


def test_hidden_keys_given_as_keywords_are_node_attributes():
    conv = mx.sym.Convolution(mx.sym.var("data"), name="conv", kernel=(1, 1), num_filter=1, lr_mult=2)
    attrs = conv.attr_dict()
    assert attrs["conv"]["lr_mult"] == "2" and attrs["conv"]["__lr_mult__"] == "2"
    # as in MXNet 1.9.1, the variables made for the operator take them too
    assert attrs["conv_weight"]["__lr_mult__"] == "2" and attrs["conv_bias"]["lr_mult"] == "2"
    given = mx.sym.var("w", lr_mult=1)
    conv = mx.sym.Convolution(mx.sym.var("data"), given, name="c2", kernel=(1, 1), num_filter=1, lr_mult=2)
    assert conv.attr_dict()["w"]["__lr_mult__"] == "1"  # a given variable keeps its own


def test_v1_and_sync_batchnorm_output_the_variance():
    x = mx.nd.array(np.arange(24).reshape(2, 3, 2, 2))
    g, b, mm, mv = mx.nd.ones(3), mx.nd.zeros(3), mx.nd.zeros(3), mx.nd.ones(3)
    with mx.autograd.train_mode():
        _, mean, var = mx.nd.contrib.SyncBatchNorm(x, g, b, mm, mv, output_mean_var=True, key="bn")
    np.testing.assert_allclose(mean.asnumpy(), [7.5, 11.5, 15.5])
    np.testing.assert_allclose(var.asnumpy(), [37.25] * 3, rtol=1e-6)
    assert mx.sym.BatchNorm_v1(mx.sym.var("d"), name="v1").list_auxiliary_states() == ["v1_moving_mean",
                                                                                        "v1_moving_var"]


def test_lrn_matches_mxnet():
    x = mx.nd.array(np.arange(10).reshape(1, 5, 1, 2) / 3.0 - 1)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.LRN(x, nsize=3, alpha=0.3, beta=0.6, knorm=1.5)
    y.backward(mx.nd.array(np.arange(10).reshape(1, 5, 1, 2) % 4))
    np.testing.assert_allclose(y.asnumpy().ravel(), [-0.75114655, -0.51362407, -0.24935183, 0.0, 0.24935183,
                                                     0.48112202, 0.6827727, 0.84891504, 1.1419898, 1.289646],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), [-0.03689041, 0.74383104, 1.4838141, 2.272297, -0.01662063,
                                                          0.60333115, 1.2787931, 1.5740454, -0.14458716, 0.20784965],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape_kw", [dict(pad=(1, 1), adj=(1, 1)), dict(target_shape=(6, 6))])
def test_deconvolution_matches_mxnet(shape_kw):
    x = mx.nd.array(np.arange(18).reshape(1, 2, 3, 3) % 5 - 2)
    w = mx.nd.array(np.arange(36).reshape(2, 2, 3, 3) % 4 - 1.5)
    b = mx.nd.array([0.25, -0.5])
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Deconvolution(x, w, b, kernel=(3, 3), num_filter=2, no_bias=False, stride=(2, 2), **shape_kw)
    assert y.shape == (1, 2, 6, 6)
    np.testing.assert_allclose(y.asnumpy()[0, 0, 0], [4.25, 3.75, 0.75, -1.75, -0.25, -1.25])
    y.backward(mx.nd.array(np.arange(72).reshape(y.shape) % 7 - 3))
    np.testing.assert_allclose(x.grad.asnumpy()[0, 0], [[20.5, -4.0, -8.0], [-21.0, 40.5, 1.5], [4.0, -25.5, 40.5]])
    np.testing.assert_allclose(w.grad.asnumpy()[0, 1], [[-6.0, -10.0, -9.0], [-6.0, 0.0, -9.0], [15.0, 2.0, 0.0]])
    np.testing.assert_allclose(b.grad.asnumpy(), [-3.0, -2.0])
    sym = mx.sym.Deconvolution(mx.sym.var("data"), kernel=(3, 3), num_filter=4, stride=(2, 2), name="d", **shape_kw)
    assert sym.list_arguments() == ["data", "d_weight"]
    args, outs, _ = sym.infer_shape(data=(1, 2, 3, 3))
    assert args[1] == (2, 4, 3, 3) and outs == [(1, 4, 6, 6)]
