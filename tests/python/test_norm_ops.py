"""LayerNorm, GroupNorm, InstanceNorm and L2Normalization through
`import oxnet as mx`: values and gradients against numpy references (each
checked to agree with MXNet 1.9.1) and values MXNet 1.9.1 computed
(embedded below), the symbol forms' shape and dtype inference, and the
errors for bad input."""

import numpy as np
import pytest

import oxnet as mx


def sample(shape):
    """MXNet's sample data: arange(n).reshape(shape) ** 1.5 / 10 - 1."""
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) ** 1.5 / 10 - 1


def head_grad(shape):
    return (np.arange(int(np.prod(shape))) % 5).reshape(shape).astype(np.float64)


def normalize_ref(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over `axes`, with mean and std."""
    mean = x.mean(axis=axes, keepdims=True)
    std = np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return (x - mean) / std, mean, std


def normalize_grad_ref(x, dxhat, axes, eps):
    """Gradient of (x - mean) / sqrt(var + eps) over `axes` given dL/dxhat."""
    xhat, _, std = normalize_ref(x, axes, eps)
    return (dxhat - dxhat.mean(axis=axes, keepdims=True)
            - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True)) / std


def layer_norm_ref(x, gamma, beta, axis, eps, dy):
    axis = axis % x.ndim
    bshape = [1] * x.ndim
    bshape[axis] = x.shape[axis]
    g, b = gamma.reshape(bshape), beta.reshape(bshape)
    xhat, mean, std = normalize_ref(x, axis, eps)
    others = tuple(i for i in range(x.ndim) if i != axis)
    dx = normalize_grad_ref(x, dy * g, axis, eps)
    return xhat * g + b, mean, std, dx, (dy * xhat).sum(axis=others), dy.sum(axis=others)


def group_norm_ref(x, gamma, beta, groups, eps, dy):
    n, c = x.shape[:2]
    xg = x.reshape((n, groups, -1))
    dyg = dy.reshape((n, groups, -1))
    g, b = gamma.reshape((1, groups, 1)), beta.reshape((1, groups, 1))
    xhat, mean, std = normalize_ref(xg, 2, eps)
    dx = normalize_grad_ref(xg, dyg * g, 2, eps)
    return ((xhat * g + b).reshape(x.shape), mean.reshape((n, groups)), std.reshape((n, groups)),
            dx.reshape(x.shape), (dyg * xhat).sum(axis=(0, 2)), dyg.sum(axis=(0, 2)))


def instance_norm_ref(x, gamma, beta, eps, dy):
    n, c = x.shape[:2]
    xs, dys = x.reshape((n, c, -1)), dy.reshape((n, c, -1))
    g, b = gamma.reshape((1, c, 1)), beta.reshape((1, c, 1))
    xhat, _, _ = normalize_ref(xs, 2, eps)
    dx = normalize_grad_ref(xs, dys * g, 2, eps)
    return ((xhat * g + b).reshape(x.shape), dx.reshape(x.shape),
            (dys * xhat).sum(axis=(0, 2)), dys.sum(axis=(0, 2)))


def l2_norm_ref(x, mode, eps, dy):
    if mode == "instance":
        axes = tuple(range(1, x.ndim))
    elif mode == "channel":
        axes = (1,)
    else:
        axes = tuple(range(2, x.ndim))
    r = np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)
    y = x / r
    dx = dy / r - x * (dy * x).sum(axis=axes, keepdims=True) / r ** 3
    return y, dx


def run(op, arrays, n_out=1, **attrs):
    """Calls mx.nd.<op> under autograd with head gradient head_grad on the
    first output; returns the outputs and the inputs' gradients."""
    nds = [mx.nd.array(a) for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        outs = getattr(mx.nd, op)(*nds, **attrs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    assert len(outs) == n_out
    outs[0].backward(mx.nd.array(head_grad(arrays[0].shape)))
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in nds]


def close(got, want, tol=1e-4):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------
# LayerNorm

@pytest.mark.parametrize("shape,axis", [((2, 3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), 0), ((3, 5), -2),
                                        ((2, 2, 3, 2), 2)])
@pytest.mark.parametrize("mean_var", [False, True])
def test_layer_norm_matches_reference(shape, axis, mean_var):
    x = sample(shape)
    c = shape[axis]
    gamma, beta = np.arange(1, c + 1) * 0.5, np.arange(c) * 0.1 - 0.1
    outs, grads = run("LayerNorm", [x, gamma, beta], 3 if mean_var else 1,
                      axis=axis, eps=1e-3, output_mean_var=mean_var)
    y, mean, std, dx, dg, db = layer_norm_ref(x, gamma, beta, axis, 1e-3, head_grad(shape))
    close(outs[0], y)
    if mean_var:
        close(outs[1], mean)
        close(outs[2], std)
        assert outs[1].shape == mean.shape
    close(grads[0], dx, 2e-4)
    close(grads[1], dg, 2e-4)
    close(grads[2], db)


def test_layer_norm_values_mxnet_computed():
    # MXNet 1.9.1: LayerNorm(sample((2, 3, 4)), gamma=0.5·(1..4), beta=0.1·(0..3)-0.1, eps=1e-3)
    x = sample((2, 3, 4))
    outs, grads = run("LayerNorm", [x, np.arange(1, 5) * 0.5, np.arange(4) * 0.1 - 0.1], 3,
                      eps=1e-3, output_mean_var=True)
    close(outs[0][0, 0], [-0.66334587, -0.62730354, 0.52868623, 3.136409], 1e-5)
    close(outs[1].ravel(), [-0.77438551, 0.30993843, 1.9433267, 3.9729834, 6.331985, 8.9792519], 1e-5)
    close(outs[2].ravel(), [0.2002451, 0.39377823, 0.5175212, 0.61679429, 0.70213455, 0.77815759], 1e-5)
    close(grads[0][0, 0], [0.23034191, -0.41151762, -0.72829223, 0.9094677])
    close(grads[1], [-13.098712, -5.2744412, 4.873199, 17.984192])
    close(grads[2], [10, 11, 12, 13])


def test_layer_norm_defaults_and_dtypes():
    x = np.random.uniform(-1, 1, (4, 6))
    for dtype in ["float16", "float32", "float64"]:
        y = mx.nd.LayerNorm(mx.nd.array(x, dtype=dtype), mx.nd.ones(6, dtype=dtype),
                            mx.nd.zeros(6, dtype=dtype))
        assert y.dtype == np.dtype(dtype)
        want = normalize_ref(x, -1, 1e-5)[0]
        close(y.asnumpy().astype(np.float64), want, 1e-2 if dtype == "float16" else 1e-5)


def test_layer_norm_symbol_infers_gamma_and_beta():
    s = mx.sym.LayerNorm(data=mx.sym.var("x"), name="ln")
    assert s.list_arguments() == ["x", "ln_gamma", "ln_beta"]
    assert s.list_outputs() == ["ln_output"]
    args, outs, aux = s.infer_shape(x=(2, 3, 4))
    assert args == [(2, 3, 4), (4,), (4,)] and outs == [(2, 3, 4)] and aux == []
    s = mx.sym.LayerNorm(data=mx.sym.var("x"), axis=1, output_mean_var=True, name="ln")
    assert s.list_outputs() == ["ln_output", "ln_mean", "ln_std"]
    args, outs, _ = s.infer_shape(x=(2, 3, 4))
    assert args[1] == (3,) and outs == [(2, 3, 4), (2, 1, 4), (2, 1, 4)]
    args, outs, _ = s.infer_shape_partial(x=(2, 0, 4))
    assert args[1] == (0,) or args[1] == ()
    _, types, _ = s.infer_type(x="float64")
    assert [np.dtype(t) for t in types] == [np.float64] * 3


def test_layer_norm_executor_forward_backward():
    s = mx.sym.LayerNorm(data=mx.sym.var("x"), eps=1e-3, name="ln")
    x = sample((3, 4))
    gamma, beta = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.1, 0.2, 0.3, 0.4])
    exe = s.simple_bind(mx.cpu(), x=x.shape)
    exe.arg_dict["x"][:] = x
    exe.arg_dict["ln_gamma"][:] = gamma
    exe.arg_dict["ln_beta"][:] = beta
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(head_grad(x.shape))])
    y, _, _, dx, dg, db = layer_norm_ref(x, gamma, beta, -1, 1e-3, head_grad(x.shape))
    close(exe.outputs[0].asnumpy(), y)
    close(exe.grad_dict["x"].asnumpy(), dx, 2e-4)
    close(exe.grad_dict["ln_gamma"].asnumpy(), dg, 2e-4)
    close(exe.grad_dict["ln_beta"].asnumpy(), db)


