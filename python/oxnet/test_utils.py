"""Helpers for writing tests against oxnet, with the names and semantics of
MXNet 1.x's ``mxnet.test_utils`` so existing test suites run with
``import oxnet as mx``::

    from oxnet.test_utils import assert_almost_equal, rand_ndarray, rand_shape_nd

    x = rand_ndarray(rand_shape_nd(3))
    assert_almost_equal(x * 2, x.asnumpy() * 2)

What is here: the default context and dtype, per-dtype tolerances,
closeness checks with readable mismatch reports, random shapes and arrays,
environment-variable helpers, numeric gradients of operators and callables,
and the engine's operator checker (:func:`check_op`).

oxnet arrays are dense only: helpers that build sparse arrays raise, and
the sparse-only helpers of the reference are not provided. There is no GPU
backend in this build, so :func:`list_gpus` is empty. Helpers that need
symbols and executors live in their own section further down.
"""

import bz2  # noqa: F401  (MXNet's module exports these to `import *`)
import errno  # noqa: F401
import functools
import gzip  # noqa: F401
import json  # noqa: F401
import logging  # noqa: F401
import numbers
import os
import platform
import struct  # noqa: F401
import sys
import time  # noqa: F401
import traceback  # noqa: F401
import zipfile  # noqa: F401
from collections import OrderedDict  # noqa: F401
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd  # noqa: F401
import numpy.testing as npt  # noqa: F401

import oxnet as mx  # noqa: F401  (the package is importing this module: names resolve at use)

from . import _oxnet, autograd
from .base import MXNetError
from .context import Context, current_context, num_gpus
from .ndarray import NDArray, array
from .runtime import Features  # noqa: F401
from .util import getenv, setenv, use_np  # noqa: F401


def __getattr__(name):
    # ``ss`` (scipy.stats, as MXNet's test_utils names it) is imported on
    # first use: scipy costs 1.5 s, and ``import oxnet`` imports this module
    if name == "ss":
        try:
            import scipy.stats as stats  # pylint: disable=import-outside-toplevel
        except ImportError:  # scipy is optional: only the distribution checks need it
            stats = None
        globals()["ss"] = stats
        return stats
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Like MXNet's module, this one has no ``__all__``: ``from mxnet.test_utils
# import *`` hands suites every public name, ``mx`` and ``np`` included, and
# suites rely on that.

# The name tolerance tables use for bfloat16, which numpy has no dtype for
# (an oxnet bfloat16 array reports its dtype as this string).
_BFLOAT16 = "bfloat16"


def _np(x):
    """``x`` as a numpy array (bfloat16 NDArrays are widened to float32)."""
    if isinstance(x, NDArray):
        if x.dtype == _BFLOAT16:
            x = x.astype("float32")
        return x.asnumpy()
    return np.asarray(x)


def _as_ndarray(x):
    """``x`` as an NDArray, keeping a numpy array's dtype (float64 stays float64)."""
    if isinstance(x, NDArray):
        return x
    x = np.asarray(x)
    return array(x, dtype=x.dtype)


# ---------------------------------------------------------------------------
# Contexts, dtypes and tolerances
# ---------------------------------------------------------------------------


def default_context():
    """The context tests run on: the current default context of this thread
    (``mx.cpu()`` unless :func:`set_default_context` or a ``with ctx:``
    block changed it)."""
    return current_context()


def set_default_context(ctx):
    """Makes ``ctx`` (an ``mx.Context``, e.g. ``mx.cpu()``) the default
    context of this thread, as :func:`default_context` and
    ``mx.current_context()`` then report it."""
    if not isinstance(ctx, Context):
        raise TypeError(f"set_default_context needs an mx.Context such as mx.cpu(), got {ctx!r}")
    Context._default_ctx.value = ctx  # pylint: disable=protected-access


def default_dtype():
    """The dtype random test data is generated in: ``numpy.float32``."""
    return np.float32


# Integer and boolean types compare exactly.
_EXACT_TYPES = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


def _tolerances(float16, float32, float64, bfloat16):
    table = {np.dtype(np.float16): float16, np.dtype(np.float32): float32, np.dtype(np.float64): float64,
             _BFLOAT16: bfloat16}
    table.update({np.dtype(t): 0 for t in _EXACT_TYPES})
    return table


def default_rtols():
    """Relative tolerance per dtype used when a comparison is given none:
    a dict from ``numpy.dtype`` (and ``'bfloat16'``) to a float. Integer and
    boolean types compare exactly."""
    return _tolerances(1e-2, 1e-4, 1e-5, 5e-2)


