"""Helpers for testing operators: closeness checks, numeric gradients and
the engine's operator checker."""

import numpy as np

from . import _oxnet, autograd
from .ndarray import NDArray, array

__all__ = ["assert_almost_equal", "almost_equal", "same", "check_numeric_gradient", "check_op", "numeric_grad"]


def _np(x):
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def _as_ndarray(x):
    """``x`` as an NDArray, keeping a numpy array's dtype (float64 stays float64)."""
    if isinstance(x, NDArray):
        return x
    x = np.asarray(x)
    return array(x, dtype=x.dtype)


def same(a, b):
    """Whether ``a`` and ``b`` hold exactly the same values."""
    return np.array_equal(_np(a), _np(b))


def almost_equal(a, b, rtol=1e-5, atol=1e-20, equal_nan=False):
    """Whether ``a`` and ``b`` are element-wise close."""
    return np.allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=1e-5, atol=1e-20, names=("a", "b"), equal_nan=False):
    """Raises AssertionError, naming the worst element, unless ``a`` and ``b`` are close."""
    a, b = _np(a), _np(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan, err_msg=f"{names[0]} vs {names[1]}")


def numeric_grad(fn, inputs, head, eps=1e-4):
    """Central-difference gradients of ``sum(fn(*inputs) * head)`` with
    respect to each input, computed in float64 numpy."""
    base = [_np(x).astype(np.float64) for x in inputs]
    head = np.asarray(head, dtype=np.float64)
    grads = []
    for x in base:
        g = np.zeros_like(x)
        flat = x.reshape(-1)
        gflat = g.reshape(-1)
        for j in range(flat.size):
            orig = flat[j]
            values = []
            for delta in (eps, -eps):
                flat[j] = orig + delta
                args = [array(b, dtype=inputs[k].dtype) for k, b in enumerate(base)]
                values.append(float(np.sum(_np(fn(*args)).astype(np.float64) * head)))
            flat[j] = orig
            gflat[j] = (values[0] - values[1]) / (2 * eps)
        grads.append(g)
    return grads


def check_numeric_gradient(fn, location, kwargs=None, numeric_eps=1e-4, rtol=1e-2, atol=1e-4, grad_nodes=None):
    """Checks the gradients autograd computes for ``fn`` against central
    differences.

    ``fn`` is an operator name (called as ``nd.<fn>(*location, **kwargs)``)
    or a callable taking NDArrays and returning one NDArray. ``location``
    lists the inputs (NDArrays or numpy arrays; use float64 for tight
    checks). ``grad_nodes`` limits the check to those input positions.
    Returns the largest absolute difference found.
    """
    from . import ndarray as nd  # pylint: disable=import-outside-toplevel

    kwargs = kwargs or {}
    if isinstance(fn, str):
        op = getattr(nd, fn)

        def func(*xs):
            return op(*xs, **kwargs)

    else:
        func = fn
    inputs = [_as_ndarray(x) for x in location]
    nodes = range(len(inputs)) if grad_nodes is None else grad_nodes
    variables = [inputs[i].copy() for i in nodes]
    args = list(inputs)
    for i, v in zip(nodes, variables):
        v.attach_grad()
        args[i] = v
    with autograd.record():
        out = func(*args)
    rng = np.random.default_rng(0)
    head = rng.uniform(0.5, 1.5, size=out.shape).astype(np.float64)
    out.backward(array(head, dtype=out.dtype))
    numeric = numeric_grad(func, inputs, head, eps=numeric_eps)
    worst = 0.0
    for i, v in zip(nodes, variables):
        analytic = v.grad.asnumpy().astype(np.float64)
        np.testing.assert_allclose(
            analytic, numeric[i], rtol=rtol, atol=atol, err_msg=f"gradient of input {i}: autograd vs numeric"
        )
        worst = max(worst, float(np.max(np.abs(analytic - numeric[i]), initial=0.0)))
    return worst


def check_op(name, inputs, attrs=None, no_grad=(), eps=None, rtol=None, atol=None, check_grad=True):
    """Runs the engine's operator checker on operator ``name``: inferred
    shapes and dtypes against the outputs, ``req`` write and add, gradients
    against central differences (float64), and malformed calls. Returns
    the largest gradient error; raises MXNetError naming the failed check."""
    arrays = [_as_ndarray(x) for x in inputs]
    return _oxnet.check_op(name, arrays, attrs, list(no_grad), eps, rtol, atol, check_grad)
