"""``mx.test_utils``' random test data: arrays, shapes, coordinates and
the linear-algebra test matrices (imported from :mod:`oxnet.test_utils`,
where users find them)."""

import numbers

import numpy as np

from .base import MXNetError
from .ndarray import array
from .test_utils import default_context, default_dtype

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


