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

import functools
import numbers
import os
import platform
import sys
from contextlib import contextmanager

import numpy as np

from . import _oxnet, autograd
from .base import MXNetError
from .context import Context, current_context, num_gpus
from .ndarray import NDArray, array

__all__ = [
    # contexts, dtypes and tolerances
    "default_context", "set_default_context", "default_dtype", "default_rtols", "default_atols",
    "default_numeric_eps", "effective_dtype", "get_tolerance", "get_tols", "get_atol", "get_rtol", "get_etol",
    # random data
    "random_arrays", "random_uniform_arrays", "random_sample", "rand_shape_2d", "rand_shape_3d",
    "rand_shape_nd", "rand_coord_2d", "rand_ndarray", "shuffle_csr_column_indices",
    "create_vector", "create_2d_tensor", "get_identity_mat", "get_identity_mat_batch",
    "assign_each", "assign_each2",
    "new_matrix_with_real_eigvals_2d", "new_matrix_with_real_eigvals_nd", "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d", "new_sym_matrix_with_real_eigvals_nd",
    # comparisons
    "np_reduce", "same", "same_array", "checkShapes", "locationError", "almost_equal", "assert_almost_equal",
    "assert_allclose", "assert_almost_equal_with_err", "almost_equal_ignore_nan",
    "assert_almost_equal_ignore_nan", "compare_ndarray_tuple", "collapse_sum_like",
    # test control
    "assert_exception", "retry", "environment", "set_env_var", "discard_stderr", "DummyIter",
    "list_gpus", "is_cd_run", "is_aarch64_run", "has_tvm_ops", "is_op_runnable",
    # gradients and operator checks
    "numeric_grad", "check_numeric_gradient", "check_op",
    # symbols and executors
    "simple_forward", "check_symbolic_forward", "check_symbolic_backward", "check_consistency",
    # the reference's module leaks numpy into `from mxnet.test_utils import *`; suites rely on it
    "np",
]

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
    Context._default.value = ctx  # pylint: disable=protected-access


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
# Random data
# ---------------------------------------------------------------------------