# ---------------------------------------------------------------------------
# GroupNorm

@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((2, 4, 3), 1), ((2, 4, 3), 4), ((2, 6, 2, 3), 3)])
def test_group_norm_matches_reference(shape, groups):
    x = sample(shape)
    gamma, beta = np.arange(1, groups + 1) * 0.5, np.arange(groups) * 0.1 - 0.1
    outs, grads = run("GroupNorm", [x, gamma, beta], 3, num_groups=groups, eps=1e-3, output_mean_var=True)
    y, mean, std, dx, dg, db = group_norm_ref(x, gamma, beta, groups, 1e-3, head_grad(shape))
    close(outs[0], y)
    close(outs[1], mean)
    close(outs[2], std)
    close(grads[0], dx, 2e-4)
    close(grads[1], dg, 2e-4)
    close(grads[2], db)


def test_group_norm_values_mxnet_computed():
    # MXNet 1.9.1: GroupNorm(sample((2, 4, 3)), gamma=[0.5, 1], beta=[-0.1, 0], num_groups=2, eps=1e-3)
    outs, grads = run("GroupNorm", [sample((2, 4, 3)), np.array([0.5, 1.0]), np.array([-0.1, 0.0])], 3,
                      num_groups=2, eps=1e-3, output_mean_var=True)
    close(outs[0][0, 0], [-0.69696057, -0.56996983, -0.33777654], 1e-5)
    close(outs[1], [[-0.52991802, 1.5158377], [4.5502024, 8.3059454]], 1e-5)
    close(outs[2], [[0.39372951, 0.74602985], [0.97532308, 1.1599095]], 1e-5)
    close(grads[0][0, 0], [-1.6520357, -0.4809359, 0.60830903])
    close(grads[1], [-1.0892382, -3.0623868])
    close(grads[2], [22, 24])


