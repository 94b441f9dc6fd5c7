"""Gluon's InstanceNorm, LayerNorm and GroupNorm layers: outputs and
gradients against numpy references and values MXNet 1.9.1 computed for
the same inputs and parameters, parameter names, shapes and repr, deferred
shapes, hybridize/export/imports."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn


def _arr(seed, shape, lo=-1.0, hi=1.0):
    """The seeded array both engines were given."""
    return np.random.RandomState(seed).uniform(lo, hi, shape).astype(np.float32)


def _forward_backward(layer, shape):
    """Runs ``layer`` on ``_arr(100, shape, 0, 3)`` with its parameters set,
    in name order, to ``_arr(1 + i, ...)``; differentiates ``sum(out * t)``
    for ``t = _arr(200, shape)``. Returns (x, out, x.grad, {name: (value,
    grad or None)})."""
    layer.initialize()
    x = nd.array(_arr(100, shape, 0.0, 3.0))
    layer(x)
    for i, (_, p) in enumerate(sorted(layer.collect_params().items())):
        p.set_data(nd.array(_arr(1 + i, p.shape)))
    x.attach_grad()
    with autograd.record():
        out = layer(x)
        loss = (out * nd.array(_arr(200, shape))).sum()
    loss.backward()
    params = {}
    for name, p in layer.collect_params().items():
        grad = p.grad().asnumpy() if p.grad_req != "null" else None
        params[name.split("_", 1)[1]] = (p.data().asnumpy(), grad)
    return x.asnumpy(), out.asnumpy(), x.grad.asnumpy(), params


def _normalize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _along(v, axis, ndim):
    """``v`` shaped to broadcast along ``axis`` of an ``ndim``-array."""
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


# What MXNet 1.9.1 computed in _forward_backward for InstanceNorm(scale=True) on (2, 3, 4),
# LayerNorm() on (2, 3, 4) and GroupNorm(num_groups=2) on (2, 4, 3).
MXNET = {
    "instancenorm": {
        "out": [[[-0.17864, -0.01574, -0.10557, -0.36388], [1.52885, 1.21176, -0.27856, -0.69946], [-1.10358,
            -0.95974, -0.85597, -1.07979]], [[-0.0977, -0.06971, -0.1102, -0.38622], [-0.49324, 1.54443, -0.50771,
            1.21912], [-1.07801, -0.87883, -0.92678, -1.11547]]],
        "xgrad": [[[-0.16112, 0.10699, -0.02866, 0.08279], [-0.71453, 0.73619, 0.43998, -0.46164], [-0.05848,
            0.02639, -0.02037, 0.05246]], [[-0.06239, 0.09951, -0.04889, 0.01177], [-0.66899, 0.69133, 0.79362,
            -0.81596], [0.03053, -0.04313, 0.04803, -0.03543]]],
        "grad_gamma": [-1.34148, 0.57838, 0.65807],
        "grad_beta": [0.78239, 0.21944, 4.17504],
    },
    "layernorm": {
        "out": [[[-0.17864, 1.55327, -1.04663, -0.59533], [-0.01904, 1.21176, -0.92443, -0.55088], [-0.03216,
            0.05847, -0.85597, -0.29112]], [[-0.0977, 1.15352, -1.04303, -0.61791], [-0.29204, 1.54443, -0.90042,
            -0.28913], [-0.06512, -0.71386, -0.92678, -0.24466]]],
        "xgrad": [[[-0.33618, 0.37164, -0.25979, 0.22433], [-0.4706, 0.56016, -0.05209, -0.03746], [0.22554,
            -0.72393, 0.41229, 0.0861]], [[-0.21512, 0.23573, -0.04545, 0.02484], [0.02862, 0.27397, 0.02323,
            -0.32582], [-0.06232, -0.06522, 0.09417, 0.03338]]],
        "grad_gamma": [-0.82828, 2.75952, 0.19762, -2.23389],
        "grad_beta": [3.40549, -1.43253, 1.26967, 1.93424],
    },
    "groupnorm": {
        "out": [[[-0.24615, -0.12389, -0.19131], [-0.38518, 0.00235, -0.05155], [0.04687, -0.46526, 1.81019],
            [0.36271, -0.68143, 1.57082]], [[-0.08191, -0.05345, -0.09462], [-0.37526, -0.31353, -0.07696],
            [-0.33042, 1.62674, 1.0577], [-0.77735, -0.33556, 1.40278]]],
        "xgrad": [[[-0.12785, 0.07613, -0.0272], [0.05208, -0.10756, 0.1344], [0.92986, -0.22821, 0.51436],
            [-0.48006, -0.1107, -0.62525]], [[-0.08369, 0.07284, -0.06636], [0.07497, -0.08059, 0.08283], [1.03158,
            -0.30774, -0.22869], [-0.14464, -0.84136, 0.49084]]],
        "grad_gamma": [-0.10336, -1.11007],
        "grad_beta": [0.38855, 4.78832],
    },
}
MAKERS = {
    "instancenorm": (lambda: nn.InstanceNorm(scale=True), (2, 3, 4)),
    "layernorm": (lambda: nn.LayerNorm(), (2, 3, 4)),
    "groupnorm": (lambda: nn.GroupNorm(num_groups=2), (2, 4, 3)),
}


@pytest.mark.parametrize("name", sorted(MXNET))
def test_values_and_gradients_match_mxnet(name):
    make, shape = MAKERS[name]
    _, out, xgrad, params = _forward_backward(make(), shape)
    expected = MXNET[name]
    np.testing.assert_allclose(out, expected["out"], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(xgrad, expected["xgrad"], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(params["gamma"][1], expected["grad_gamma"], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(params["beta"][1], expected["grad_beta"], rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("axis,eps,scale,shape", [(1, 1e-5, False, (2, 3, 5)), (2, 1e-3, True, (2, 3, 4, 2)),
                                                  (-1, 1e-5, True, (3, 2, 4))])
def test_instance_norm_matches_numpy(axis, eps, scale, shape):
    layer = nn.InstanceNorm(axis=axis, epsilon=eps, scale=scale)
    x, out, _, params = _forward_backward(layer, shape)
    axis = axis % len(shape)
    axes = tuple(i for i in range(1, len(shape)) if i != axis)
    gamma, beta = params["gamma"][0], params["beta"][0]
    ref = _normalize(x, axes, eps) * _along(gamma, axis, len(shape)) + _along(beta, axis, len(shape))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert (params["gamma"][1] is None) == (not scale)


@pytest.mark.parametrize("axis,eps,shape", [(-1, 1e-5, (2, 3, 4)), (1, 1e-3, (2, 3, 2, 2)), (0, 1e-5, (3, 5))])
def test_layer_norm_matches_numpy(axis, eps, shape):
    layer = nn.LayerNorm(axis=axis, epsilon=eps)
    x, out, _, params = _forward_backward(layer, shape)
    gamma, beta = params["gamma"][0], params["beta"][0]
    assert gamma.shape == (shape[axis],)
    ref = _normalize(x, axis, eps) * _along(gamma, axis, len(shape)) + _along(beta, axis, len(shape))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("groups,shape", [(1, (2, 3, 2, 2)), (2, (2, 4, 3)), (3, (1, 6, 2, 2))])
def test_group_norm_matches_numpy(groups, shape):
    layer = nn.GroupNorm(num_groups=groups, center=False)
    x, out, _, params = _forward_backward(layer, shape)
    gamma, beta = params["gamma"][0], params["beta"][0]
    assert gamma.shape == (groups,) and params["beta"][1] is None
    grouped = _normalize(x.reshape(shape[0], groups, -1), 2, 1e-5)
    ref = (grouped * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)).reshape(shape)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_names_shapes_and_repr_match_mxnet():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.InstanceNorm(), nn.LayerNorm(axis=1, epsilon=1e-3), nn.GroupNorm(num_groups=2, center=False),
                nn.InstanceNorm(in_channels=4, scale=True))
    # MXNet 1.9.1's repr before the first call, then its names, shapes and grad_req after it
    assert [repr(b) for b in net] == [
        "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=0)",
        "LayerNorm(eps=0.001, axis=1, center=True, scale=True, in_channels=0)",
        "GroupNorm(eps=1e-05, num_groups=2, center=False, scale=True)",
        "InstanceNorm(eps=1e-05, axis=1, center=True, scale=True, in_channels=4)"]
    net.initialize()
    assert net(nd.ones((2, 4, 3))).shape == (2, 4, 3)
    assert [(k, p.shape, p.grad_req) for k, p in net.collect_params().items()] == [
        ("net_instancenorm0_gamma", (4,), "null"), ("net_instancenorm0_beta", (4,), "write"),
        ("net_layernorm0_gamma", (4,), "write"), ("net_layernorm0_beta", (4,), "write"),
        ("net_groupnorm0_gamma", (2,), "write"), ("net_groupnorm0_beta", (2,), "null"),
        ("net_instancenorm1_gamma", (4,), "write"), ("net_instancenorm1_beta", (4,), "write")]
    assert repr(net[0]).endswith("in_channels=4)")
    for name in ("InstanceNorm", "LayerNorm", "GroupNorm"):
        assert name in nn.__all__
    from oxnet.gluon.nn import basic_layers

    assert basic_layers.LayerNorm is nn.LayerNorm


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.InstanceNorm(), (2, 3, 4)), (lambda: nn.InstanceNorm(axis=-1, scale=True), (2, 3, 4)),
    (lambda: nn.LayerNorm(), (2, 3, 4)), (lambda: nn.LayerNorm(axis=1), (2, 3, 4)),
    (lambda: nn.GroupNorm(num_groups=3), (2, 6, 2, 2))])
def test_hybridized_and_exported_norms_give_the_imperative_output(make, shape, tmp_path):
    layer = make()
    _, expected, expected_grad, _ = _forward_backward(layer, shape)
    layer.hybridize()
    x = nd.array(_arr(100, shape, 0.0, 3.0))
    x.attach_grad()
    with autograd.record():
        out = layer(x)
        loss = (out * nd.array(_arr(200, shape))).sum()
    loss.backward()
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), expected_grad, rtol=1e-5, atol=1e-6)
    sym_file, params_file = layer.export(str(tmp_path / "norm"))
    loaded = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(loaded(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_bad_inputs_are_clear_errors():
    gn = nn.GroupNorm(num_groups=3)
    gn.initialize()
    with pytest.raises(mx.MXNetError, match="groupnorm"):
        gn(nd.ones((2, 4, 3)))
    ln = nn.LayerNorm(in_channels=5)
    ln.initialize()
    with pytest.raises(mx.MXNetError, match="layernorm"):
        ln(nd.ones((2, 4)))
    inorm = nn.InstanceNorm(in_channels=2)
    inorm.initialize()
    with pytest.raises(mx.MXNetError, match="instancenorm"):
        inorm(nd.ones((2, 3, 4)))