def random_arrays(*shapes):
    """Standard-normal numpy arrays in :func:`default_dtype`, one per shape
    (``()`` gives a 0-d array). One shape returns the array itself, several
    return a list."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        out.append(np.asarray(np.random.standard_normal(shape)).astype(default_dtype()))
    return out[0] if len(out) == 1 else out


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    """A list of numpy arrays, one per shape, uniform on ``[low, high)`` in
    ``dtype`` (default :func:`default_dtype`)."""
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=shape).astype(dtype) for shape in shapes]


def random_sample(population, k):
    """``k`` distinct elements of the sequence ``population``, in random
    order, as a list (drawn with numpy's global generator)."""
    assert 0 <= k <= len(population), f"cannot pick {k} elements out of {len(population)}"
    picked = list(population)
    np.random.shuffle(picked)
    return picked[:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sizes in ``[1, dim0]`` and ``[1, dim1]``
    (from 0 with ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sizes in ``[1, dim0]``, ``[1, dim1]`` and
    ``[1, dim2]`` (from 0 with ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(np.random.randint(low, d + 1)) for d in (dim0, dim1, dim2))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` axes, each of size in ``[1, dim]``
    (from 0 with ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(s) for s in np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random point ``(x, y)`` with ``x_low <= x < x_high`` and
    ``y_low <= y < y_high`` (numpy int64 values)."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


class _SparseStorageNotSupported(MXNetError, NotImplementedError):
    """A sparse storage type was asked for; oxnet arrays are dense only."""


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random dense NDArray of ``shape``: standard-normal values converted
    to ``dtype`` (float32 by default) on ``ctx`` (default
    :func:`default_context`).

    Only ``stype='default'`` exists in oxnet: ``'csr'`` and ``'row_sparse'``
    raise an MXNetError (also a NotImplementedError) saying so. ``density``,
    ``modifier_func``, ``shuffle_csr_indices`` and ``distribution`` only
    matter for sparse arrays and are ignored.
    """
    del density, modifier_func, shuffle_csr_indices, distribution
    if stype != "default":
        if stype in ("csr", "row_sparse"):
            raise _SparseStorageNotSupported(
                f"rand_ndarray: storage type {stype!r} is not supported: oxnet has no sparse storage, "
                "only dense arrays (stype='default')"
            )
        raise MXNetError(f"rand_ndarray: unknown storage type {stype!r} (oxnet arrays are stype='default')")
    ctx = ctx if ctx is not None else default_context()
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    values = np.asarray(random_arrays(shape))
    return array(values, ctx=ctx, dtype=dtype)


def shuffle_csr_column_indices(csr):
    """Shuffles, in place, the column indices within each row of a CSR
    matrix given as an object with numpy ``indptr`` and ``indices`` (a
    ``scipy.sparse.csr_matrix``, say), to exercise unsorted indices."""
    indptr = np.asarray(csr.indptr)
    for row in range(len(indptr) - 1):
        start, end = int(indptr[row]), int(indptr[row + 1])
        segment = np.array(csr.indices[start:end])
        np.random.shuffle(segment)
        csr.indices[start:end] = segment


def create_vector(size, dtype=np.int64):
    """The NDArray ``[0, 1, ..., size - 1]`` in ``dtype`` (int64 by default)."""
    from . import ndarray as nd  # pylint: disable=import-outside-toplevel

    return nd.arange(0, size, dtype=dtype)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """An NDArray of shape ``(rows, columns)`` whose row ``i`` holds ``i``."""
    from . import ndarray as nd  # pylint: disable=import-outside-toplevel

    column = nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return nd.broadcast_to(column, shape=(rows, columns))


def get_identity_mat(size):
    """The float32 identity matrix of ``size`` x ``size`` as an NDArray."""
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """A batch of two float32 identity matrices, shape ``(2, size, size)``."""
    eye = np.eye(size, dtype=np.float32)
    return array(np.stack([eye, eye]))


def assign_each(the_input, function):
    """A float64 numpy array holding ``function(x)`` for each element ``x``
    of ``the_input`` (a copy of it when ``function`` is None)."""
    the_input = np.asarray(the_input)
    if function is None:
        return np.array(the_input)
    values = [function(v) for v in the_input.reshape(-1)]
    return np.array(values, dtype=np.float64).reshape(the_input.shape)


def assign_each2(input1, input2, function):
    """A float64 numpy array holding ``function(x, y)`` for each pair of
    elements of ``input1`` and ``input2`` (same shapes); a copy of
    ``input1`` when ``function`` is None."""
    input1 = np.asarray(input1)
    if function is None:
        return np.array(input1)
    input2 = np.asarray(input2)
    assert input1.shape == input2.shape, f"shapes differ: {input1.shape} and {input2.shape}"
    values = [function(x, y) for x, y in zip(input1.reshape(-1), input2.reshape(-1))]
    return np.array(values, dtype=np.float64).reshape(input1.shape)


def new_orthonormal_matrix_2d(n):
    """A random ``n`` x ``n`` orthonormal matrix (numpy float64)."""
    q, r = np.linalg.qr(np.random.standard_normal((n, n)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


def new_matrix_with_real_eigvals_2d(n):
    """A random, generally non-symmetric ``n`` x ``n`` matrix with real
    eigenvalues in ``[-10, 10]``, built as ``P^-1 D P`` from a basis ``P``
    whose condition number is below 2 (numpy float64)."""
    basis = new_orthonormal_matrix_2d(n) * np.random.uniform(1.0, 2.0, size=n)
    eigvals = np.diag(np.random.uniform(-10.0, 10.0, size=n))
    return np.linalg.inv(basis) @ eigvals @ basis


def new_matrix_with_real_eigvals_nd(shape):
    """A stack of :func:`new_matrix_with_real_eigvals_2d` matrices of
    ``shape`` (the last two axes equal)."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric ``n`` x ``n`` matrix with eigenvalues in ``[-10, 10]``."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, size=n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A stack of :func:`new_sym_matrix_with_real_eigvals_2d` matrices of
    ``shape`` (the last two axes equal)."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


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
    """The GPU ids tests can use: ``[]``, as this build of oxnet has no GPU backend."""
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


def check_numeric_gradient(fn, location, kwargs=None, numeric_eps=1e-4, rtol=1e-2, atol=1e-4, grad_nodes=None,
                           aux_states=None, use_forward_train=True, ctx=None, grad_stype_dict=None, dtype=None):
    """Checks the gradients autograd computes for ``fn`` against central
    differences.

    ``fn`` is an operator name (called as ``nd.<fn>(*location, **kwargs)``),
    a callable taking NDArrays and returning one NDArray, or a Symbol (then
    ``location`` gives its arguments as a list or dict, the third argument
    is its aux states as in MXNet, and the bound executor's gradients are
    checked). ``location``
    lists the inputs (NDArrays or numpy arrays; use float64 for tight
    checks). ``grad_nodes`` limits the check to those input positions.
    Returns the largest absolute difference found.
    """
    from . import ndarray as nd  # pylint: disable=import-outside-toplevel
    from .symbol import Symbol  # pylint: disable=import-outside-toplevel

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


def _arg_dict(sym, location, what):
    """``location`` (a list in ``list_arguments`` order or a dict) as a dict
    of numpy arrays by argument name."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = [n for n in names if n not in location]
        if missing:
            raise ValueError(f"{what}: no value for argument(s) {', '.join(missing)}")
        return {n: _np(location[n]) for n in names}
    location = list(location)
    if len(location) != len(names):
        raise ValueError(f"{what}: {len(location)} arrays for {len(names)} arguments ({', '.join(names)})")
    return {n: _np(v) for n, v in zip(names, location)}


def _aux_dict(sym, aux_states):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return {}
    if isinstance(aux_states, dict):
        return {n: _np(aux_states[n]) for n in names}
    return {n: _np(v) for n, v in zip(names, aux_states)}


def _bind(sym, ctx, args, aux, grad_req="null", dtype=None, grads=None):
    ctx = ctx or default_context()
    cast = (lambda a: a.astype(dtype)) if dtype is not None else (lambda a: a)
    arg_nd = {k: array(cast(v), ctx=ctx, dtype=cast(v).dtype) for k, v in args.items()}
    aux_nd = {k: array(cast(v), ctx=ctx, dtype=cast(v).dtype) for k, v in aux.items()}
    return sym.bind(ctx, arg_nd, args_grad=grads, grad_req=grad_req, aux_states=aux_nd or None), arg_nd


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Binds ``sym`` to the numpy ``inputs`` (by argument name) and returns
    its output as numpy (a list when it has several)."""
    exe, _ = _bind(sym, ctx, {k: _np(v) for k, v in inputs.items()}, {})
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32):
    """Runs ``sym`` forward (inference mode) on ``location`` and compares
    its outputs with ``expected`` (a list, or a dict by output name).
    Returns the outputs as numpy arrays."""
    args = _arg_dict(sym, location, "check_symbolic_forward")
    exe, _ = _bind(sym, ctx, args, _aux_dict(sym, aux_states), dtype=dtype)
    outputs = exe.forward(is_train=False)
    names = sym.list_outputs()
    if isinstance(expected, dict):
        expected = [expected[n] for n in names]
    if len(expected) != len(outputs):
        raise ValueError(f"check_symbolic_forward: {len(expected)} expected arrays for {len(outputs)} outputs")
    for name, out, want in zip(names, outputs, expected):
        assert_almost_equal(out, want, rtol, atol, names=(f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return [o.asnumpy() for o in outputs]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32):
    """Runs ``sym`` forward (train mode) and backward with ``out_grads`` and
    compares the argument gradients with ``expected`` (a list in argument
    order, or a dict by name, which may leave arguments out). With
    ``grad_req='add'`` the gradient buffers start from random values, which
    the expectation then includes. Returns the gradients by name."""
    del grad_stypes
    args = _arg_dict(sym, location, "check_symbolic_backward")
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    reqs = grad_req if isinstance(grad_req, dict) else {n: grad_req for n in names}
    if isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(names, grad_req))
    rng = np.random.default_rng(0)
    start = {n: rng.normal(size=args[n].shape).astype(dtype) if reqs.get(n) == "add"
             else np.zeros(args[n].shape, dtype=dtype) for n in names}
    ctx = ctx or default_context()
    grads = {n: array(start[n], ctx=ctx, dtype=dtype) for n in names if reqs.get(n, "null") != "null"}
    exe, _ = _bind(sym, ctx, args, _aux_dict(sym, aux_states), grad_req=reqs, dtype=dtype, grads=grads)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[n] for n in sym.list_outputs()]
    elif out_grads is not None and not isinstance(out_grads, (list, tuple)):
        out_grads = [out_grads]
    exe.backward(None if out_grads is None else [array(_np(g).astype(dtype), ctx=ctx, dtype=dtype) for g in out_grads])
    got = {n: g.asnumpy() for n, g in grads.items()}
    for n, want in expected.items():
        if reqs.get(n, "null") == "null":
            continue
        want = _np(want)
        if reqs[n] == "add":
            want = want + start[n]
        assert_almost_equal(got[n], want, rtol, atol, names=(f"EXPECTED_{n}", f"BACKWARD_{n}"),
                            equal_nan=equal_nan)
    return got


def _check_symbol_numeric_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                   use_forward_train, ctx):
    """``check_numeric_gradient`` for a Symbol: gradients from its executor
    (float64) against central differences of ``sum(output * head)``."""
    args = {k: v.astype(np.float64) for k, v in _arg_dict(sym, location, "check_numeric_gradient").items()}
    aux = {k: v.astype(np.float64) for k, v in _aux_dict(sym, aux_states).items()}
    names = sym.list_arguments()
    nodes = names if grad_nodes is None else list(grad_nodes)
    if isinstance(grad_nodes, dict):
        nodes = list(grad_nodes)
    ctx = ctx or default_context()
    grads = {n: array(np.zeros(args[n].shape), ctx=ctx, dtype=np.float64) for n in nodes}
    exe, arg_nd = _bind(sym, ctx, args, aux, grad_req="write", grads=grads)
    outputs = exe.forward(is_train=use_forward_train)
    rng = np.random.default_rng(0)
    heads = [rng.uniform(0.5, 1.5, size=o.shape) for o in outputs]
    exe.backward([array(h, ctx=ctx, dtype=np.float64) for h in heads])
    eps = numeric_eps if numeric_eps is not None else 1e-4

    def objective():
        outs = exe.forward(is_train=use_forward_train)
        return sum(float((o.asnumpy().astype(np.float64) * h).sum()) for o, h in zip(outs, heads))

    worst = 0.0
    for n in nodes:
        base = args[n].copy()
        numeric = np.zeros_like(base)
        flat = base.reshape(-1)
        for i in range(flat.size):
            for sign in (1, -1):
                moved = flat.copy()
                moved[i] += sign * eps
                arg_nd[n][:] = moved.reshape(base.shape)
                numeric.reshape(-1)[i] += sign * objective() / (2 * eps)
        arg_nd[n][:] = base
        analytic = grads[n].asnumpy()
        np.testing.assert_allclose(analytic, numeric, rtol=rtol if rtol is not None else 1e-2,
                                   atol=atol if atol is not None else 1e-4,
                                   err_msg=f"gradient of {n}: executor vs numeric")
        worst = max(worst, float(np.max(np.abs(analytic - numeric), initial=0.0)))
    return worst


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None, tol=None,
                      raise_on_err=True, ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs ``sym`` once per configuration in ``ctx_list`` (dicts with
    ``ctx``, input shapes and an optional ``type_dict``) on the same random
    inputs and output gradients, and compares every configuration's outputs
    and gradients with the most precise one's. Returns the ground truth
    ``{name: numpy array}`` (outputs under their output names, gradients
    under ``<arg>_grad``)."""
    del use_uniform
    if tol is None:
        tol = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-5,
               np.dtype(np.uint8): 0, np.dtype(np.int32): 0, np.dtype(np.int64): 0}
    elif isinstance(tol, (int, float)):
        tol = {np.dtype(t): tol for t in (np.float16, np.float32, np.float64, np.uint8, np.int32, np.int64)}
    rng = np.random.default_rng(0)
    runs = []
    for config in ctx_list:
        config = dict(config)
        ctx = config.pop("ctx", None) or default_context()
        type_dict = config.pop("type_dict", {})
        exe = sym.simple_bind(ctx, grad_req=grad_req, type_dict=type_dict, **config)
        runs.append((exe, type_dict))
    first = runs[0][0]
    if arg_params is None:
        arg_params = {n: rng.normal(size=a.shape).astype(rand_type) * scale for n, a in first.arg_dict.items()}
    if aux_params is None:
        aux_params = {n: np.zeros(a.shape, dtype=rand_type) for n, a in first.aux_dict.items()}
    results = []
    for exe, _ in runs:
        for n, a in exe.arg_dict.items():
            a[:] = arg_params[n].astype(np.float64)
        for n, a in exe.aux_dict.items():
            a[:] = aux_params[n].astype(np.float64)
        outs = exe.forward(is_train=True)
        result = {name: o.asnumpy() for name, o in zip(sym.list_outputs(), outs)}
        if grad_req != "null":
            heads = [np.random.default_rng(1).normal(size=o.shape) for o in outs]
            exe.backward([array(h.astype(o.asnumpy().dtype), dtype=o.asnumpy().dtype) for h, o in zip(heads, outs)])
            result.update({f"{n}_grad": g.asnumpy() for n, g in exe.grad_dict.items()})
        results.append(result)
    precision = [max(np.dtype(v.dtype).itemsize for v in r.values()) for r in results]
    gt = ground_truth if ground_truth is not None else results[int(np.argmax(precision))]
    for i, result in enumerate(results):
        for name, value in result.items():
            t = tol.get(np.dtype(value.dtype), 1e-3)
            try:
                assert_almost_equal(value, gt[name], rtol=t, atol=t, equal_nan=equal_nan,
                                    names=(f"config {i} {name}", f"ground truth {name}"))
            except AssertionError:
                if raise_on_err:
                    raise
                print(f"check_consistency: configuration {i} differs in {name}")
    return gt