def test_group_norm_symbol_infers_per_group_parameters():
    s = mx.sym.GroupNorm(data=mx.sym.var("x"), num_groups=2, output_mean_var=True, name="gn")
    assert s.list_arguments() == ["x", "gn_gamma", "gn_beta"]
    assert s.list_outputs() == ["gn_output", "gn_mean", "gn_std"]
    args, outs, _ = s.infer_shape(x=(2, 4, 3, 5))
    assert args == [(2, 4, 3, 5), (2,), (2,)]
    assert outs == [(2, 4, 3, 5), (2, 2), (2, 2)]
    for dtype in ["float16", "float64"]:
        arg_types, _, _ = s.infer_type(x=dtype)
        assert [np.dtype(t) for t in arg_types] == [np.dtype(dtype)] * 3


# ---------------------------------------------------------------------------
# InstanceNorm

@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 3, 2, 2), (1, 1, 1), (3, 2, 2, 1, 3)])
def test_instance_norm_matches_reference(shape):
    x = sample(shape)
    c = shape[1]
    gamma, beta = np.arange(1, c + 1) * 0.5, np.arange(c) * 0.1 - 0.1
    outs, grads = run("InstanceNorm", [x, gamma, beta], 1, eps=0.01)
    y, dx, dg, db = instance_norm_ref(x, gamma, beta, 0.01, head_grad(shape))
    close(outs[0], y)
    close(grads[0], dx, 2e-4)
    close(grads[1], dg, 2e-4)
    close(grads[2], db)


def test_instance_norm_values_mxnet_computed():
    # MXNet 1.9.1: InstanceNorm(sample((2, 4, 3)), gamma=0.5·(1..4), beta=0.1·(0..3)-0.1, eps=0.01)
    outs, grads = run("InstanceNorm", [sample((2, 4, 3)), np.arange(1, 5) * 0.5, np.arange(4) * 0.1 - 0.1],
                      eps=0.01)
    close(outs[0][0, 0], [-0.51434422, -0.18965925, 0.40400329], 1e-5)
    close(grads[0][0, 0], [-1.5995632, 0.35645318, 1.2431097])
    close(grads[1], [4.2255278, -1.1173689, -1.2977813, -1.0945237])
    close(grads[2], [12, 10, 13, 11])
    # the default eps is 1e-3
    y = mx.nd.InstanceNorm(mx.nd.array(sample((2, 4, 3))), mx.nd.ones(4), mx.nd.zeros(4)).asnumpy()
    close(y, normalize_ref(sample((2, 4, 3)), 2, 1e-3)[0], 1e-5)


def test_instance_norm_symbol_infers_per_channel_parameters():
    s = mx.sym.InstanceNorm(data=mx.sym.var("x"), name="in")
    assert s.list_arguments() == ["x", "in_gamma", "in_beta"]
    assert s.list_outputs() == ["in_output"]
    args, outs, _ = s.infer_shape(x=(2, 4, 3))
    assert args == [(2, 4, 3), (4,), (4,)] and outs == [(2, 4, 3)]


