"""contrib.fft, contrib.ifft and contrib.count_sketch through `import oxnet
as mx`: values against numpy's FFT and a direct sketch, gradients from
autograd against MXNet's formulas and central differences, the symbol API,
errors."""

import numpy as np
import pytest

import oxnet as mx


def _interleave(c):
    """Complex (..., d) as real (..., 2d): re0, im0, re1, im1, ..."""
    out = np.empty(c.shape[:-1] + (2 * c.shape[-1],))
    out[..., 0::2] = c.real
    out[..., 1::2] = c.imag
    return out


def _complex(z):
    """Interleaved real (..., 2d) as complex (..., d)."""
    return z[..., 0::2] + 1j * z[..., 1::2]


def _grad(f, x, head):
    x = mx.nd.array(x, dtype='float64')
    x.attach_grad()
    with mx.autograd.record():
        y = f(x)
    y.backward(mx.nd.array(head, dtype='float64'))
    return y.asnumpy(), x.grad.asnumpy()


def _numeric_grad(f, x, head, eps=1e-6):
    """Central differences of sum(head * f(x)) in float64."""
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = (f(mx.nd.array(x, dtype='float64')).asnumpy() * head).sum()
        flat[i] = old - eps
        down = (f(mx.nd.array(x, dtype='float64')).asnumpy() * head).sum()
        flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize('shape', [(5,), (3, 4), (2, 3, 7), (2, 1, 3, 8)])
def test_fft_matches_numpy(shape):
    rng = np.random.RandomState(len(shape))
    x = rng.normal(size=shape)
    y = mx.nd.contrib.fft(mx.nd.array(x, dtype='float64'))
    assert y.shape == shape[:-1] + (2 * shape[-1],)
    np.testing.assert_allclose(y.asnumpy(), _interleave(np.fft.fft(x, axis=-1)), rtol=1e-10, atol=1e-10)
    y32 = mx.nd.contrib.fft(mx.nd.array(x, dtype='float32'), compute_size=2)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32.asnumpy(), _interleave(np.fft.fft(x, axis=-1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('shape', [(4,), (3, 10), (2, 2, 2, 6)])
def test_ifft_is_unnormalized_real_part(shape):
    rng = np.random.RandomState(7 + len(shape))
    z = rng.normal(size=shape)
    d = shape[-1] // 2
    y = mx.nd.contrib.ifft(mx.nd.array(z, dtype='float64'))
    assert y.shape == shape[:-1] + (d,)
    # MXNet does not divide by d: d * Re(numpy ifft)
    want = d * np.fft.ifft(_complex(z), axis=-1).real
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-10, atol=1e-10)
    # and so ifft(fft(x)) = d x
    x = rng.normal(size=shape[:-1] + (d,))
    back = mx.nd.contrib.ifft(mx.nd.contrib.fft(mx.nd.array(x, dtype='float64')))
    np.testing.assert_allclose(back.asnumpy(), d * x, rtol=1e-10, atol=1e-10)


def test_fft_gradient():
    rng = np.random.RandomState(1)
    x = rng.normal(size=(3, 6))
    head = rng.normal(size=(3, 12))
    _, g = _grad(mx.nd.contrib.fft, x, head)
    # MXNet's GPU test: d * Re(numpy ifft(head as complex))
    np.testing.assert_allclose(g, 6 * np.fft.ifft(_complex(head), axis=-1).real, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g, _numeric_grad(mx.nd.contrib.fft, x, head), rtol=1e-6, atol=1e-6)


def test_ifft_gradient():
    rng = np.random.RandomState(2)
    z = rng.normal(size=(2, 1, 10))
    head = rng.normal(size=(2, 1, 5))
    _, g = _grad(mx.nd.contrib.ifft, z, head)
    # numpy's fft of the head, interleaved
    np.testing.assert_allclose(g, _interleave(np.fft.fft(head, axis=-1)), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g, _numeric_grad(mx.nd.contrib.ifft, z, head), rtol=1e-6, atol=1e-6)


def _sketch(x, h, s, out_dim):
    out = np.zeros(x.shape[:-1] + (out_dim,))
    for j in range(x.shape[-1]):
        out[..., int(h[0, j])] += s[0, j] * x[..., j]
    return out


def test_count_sketch_mxnet_example():
    x = mx.nd.array([[1.2, 2.5, 3.4], [3.2, 5.7, 6.6]])
    y = mx.nd.contrib.count_sketch(data=x, h=mx.nd.array([[0, 3, 4]]), s=mx.nd.array([[1, -1, 1]]), out_dim=5)
    np.testing.assert_allclose(y.asnumpy(), [[1.2, 0, 0, -2.5, 3.4], [3.2, 0, 0, -5.7, 6.6]], rtol=1e-6)


@pytest.mark.parametrize('shape', [(7, 40), (2, 3, 2, 9)])
def test_count_sketch_values_and_gradient(shape):
    rng = np.random.RandomState(shape[-1])
    in_dim, out_dim = shape[-1], 6
    x = rng.uniform(-10, 10, shape)
    h = rng.randint(0, out_dim, (1, in_dim)).astype(np.float64)
    s = (rng.randint(0, 2, (1, in_dim)) * 2 - 1).astype(np.float64)
    hs, ss = mx.nd.array(h, dtype='float64'), mx.nd.array(s, dtype='float64')
    f = lambda a: mx.nd.contrib.count_sketch(a, hs, ss, out_dim=out_dim, processing_batch_size=4)
    head = rng.normal(size=shape[:-1] + (out_dim,))
    y, g = _grad(f, x, head)
    np.testing.assert_allclose(y, _sketch(x, h, s, out_dim), rtol=1e-12, atol=1e-12)
    # MXNet's GPU test: grad[i, j] = head[i, h[j]] * s[j]
    np.testing.assert_allclose(g, head[..., h[0].astype(int)] * s[0], rtol=1e-12, atol=1e-12)
    if len(shape) == 2:
        np.testing.assert_allclose(g, _numeric_grad(f, x, head), rtol=1e-6, atol=1e-6)


def test_count_sketch_hash_arrays_get_no_gradient():
    x, h, s = mx.nd.ones((2, 3)), mx.nd.array([[0, 1, 1]]), mx.nd.array([[1, -1, 1]])
    for a in (x, h, s):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.count_sketch(x, h, s, out_dim=2)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [[1, -1, 1], [1, -1, 1]])
    assert not h.grad.asnumpy().any() and not s.grad.asnumpy().any()