def default_atols():
    """Absolute tolerance per dtype used when a comparison is given none:
    a dict from ``numpy.dtype`` (and ``'bfloat16'``) to a float. Integer and
    boolean types compare exactly."""
    return _tolerances(1e-1, 1e-3, 1e-20, 1e-1)


def default_numeric_eps():
    """Finite-difference step per floating dtype for numeric gradients
    (powers of two, so adding the step to an input loses no bits)."""
    return {
        np.dtype(np.float16): 2.0 ** -6,
        np.dtype(np.float32): 2.0 ** -9,
        np.dtype(np.float64): 2.0 ** -14,
    }


def effective_dtype(dat):
    """The dtype whose tolerances apply when comparing ``dat`` (a numpy
    array, an NDArray or anything with a ``dtype``): its own dtype, as a
    ``numpy.dtype`` (``'bfloat16'`` for bfloat16 arrays). oxnet runs no
    reduced-precision (TF32) math behind float32, so nothing is demoted."""
    dtype = dat.dtype
    if isinstance(dtype, str) and dtype == _BFLOAT16:
        return _BFLOAT16
    return np.dtype(dtype)


def _default_for(dtype, table):
    """``table[dtype]``, falling back on the entry for a type of the same kind."""
    if dtype in table:
        return table[dtype]
    kind = getattr(dtype, "kind", "f")
    if kind in "biu":
        return 0
    if kind == "c":
        return table[np.dtype(np.float64) if dtype.itemsize >= 16 else np.dtype(np.float32)]
    return table[np.dtype(np.float64)]


def get_tolerance(dat, tol, default_tol):
    """The tolerance for comparing ``dat``: ``tol`` itself when it is a
    number; otherwise the entry of the dict ``tol`` (or of ``default_tol``
    when ``tol`` is None or lacks one) for ``dat``'s effective dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    given = {} if tol is None else {_dtype_key(k): v for k, v in tol.items()}
    if dtype in given:
        return given[dtype]
    return _default_for(dtype, default_tol)


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` with ``y``: the given numbers, or
    for None (or a dict by dtype) the looser of the two arrays' per-dtype
    defaults. Python numbers count as numpy scalars."""
    if isinstance(x, numbers.Number):
        x = np.array(x)
    if isinstance(y, numbers.Number):
        y = np.array(y)
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol``, or the default absolute tolerance of ``dtype`` when it is None."""
    return _default_for(_dtype_key(dtype), default_atols()) if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol``, or the default relative tolerance of ``dtype`` when it is None."""
    return _default_for(_dtype_key(dtype), default_rtols()) if rtol is None else rtol


def get_etol(etol=None):
    """``etol`` (the fraction of elements allowed to mismatch), 0 when None."""
    return 0 if etol is None else etol


def _dtype_key(dtype):
    return _BFLOAT16 if isinstance(dtype, str) and dtype == _BFLOAT16 else np.dtype(dtype)


# ---------------------------------------------------------------------------
# Random data (in their own module; re-exported here)
# ---------------------------------------------------------------------------