# ---------------------------------------------------------------------------
# L2Normalization

@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 2, 2)])
def test_l2_normalization_matches_reference(mode, shape):
    x = sample(shape)
    outs, grads = run("L2Normalization", [x], 1, mode=mode, eps=0.5)
    y, dx = l2_norm_ref(x, mode, 0.5, head_grad(shape))
    close(outs[0], y, 1e-5)
    close(grads[0], dx, 1e-4)


def test_l2_normalization_values_mxnet_computed():
    # MXNet 1.9.1: L2Normalization(sample((2, 3, 4)), eps=0.5) in each mode, and defaults
    x = mx.nd.array(sample((2, 3, 4)))
    close(mx.nd.L2Normalization(x, eps=0.5).asnumpy()[0, 0],
          [-0.22233774, -0.20010395, -0.15945113, -0.10680766], 1e-5)
    close(mx.nd.L2Normalization(x, mode="channel", eps=0.5).asnumpy()[0, 0],
          [-0.56482607, -0.43842846, -0.29498982, -0.16506076], 1e-5)
    close(mx.nd.L2Normalization(x, mode="spatial", eps=0.5).asnumpy()[0, 0],
          [-0.57212168, -0.51490951, -0.41030124, -0.27483854], 1e-5)
    close(mx.nd.L2Normalization(mx.nd.array([[1.0, -2.0], [0.0, 0.0]])).asnumpy(),
          [[0.44721359, -0.89442718], [0, 0]], 1e-6)
    close(mx.nd.L2Normalization(mx.nd.array([3.0, -4.0])).asnumpy(), [1, -1], 1e-6)


def test_l2_normalization_symbol_and_dtypes():
    s = mx.sym.L2Normalization(data=mx.sym.var("x"), mode="channel", name="l2")
    assert s.list_arguments() == ["x"] and s.list_outputs() == ["l2_output"]
    assert s.infer_shape(x=(2, 3, 4))[1] == [(2, 3, 4)]
    for dtype in ["float16", "float32", "float64"]:
        y = mx.nd.L2Normalization(mx.nd.array(sample((2, 3, 4)), dtype=dtype))
        assert y.dtype == np.dtype(dtype)


# ---------------------------------------------------------------------------
# errors (MXNet raises for each; oxnet's messages name the op, the
# attribute and the shapes)

def raises(f, *words):
    with pytest.raises(mx.base.MXNetError) as e:
        f()
        mx.nd.waitall()
    msg = str(e.value)
    for w in words:
        assert w in msg, msg
    return msg


def test_errors_for_bad_input():
    x = mx.nd.ones((2, 4, 3))
    raises(lambda: mx.nd.LayerNorm(x, mx.nd.ones(4), mx.nd.zeros(4)).asnumpy(),
           "LayerNorm", "gamma", "(4,)", "(3,)")
    raises(lambda: mx.nd.LayerNorm(x, mx.nd.ones(3), mx.nd.zeros(3), axis=3).asnumpy(),
           "LayerNorm", "axis", "(2, 4, 3)")
    raises(lambda: mx.nd.GroupNorm(x, mx.nd.ones(3), mx.nd.zeros(3), num_groups=3).asnumpy(),
           "GroupNorm", "num_groups=3", "(2, 4, 3)")
    raises(lambda: mx.nd.GroupNorm(x, mx.nd.ones(4), mx.nd.zeros(4), num_groups=2).asnumpy(),
           "GroupNorm", "gamma", "(4,)", "(2,)")
    raises(lambda: mx.nd.GroupNorm(mx.nd.ones((2, 4)), mx.nd.ones(1), mx.nd.zeros(1)).asnumpy(),
           "GroupNorm", "(2, 4)")
    raises(lambda: mx.nd.InstanceNorm(x, mx.nd.ones(3), mx.nd.zeros(3)).asnumpy(),
           "InstanceNorm", "gamma", "(3,)", "(2, 4, 3)")
    raises(lambda: mx.nd.L2Normalization(x, mode="foo").asnumpy(), "mode", "foo")
    raises(lambda: mx.nd.L2Normalization(mx.nd.ones((2, 3)), mode="spatial").asnumpy(),
           "L2Normalization", "spatial", "(2, 3)")
    raises(lambda: mx.sym.LayerNorm(mx.sym.var("x"), name="ln").infer_shape(x=(2, 3), ln_gamma=(2,)),
           "gamma", "(2,)", "(3,)")