def test_symbol_api():
    data = mx.sym.Variable('data')
    f = mx.sym.contrib.fft(data, compute_size=64, name='f')
    assert f.list_arguments() == ['data']
    _, out_shapes, _ = f.infer_shape(data=(2, 3, 5))
    assert out_shapes == [(2, 3, 10)]
    g = mx.sym.contrib.ifft(f, name='g')
    _, out_shapes, _ = g.infer_shape(data=(4, 5))
    assert out_shapes == [(4, 5)]
    x = np.arange(20.0).reshape(4, 5)
    ex = g.bind(mx.cpu(), {'data': mx.nd.array(x)})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), 5 * x, rtol=1e-5, atol=1e-4)

    cs = mx.sym.contrib.count_sketch(data, mx.sym.Variable('h'), mx.sym.Variable('s'), out_dim=3)
    assert cs.list_arguments() == ['data', 'h', 's']
    arg_shapes, out_shapes, _ = cs.infer_shape(data=(5, 4))
    assert arg_shapes == [(5, 4), (1, 4), (1, 4)] and out_shapes == [(5, 3)]


def test_operators_are_registered_under_mxnet_names():
    for name in ('_contrib_fft', '_contrib_ifft', '_contrib_count_sketch'):
        assert hasattr(mx.nd, name) and hasattr(mx.sym, name)
    for name in ('fft', 'ifft', 'count_sketch'):
        assert hasattr(mx.nd.contrib, name) and hasattr(mx.sym.contrib, name)


@pytest.mark.parametrize(
    'call, words',
    [
        (lambda: mx.nd.contrib.ifft(mx.nd.ones((2, 3))), ['_contrib_ifft', 'even', '[2, 3]']),
        (lambda: mx.nd.contrib.fft(mx.nd.ones((2, 4)), compute_size=0), ['_contrib_fft', 'compute_size', 'positive']),
        (lambda: mx.nd.contrib.fft(mx.nd.ones((2, 4), dtype='int32')), ['_contrib_fft', 'int32']),
        (
            lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 2)), mx.nd.array([[0, 5]]), mx.nd.ones((1, 2)), out_dim=5),
            ['_contrib_count_sketch', '`h`', '5', '[0, 5)'],
        ),
        (
            lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 2)), mx.nd.array([[0, -1]]), mx.nd.ones((1, 2)), out_dim=5),
            ['_contrib_count_sketch', '`h`', '-1'],
        ),
        (
            lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 3)), mx.nd.zeros((1, 2)), mx.nd.ones((1, 3)), out_dim=5),
            ['_contrib_count_sketch', '`h`', '[1, 3]'],
        ),
        (
            lambda: mx.nd.contrib.count_sketch(
                mx.nd.ones((2, 2), dtype='float16'), mx.nd.zeros((1, 2), dtype='float16'),
                mx.nd.ones((1, 2), dtype='float16'), out_dim=5),
            ['_contrib_count_sketch', 'float16'],
        ),
        (
            lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 2)), mx.nd.zeros((1, 2)), mx.nd.ones((1, 2)), out_dim=0),
            ['out_dim', 'positive'],
        ),
    ],
)
def test_bad_input_is_a_clear_error(call, words):
    with pytest.raises(mx.base.MXNetError) as info:
        call()
    for w in words:
        assert w in str(info.value)