from ._random_data import (  # noqa: E402  pylint: disable=wrong-import-position
    assign_each,
    assign_each2,
    create_2d_tensor,
    create_vector,
    get_identity_mat,
    get_identity_mat_batch,
    new_matrix_with_real_eigvals_2d,
    new_matrix_with_real_eigvals_nd,
    new_orthonormal_matrix_2d,
    new_sym_matrix_with_real_eigvals_2d,
    new_sym_matrix_with_real_eigvals_nd,
    rand_coord_2d,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    random_arrays,
    random_sample,
    random_uniform_arrays,
    shuffle_csr_column_indices,
)


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduces the numpy array ``dat`` with ``numpy_reduce_func`` (``np.sum``,
    ``np.max``, ...) over ``axis`` (an int, a sequence of ints, or None for
    all axes), one axis at a time; ``keepdims`` keeps the reduced axes with
    size 1. Negative axes count from the end."""
    ndim = np.ndim(dat)
    if axis is None:
        axes = list(range(ndim))
    elif isinstance(axis, numbers.Integral):
        axes = [int(axis)]
    else:
        axes = [int(a) for a in axis]
    axes = sorted({a + ndim if a < 0 else a for a in axes})
    ret = dat
    for a in reversed(axes):
        ret = numpy_reduce_func(ret, axis=a)
    if keepdims:
        kept = list(np.shape(dat))
        for a in axes:
            kept[a] = 1
        ret = np.reshape(ret, tuple(kept))
    return ret


def same(a, b):
    """Whether ``a`` and ``b`` (numpy arrays or NDArrays) have the same
    shape and exactly the same values."""
    return np.array_equal(_np(a), _np(b))


def same_array(array1, array2):
    """Whether the NDArrays ``array1`` and ``array2`` share memory: adds 1
    to ``array1`` in place, looks whether ``array2`` changed with it, and
    subtracts the 1 again."""
    array1 += 1
    try:
        shared = same(array1, array2)
    finally:
        array1 -= 1
    return shared and same(array1, array2)


def checkShapes(a, b):  # pylint: disable=invalid-name
    """Raises AssertionError unless ``a`` and ``b`` have the same shape."""
    if np.shape(a) != np.shape(b):
        raise AssertionError(f"a.shape = {np.shape(a)} and b.shape = {np.shape(b)} are not equal")


def locationError(a, b, index, names, maxError=False):  # pylint: disable=invalid-name
    """A line naming the element at ``index`` in both ``a`` and ``b``, as
    the mismatch reports print it."""
    which = "maximum error" if maxError else "error"
    return f"Location of {which}: {tuple(int(i) for i in index)}, {names[0]}={a[index]!s}, {names[1]}={b[index]!s}"


def _scalar_tol(a, b, tol, table):
    """A numeric tolerance from None (the float64 default), a number, or a dict by dtype."""
    if tol is None or isinstance(tol, numbers.Number):
        return _default_for(np.dtype(np.float64), table) if tol is None else tol
    return max(get_tolerance(a, tol, table), get_tolerance(b, tol, table))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``a`` and ``b`` (numpy arrays, NDArrays or numbers) are
    element-wise close: ``|a - b| <= atol + rtol * |b|`` everywhere.

    None tolerances mean the float64 defaults (rtol 1e-5, atol 1e-20);
    a dict picks per dtype. ``equal_nan`` counts NaNs in the same place as
    equal; without ``use_broadcast`` differing shapes raise AssertionError.
    """
    a, b = _np(a), _np(b)
    if not use_broadcast:
        checkShapes(a, b)
    rtol = _scalar_tol(a, b, rtol, default_rtols())
    atol = _scalar_tol(a, b, atol, default_atols())
    return bool(np.all(_close(a, b, rtol, atol, equal_nan)))


def _close(a, b, rtol, atol, equal_nan):
    """Element-wise closeness, exact for integers and booleans when both
    tolerances are 0."""
    if a.dtype.kind in "biu" and b.dtype.kind in "biu" and rtol == 0 and atol == 0:
        return np.equal(a, b)
    a = a.astype(np.float64) if a.dtype.kind in "biu" else a
    b = b.astype(np.float64) if b.dtype.kind in "biu" else b
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _violations(a, b, rtol, atol, equal_nan):
    """Broadcast ``a`` and ``b``, and for each element how many times the
    tolerance its difference is (0 where close, inf for a NaN mismatch)."""
    a, b = np.broadcast_arrays(a, b)
    close = _close(a, b, rtol, atol, equal_nan)
    fa = a.astype(np.float64) if a.dtype.kind in "biu" else a
    fb = b.astype(np.float64) if b.dtype.kind in "biu" else b
    with np.errstate(all="ignore"):
        diff = np.where(fa == fb, 0.0, np.abs(fa - fb))
        ratio = diff / (atol + rtol * np.abs(fb) + 1e-20)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    ratio = np.where(close, 0.0, np.maximum(ratio, np.nextafter(1.0, 2.0)))
    return a, b, np.asarray(ratio, dtype=np.float64), close


def _mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches, allowed_rate=None):
    """The AssertionError message for arrays that are not close, or None
    when they are (or when their mismatch rate is within ``allowed_rate``)."""
    a, b, ratio, close = _violations(a, b, rtol, atol, equal_nan)
    bad = int(close.size - np.count_nonzero(close))
    if bad == 0 or (allowed_rate is not None and bad / close.size <= allowed_rate):
        return None
    to_print, to_find = mismatches
    flat = ratio.reshape(-1)
    limit = bad if to_find <= 0 else min(bad, to_find)
    worst = np.argsort(-flat, kind="stable")[:limit]
    lines = [
        f"Error {flat[worst[0]]:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
        f"(mismatch {100.0 * bad / close.size:f}%: {bad} of {close.size} elements).",
        locationError(a, b, np.unravel_index(worst[0], ratio.shape), names, maxError=True),
    ]
    if to_print > 0:
        lines.append(f"Largest mismatches (error is |{names[0]} - {names[1]}| / (atol + rtol * |{names[1]}|)):")
        for rank, pos in enumerate(worst[:to_print], 1):
            index = np.unravel_index(pos, ratio.shape)
            lines.append(f"{rank:3d}: Error {flat[pos]:f}  {locationError(a, b, index, names)}")
        if bad > min(to_print, limit):
            lines.append(f"     ... {bad - min(to_print, limit)} more")
    with np.printoptions(threshold=20, edgeitems=3, suppress=True):
        lines.append(f" {names[0]}: {a!r}")
        lines.append(f" {names[1]}: {b!r}")
    return "\n".join(lines)


def _prepare_pair(a, b, use_broadcast):
    a, b = _np(a), _np(b)
    if not use_broadcast:
        checkShapes(a, b)
    else:
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise AssertionError(f"shapes {a.shape} and {b.shape} cannot be compared: not broadcastable") from None
    return a, b


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raises AssertionError unless ``a`` and ``b`` are element-wise close:
    ``|a - b| <= atol + rtol * |b|``.

    Parameters
    ----------
    a, b : NDArray, numpy array or number
    rtol, atol : float, dict of dtype -> float, or None
        None (or a dict without the dtype) means the looser of the two
        arrays' defaults for their dtypes (:func:`default_rtols`,
        :func:`default_atols`): 1e-4/1e-3 for float32, 1e-5/1e-20 for
        float64, exact for integers.
    names : (str, str)
        What the message calls ``a`` and ``b``.
    equal_nan : bool
        Whether NaNs in the same place count as equal.
    use_broadcast : bool
        Whether arrays of different but broadcastable shapes are compared
        (otherwise differing shapes fail).
    mismatches : (int, int)
        How many of the worst mismatches the message lists, and how many
        are ranked (0 or less: all).

    The message gives the largest error relative to the tolerance, the
    share of mismatching elements, and the index and both values of the
    worst ones. Boolean arrays compare exactly.
    """
    a, b = _prepare_pair(a, b, use_broadcast)
    rtol, atol = get_tols(a, b, rtol, atol)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        rtol, atol = 0, 0
    message = _mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches)
    if message is not None:
        raise AssertionError(message)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """:func:`assert_almost_equal` with numpy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like :func:`assert_almost_equal`, but passes while the fraction of
    mismatching elements is at most ``etol`` (default 0: none allowed,
    which is exactly :func:`assert_almost_equal`)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan, mismatches=mismatches)
        return
    a, b = _prepare_pair(a, b, True)
    rtol, atol = get_tols(a, b, rtol, atol)
    message = _mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches, allowed_rate=etol)
    if message is not None:
        raise AssertionError(f"mismatch rate exceeds etol={etol}: {message}")


def _zero_nans(a, b):
    a = np.array(_np(a), copy=True)
    b = np.array(_np(b), copy=True)
    a, b = np.broadcast_arrays(a, b)
    a, b = a.copy(), b.copy()
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        nan = np.isnan(a) | np.isnan(b)
        a[nan] = 0
        b[nan] = 0
    return a, b


def almost_equal_ignore_nan(a, b, rtol=None, atol=None):
    """:func:`almost_equal` after setting to 0 every position where either
    array has a NaN."""
    a, b = _zero_nans(a, b)
    return almost_equal(a, b, rtol, atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """:func:`assert_almost_equal` after setting to 0 every position where
    either array has a NaN."""
    a, b = _zero_nans(a, b)
    assert_almost_equal(a, b, rtol, atol, names)


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """:func:`assert_almost_equal` on each pair of arrays of two (nested)
    tuples; nothing when either is None."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def collapse_sum_like(a, shape):
    """Sums the numpy array ``a`` down to ``shape`` (which broadcasts to
    ``a.shape``): over leading axes ``shape`` lacks and over axes where
    ``shape`` has size 1 — the gradient of a broadcast."""
    assert len(a.shape) >= len(shape), f"cannot collapse shape {a.shape} to {tuple(shape)}"
    shape = tuple(shape)
    if a.size == 0 or int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, size in enumerate(shape):
        if size != a.shape[lead + i]:
            assert size == 1, f"shape {shape} does not broadcast to {a.shape}"
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


# ---------------------------------------------------------------------------
# Test control: exceptions, retries, environment, devices
# ---------------------------------------------------------------------------


def assert_exception(f, exception_type, *args, **kwargs):
    """Calls ``f(*args, **kwargs)`` and raises AssertionError unless it
    raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise {exception_type}")


def retry(n):
    """Decorator for stochastic tests: runs the test up to ``n`` times,
    passing as soon as one run passes; the last run's AssertionError
    propagates. Other exceptions propagate at once."""
    assert n > 0, "retry needs n > 0"

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
            return None

        return wrapper

    return decorate


@contextmanager
def environment(*args):
    """Sets environment variables for the body of a ``with`` block and
    restores them afterwards, even when it raises.

    ``environment(name, value)`` sets one variable; ``environment({name:
    value, ...})`` several. A value of None unsets the variable; variables
    that were unset before are unset again on exit. The engine reads the
    process environment, so it sees the values inside the block.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env_vars = dict(args[0])
    else:
        assert len(args) == 2, "environment() takes one dict, or a variable name and its value"
        env_vars = {args[0]: args[1]}
    snapshot = {name: os.environ.get(name) for name in env_vars}

    def apply(settings):
        for name, value in settings.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value if isinstance(value, str) else str(value)

    apply(env_vars)
    try:
        yield
    finally:
        _oxnet.waitall()
        apply(snapshot)


def set_env_var(key, val, default_val=""):
    """Sets the environment variable ``key`` to ``val`` and returns its
    previous value (``default_val`` when it was unset)."""
    previous = os.environ.get(key, default_val)
    os.environ[key] = val
    return previous


@contextmanager
def discard_stderr():
    """Silences standard error for the body of a ``with`` block: file
    descriptor 2 (what native code writes to) and the descriptor behind
    ``sys.stderr`` when that is another one."""
    fds = [2]
    try:
        if sys.stderr.fileno() != 2:
            fds.append(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        pass  # sys.stderr is not backed by a file
    _flush_stderr()
    saved = [os.dup(fd) for fd in fds]
    try:
        with open(os.devnull, "w", encoding="utf-8") as devnull:
            for fd in fds:
                os.dup2(devnull.fileno(), fd)
            try:
                yield
            finally:
                _flush_stderr()
                for fd, old in zip(fds, saved):
                    os.dup2(old, fd)
    finally:
        for old in saved:
            os.close(old)


def _flush_stderr():
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


class DummyIter:
    """An iterator that returns the first batch of ``real_iter`` forever
    (for speed tests). Copies ``provide_data``, ``provide_label`` and
    ``batch_size`` from ``real_iter`` when it has them; never raises
    StopIteration."""

    def __init__(self, real_iter):
        self.real_iter = real_iter
        self.provide_data = getattr(real_iter, "provide_data", None)
        self.provide_label = getattr(real_iter, "provide_label", None)
        self.batch_size = getattr(real_iter, "batch_size", None)
        self.the_batch = next(iter(real_iter))

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        """The first batch of the real iterator, again."""
        return self.the_batch

    def reset(self):
        """Nothing to reset: every call returns the same batch."""

    def iter_next(self):
        """Always True: there is always a next batch."""
        return True


def list_gpus():
    """The GPU ids tests can use (``[]`` on a machine without a GPU)."""
    return list(range(num_gpus()))


def is_cd_run():
    """Whether the tests run in a continuous-delivery job (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", "0") == "1"


def is_aarch64_run():
    """Whether the tests run on an aarch64 machine."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """Whether operators generated by TVM are available: never in oxnet."""
    return False


def is_op_runnable():
    """Whether operators can run on the default context: always, as oxnet
    runs every operator on the CPU (it has no TVM-generated operators that
    need a minimum GPU architecture)."""
    return True


# ---------------------------------------------------------------------------
# Numeric gradients and operator checks (NDArray-level)
# ---------------------------------------------------------------------------


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


def check_numeric_gradient(fn=None, location=None, kwargs=None, numeric_eps=1e-4, rtol=1e-2, atol=1e-4,
                           grad_nodes=None, aux_states=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=None, sym=None):
    """Checks the gradients autograd computes for ``fn`` against central
    differences.

    ``fn`` is an operator name (called as ``nd.<fn>(*location, **kwargs)``),
    a callable taking NDArrays and returning one NDArray, or a Symbol (then
    ``location`` gives its arguments as a list or dict, the third argument
    is its aux states as in MXNet, and the bound executor's gradients are
    checked; MXNet's keyword ``sym=`` names it too). ``location``
    lists the inputs (NDArrays or numpy arrays; use float64 for tight
    checks). ``grad_nodes`` limits the check to those input positions.
    Returns the largest absolute difference found.
    """
    from . import ndarray as nd  # pylint: disable=import-outside-toplevel
    from .symbol import Symbol  # pylint: disable=import-outside-toplevel

    if sym is not None:
        fn = sym
    if fn is None or location is None:
        raise TypeError("check_numeric_gradient needs the symbol (or function) and the location")
    del grad_stype_dict, dtype
    if isinstance(fn, Symbol):
        # MXNet's order for symbols: (sym, location, aux_states, numeric_eps, ...)
        aux = aux_states if aux_states is not None else kwargs
        return _check_symbol_numeric_gradient(fn, location, aux, numeric_eps, rtol, atol, grad_nodes,
                                              use_forward_train, ctx)
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


# ---------------------------------------------------------------------------
# Symbolic checks (symbols and executors)
# ---------------------------------------------------------------------------


# (in their own module; re-exported here, under MXNet's names)
from ._symbolic_checks import (  # noqa: E402  pylint: disable=wrong-import-position
    _check_symbol_numeric_gradient,
    check_consistency,
    check_symbolic_backward,
    check_symbolic_forward,
    simple_forward,
)

# Statistical checks of random generators, and checks of optimizers,
# symbols and Gluon blocks (their own modules, MXNet's names).
from ._distribution_checks import (  # noqa: E402,F401  pylint: disable=wrong-import-position
    chi_square_check,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)
from ._model_checks import (  # noqa: E402,F401  pylint: disable=wrong-import-position
    check_gluon_hybridize_consistency,
    check_speed,
    compare_optimizer,
    create_sparse_array,
    create_sparse_array_zd,
    download,
    rand_sparse_ndarray,
    same_symbol_structure,
)


def get_cuda_compute_capability(ctx):
    """The CUDA compute capability of ``ctx``'s GPU as an int (90 for 9.0)."""
    from . import _oxnet

    if ctx.device_type != "gpu":
        raise MXNetError(f"{ctx} is not a GPU")
    major, minor = _oxnet.gpu_compute_capability(ctx.device_id)
    return major * 10 + minor


# ----- data sets and models for examples and tests (MXNet's downloaders) -----------------------------------------
#
# Same files, folders and return values as MXNet 1.9.1's helpers; the files
# come through ``mx.gluon.utils.download`` (urllib: http, https, ftp and
# file:// URLs). A file already in place is used as it is: nothing is
# fetched. The URLs are module constants, so a mirror can be set before a
# call (``mx.test_utils._MNIST_URL = "file:///mirror/mnist/"``).

_MNIST_URL = "http://data.mxnet.io/data/mnist/"
_MNIST_UBYTE_URL = "http://data.mxnet.io/mxnet/data/mnist.zip"
_MNIST_PKL_URL = "http://deeplearning.net/data/mnist/mnist.pkl.gz"
_CIFAR10_URL = "http://data.mxnet.io/mxnet/data/cifar10.zip"
_MODEL_BASE_URL = "http://data.mxnet.io/models/"
_DATA_RETRIES = 3

_MNIST_UBYTE_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                      "t10k-labels-idx1-ubyte")
_CIFAR10_FILES = ("cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst")
_MODELS = {  # name: (symbol file, params file) under _MODEL_BASE_URL
    "imagenet1k-inception-bn": ("imagenet/inception-bn/Inception-BN-symbol.json",
                                "imagenet/inception-bn/Inception-BN-0126.params"),
    "imagenet1k-resnet-18": ("imagenet/resnet/18-layers/resnet-18-symbol.json",
                             "imagenet/resnet/18-layers/resnet-18-0000.params"),
    "imagenet1k-resnet-34": ("imagenet/resnet/34-layers/resnet-34-symbol.json",
                             "imagenet/resnet/34-layers/resnet-34-0000.params"),
    "imagenet1k-resnet-50": ("imagenet/resnet/50-layers/resnet-50-symbol.json",
                             "imagenet/resnet/50-layers/resnet-50-0000.params"),
    "imagenet1k-resnet-101": ("imagenet/resnet/101-layers/resnet-101-symbol.json",
                              "imagenet/resnet/101-layers/resnet-101-0000.params"),
    "imagenet1k-resnet-152": ("imagenet/resnet/152-layers/resnet-152-symbol.json",
                              "imagenet/resnet/152-layers/resnet-152-0000.params"),
    "imagenet1k-resnext-50": ("imagenet/resnext/50-layers/resnext-50-symbol.json",
                              "imagenet/resnext/50-layers/resnext-50-0000.params"),
    "imagenet1k-resnext-101": ("imagenet/resnext/101-layers/resnext-101-symbol.json",
                               "imagenet/resnext/101-layers/resnext-101-0000.params"),
    "imagenet1k-resnext-101-64x4d": ("imagenet/resnext/101-layers/resnext-101-64x4d-symbol.json",
                                     "imagenet/resnext/101-layers/resnext-101-64x4d-0000.params"),
    "imagenet11k-resnet-152": ("imagenet-11k/resnet-152/resnet-152-symbol.json",
                               "imagenet-11k/resnet-152/resnet-152-0000.params"),
    "imagenet11k-place365ch-resnet-152": ("imagenet-11k-place365-ch/resnet-152-symbol.json",
                                          "imagenet-11k-place365-ch/resnet-152-0000.params"),
    "imagenet11k-place365ch-resnet-50": ("imagenet-11k-place365-ch/resnet-50-symbol.json",
                                         "imagenet-11k-place365-ch/resnet-50-0000.params"),
}


def _fetch(caller, url, fname, expected=None):
    """``fname`` as it is when present, else downloaded from ``url``; when that
    fails, an OSError names the URL and the files that were expected
    (``expected``, default ``[fname]``)."""
    if os.path.exists(fname):
        return fname
    from .gluon.utils import download as _download

    try:
        return _download(url, path=fname, retries=_DATA_RETRIES)
    except Exception as e:  # pylint: disable=broad-except
        files = ", ".join(expected or [fname])
        raise OSError(f"{caller}: {files} not found, and downloading {url} to {fname} failed ({e}). "
                      "Put the files in place (or give a reachable mirror) to run offline.") from e


def _missing(folder, names):
    return [os.path.join(folder, n) for n in names if not os.path.exists(os.path.join(folder, n))]


def _fetch_zip(caller, url, folder, zip_name, names):
    """Makes sure ``folder/names`` exist, extracting the zip archive
    ``folder/zip_name`` (downloaded from ``url`` when absent) when some do not."""
    os.makedirs(folder, exist_ok=True)
    missing = _missing(folder, names)
    if not missing:
        return
    archive = _fetch(caller, url, os.path.join(folder, zip_name), expected=missing)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(folder)
    still = _missing(folder, names)
    if still:
        raise OSError(f"{caller}: {archive} (from {url}) does not hold {', '.join(still)}")


def get_mnist():
    """Loads MNIST from the four gzipped IDX files of ``_MNIST_URL``
    (``train-images-idx3-ubyte.gz`` ...), downloaded into the current folder
    when absent. Returns ``{'train_data', 'train_label', 'test_data',
    'test_label'}``: images float32 of shape (N, 1, rows, cols) scaled to
    [0, 1] (divided by 255), labels int8 of shape (N,)."""

    def read(label_name, image_name):
        with gzip.open(_fetch("get_mnist", _MNIST_URL + label_name, label_name)) as flbl:
            magic, count = struct.unpack(">II", flbl.read(8))
            label = np.frombuffer(flbl.read(), dtype=np.int8).copy()
        with gzip.open(_fetch("get_mnist", _MNIST_URL + image_name, image_name)) as fimg:
            magic_img, count_img, rows, cols = struct.unpack(">IIII", fimg.read(16))
            pixels = np.frombuffer(fimg.read(), dtype=np.uint8)
        if magic != 2049 or magic_img != 2051 or count != len(label) or count_img != len(label) \
                or pixels.size != count * rows * cols:
            raise ValueError(f"get_mnist: {label_name} / {image_name} are not matching MNIST IDX files")
        image = pixels.reshape(count, 1, rows, cols).astype(np.float32) / 255
        return label, image

    train_lbl, train_img = read("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz")
    test_lbl, test_img = read("t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")
    return {"train_data": train_img, "train_label": train_lbl, "test_data": test_img, "test_label": test_lbl}


def get_mnist_pkl():
    """Downloads MNIST as ``data/mnist.pkl.gz`` (from ``_MNIST_PKL_URL``) unless
    it is there; returns None."""
    os.makedirs("data", exist_ok=True)
    _fetch("get_mnist_pkl", _MNIST_PKL_URL, os.path.join("data", "mnist.pkl.gz"))


def get_mnist_ubyte():
    """Makes sure the four MNIST IDX files are in ``data/``
    (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
    ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``); when one is
    missing, ``data/mnist.zip`` (downloaded from ``_MNIST_UBYTE_URL`` if
    absent) is extracted there. Returns None."""
    _fetch_zip("get_mnist_ubyte", _MNIST_UBYTE_URL, "data", "mnist.zip", _MNIST_UBYTE_FILES)


def get_cifar10():
    """Makes sure ``data/cifar/`` holds ``train.rec``, ``test.rec``,
    ``train.lst`` and ``test.lst``; when one is missing, ``data/cifar10.zip``
    (downloaded from ``_CIFAR10_URL`` if absent) is extracted into ``data/``.
    Returns None."""
    _fetch_zip("get_cifar10", _CIFAR10_URL, "data", "cifar10.zip", _CIFAR10_FILES)


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """``(train, val)`` :class:`mx.io.MNISTIter` over the files of
    :func:`get_mnist_ubyte` (fetched first when absent): the training one
    shuffled, both split into ``num_parts`` parts of which ``part_index`` is
    read. Batches are flat (batch, rows*cols) unless ``input_shape`` has 3
    dimensions, (batch, 1, rows, cols) then."""
    from .io import MNISTIter

    get_mnist_ubyte()
    flat = len(input_shape) != 3
    train = MNISTIter(image=os.path.join("data", "train-images-idx3-ubyte"),
                      label=os.path.join("data", "train-labels-idx1-ubyte"), batch_size=batch_size,
                      shuffle=True, flat=flat, num_parts=num_parts, part_index=part_index)
    val = MNISTIter(image=os.path.join("data", "t10k-images-idx3-ubyte"),
                    label=os.path.join("data", "t10k-labels-idx1-ubyte"), batch_size=batch_size,
                    flat=flat, num_parts=num_parts, part_index=part_index)
    return train, val


def get_zip_data(data_dir, url, data_origin_name):
    """Unless ``data_dir/data_origin_name`` exists, downloads the zip archive
    ``url`` there and extracts it into ``data_dir`` (the archive stays, and
    marks the data as in place). Returns None.

    MXNet saves the download under the URL's last part and then opens
    ``data_origin_name``, failing when the two differ; here the archive is
    saved as ``data_origin_name``."""
    archive = os.path.join(data_dir, data_origin_name)
    if os.path.exists(archive):
        return
    os.makedirs(data_dir or ".", exist_ok=True)
    _fetch("get_zip_data", url, archive)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(path=data_dir or ".")


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Unless ``data_dir/data_name`` exists, downloads the bz2 file ``url`` to
    ``data_dir/data_origin_name``, decompresses it into ``data_dir/data_name``
    and removes the compressed file. Returns None."""
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    import shutil

    os.makedirs(data_dir or ".", exist_ok=True)
    archive = _fetch("get_bz2_data", url, os.path.join(data_dir, data_origin_name), expected=[target])
    tmp = target + ".part"
    with bz2.BZ2File(archive, "rb") as src, open(tmp, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.replace(tmp, target)
    os.remove(archive)


def get_im2rec_path(home_env="MXNET_HOME"):
    """The path of the im2rec tool: ``tools/im2rec.py`` (or ``../../tools/im2rec.py``)
    under the folder named by the environment variable ``home_env`` when it
    is set and holds one (MXNet's lookup), else oxnet's own
    ``oxnet/tools/im2rec.py``, run as ``python -m oxnet.tools.im2rec``.
    Raises IOError when there is none."""
    candidates = []
    if home_env in os.environ:
        home = os.environ[home_env]
        candidates += [os.path.join(home, "tools", "im2rec.py"), os.path.join(home, "..", "..", "tools", "im2rec.py")]
    candidates.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "im2rec.py"))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise IOError(f"Could not find path to tools/im2rec.py (looked at {', '.join(candidates)})")


def download_model(model_name, dst_dir="./", meta_info=None):
    """Downloads a model's ``<dst_dir>/<model_name>-symbol.json`` and
    ``-0000.params`` (files already there are kept) from ``meta_info[model_name]
    = {'symbol': url, 'params': url}`` (default: MXNet's ImageNet models under
    ``_MODEL_BASE_URL``). Returns ``(prefix, 0)``, the prefix and epoch to give
    ``mx.model.load_checkpoint``, or ``(None, 0)`` for an unknown model."""
    if meta_info is None:
        meta_info = {name: {"symbol": _MODEL_BASE_URL + sym, "params": _MODEL_BASE_URL + params}
                     for name, (sym, params) in _MODELS.items()}
    meta_info = dict(meta_info)
    if model_name not in meta_info:
        return (None, 0)
    meta = dict(meta_info[model_name])
    for key in ("symbol", "params"):
        if key not in meta:
            raise ValueError(f"download_model: meta_info[{model_name!r}] has no {key!r} URL")
    os.makedirs(dst_dir, exist_ok=True)
    prefix = os.path.join(dst_dir, model_name)
    _fetch("download_model", meta["symbol"], prefix + "-symbol.json")
    _fetch("download_model", meta["params"], prefix + "-0000.params")
    return (prefix, 0)
