"""oxnet.test_utils: the MXNet-compatible helpers test suites call (contexts,
tolerances, closeness checks, random data, environment and test control)."""

import os
import re
import sys

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet import test_utils as tu


# --- contexts, dtypes and tolerances -------------------------------------------------------


def test_default_context_and_round_trip():
    assert tu.default_context() == mx.cpu()
    before = mx.current_context()
    try:
        other = mx.Context("cpu", 3)
        tu.set_default_context(other)
        assert tu.default_context() == other
        assert tu.default_context().device_id == 3
        assert mx.current_context() == other
        # arrays made by the helpers land on the default context
        assert tu.rand_ndarray((2, 2)).context == other
        tu.set_default_context(mx.cpu())
        assert tu.default_context() == mx.cpu(0)
    finally:
        tu.set_default_context(before)
    assert tu.default_context() == before
    with pytest.raises(TypeError):
        tu.set_default_context("cpu")


def test_default_dtype_and_tolerance_tables():
    assert tu.default_dtype() is np.float32
    rtols, atols = tu.default_rtols(), tu.default_atols()
    assert rtols[np.dtype(np.float16)] == 1e-2 and atols[np.dtype(np.float16)] == 1e-1
    assert rtols[np.dtype(np.float32)] == 1e-4 and atols[np.dtype(np.float32)] == 1e-3
    assert rtols[np.dtype(np.float64)] == 1e-5 and atols[np.dtype(np.float64)] == 1e-20
    for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64):
        assert rtols[np.dtype(t)] == 0 and atols[np.dtype(t)] == 0
    eps = tu.default_numeric_eps()
    assert eps[np.dtype(np.float32)] == 2.0 ** -9 and eps[np.dtype(np.float64)] == 2.0 ** -14


def test_get_rtol_atol_etol():
    assert tu.get_rtol() == 1e-5
    assert tu.get_atol() == 1e-20
    assert tu.get_rtol(dtype=np.float32) == 1e-4
    assert tu.get_atol(dtype=np.dtype(np.float16)) == 1e-1
    assert tu.get_rtol(0.25) == 0.25 and tu.get_atol(0.5, np.float32) == 0.5
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1


def test_get_tols_takes_the_looser_dtype():
    f32 = np.zeros(3, np.float32)
    f64 = np.zeros(3, np.float64)
    assert tu.get_tols(f64, f64, None, None) == (1e-5, 1e-20)
    assert tu.get_tols(f32, f64, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(nd.zeros((2,), dtype="float16"), f32, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(f32, f32, 0.3, 0.4) == (0.3, 0.4)
    # dicts give per-dtype values (numpy types or dtypes as keys), falling back on the defaults
    assert tu.get_tols(f32, f32, {np.float32: 0.2}, {np.dtype(np.float64): 9.0}) == (0.2, 1e-3)
    # Python numbers count as float64 scalars, ints as integers
    assert tu.get_tols(1.5, 2.5, None, None) == (1e-5, 1e-20)
    assert tu.get_tols(np.arange(3), np.arange(3), None, None) == (0, 0)
    assert tu.effective_dtype(nd.ones((2,))) == np.dtype(np.float32)
    assert tu.effective_dtype(np.ones(2, np.float16)) == np.dtype(np.float16)
    assert tu.get_tolerance(f64, 0.125, tu.default_rtols()) == 0.125


# --- closeness checks ----------------------------------------------------------------------


def test_assert_almost_equal_passes_within_dtype_defaults():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    tu.assert_almost_equal(nd.array(x), x)
    tu.assert_almost_equal(x, x + 5e-4)  # within float32's atol 1e-3
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(x.astype(np.float64), x.astype(np.float64) + 5e-4)
    tu.assert_almost_equal(x, x + 0.05, rtol=0, atol=0.1)
    tu.assert_almost_equal(nd.array(x) * 2, 2 * x, rtol=1e-6, atol=1e-6)


def test_assert_almost_equal_message_names_the_mismatch():
    a = np.zeros((3, 4), np.float32)
    b = a.copy()
    b[1, 2] = 1.0
    b[2, 3] = 0.5
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, rtol=1e-5, atol=1e-5, names=("ours", "ref"))
    msg = str(info.value)
    assert "Location of maximum error: (1, 2), ours=0.0, ref=1.0" in msg
    assert "(2, 3), ours=0.0, ref=0.5" in msg
    assert "rtol=1.000000e-05, atol=1.000000e-05" in msg
    assert "2 of 12 elements" in msg
    assert re.search(r"mismatch 16\.66\d+%", msg)
    # the reported error is |a - b| / (atol + rtol |b|) of the worst element
    err = float(re.search(r"^Error ([0-9.]+)", msg).group(1))
    assert err == pytest.approx(1.0 / (1e-5 + 1e-5 * 1.0), rel=1e-6)


def test_assert_almost_equal_mismatches_limits_the_listing():
    a = np.zeros(50)
    b = np.arange(50, dtype=np.float64) + 1
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, mismatches=(3, 10))
    msg = str(info.value)
    listed = re.findall(r"^\s*\d+: Error", msg, flags=re.M)
    assert len(listed) == 3
    assert "50 of 50 elements" in msg
    assert "... 47 more" in msg
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, mismatches=(0, 0))
    assert not re.findall(r"^\s*\d+: Error", str(info.value), flags=re.M)


def test_assert_almost_equal_nan_broadcast_and_shapes():
    a = np.array([1.0, np.nan, 3.0])
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, a.copy())
    assert "(1,)" in str(info.value)
    tu.assert_almost_equal(a, a.copy(), equal_nan=True)
    # broadcasting compares a row against every row
    tu.assert_almost_equal(np.ones((4, 3)), np.ones(3))
    with pytest.raises(AssertionError, match=r"a.shape = \(4, 3\) and b.shape = \(3,\)"):
        tu.assert_almost_equal(np.ones((4, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError, match="not broadcastable"):
        tu.assert_almost_equal(np.ones(4), np.ones(3))


def test_assert_almost_equal_integers_and_booleans_are_exact():
    tu.assert_almost_equal(np.array([1, 2, 3]), nd.array([1, 2, 3], dtype="int32"))
    with pytest.raises(AssertionError, match=r"Location of maximum error: \(2,\)"):
        tu.assert_almost_equal(np.array([1, 2, 3]), np.array([1, 2, 4]))
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    big = np.array([2 ** 60], dtype=np.int64)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(big, big + 1)


def test_almost_equal_and_same():
    x = np.array([1.0, 2.0, 3.0])
    assert tu.almost_equal(x, x + 1e-7)
    assert not tu.almost_equal(x, x + 1e-3)
    assert tu.almost_equal(x, x + 1e-3, rtol=1e-2)
    assert tu.almost_equal(nd.array(x), x.astype(np.float32), rtol=1e-6, atol=1e-6)
    assert tu.almost_equal(np.ones((2, 3)), np.ones(3))
    with pytest.raises(AssertionError):
        tu.almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    assert not tu.almost_equal([np.nan], [np.nan])
    assert tu.almost_equal([np.nan], [np.nan], equal_nan=True)
    assert tu.same(x, x.copy()) and not tu.same(x, x + 1e-12)
    assert tu.same(nd.array([1, 2]), np.array([1.0, 2.0], np.float32))
    assert not tu.same(np.ones(3), np.ones((1, 3)))


def test_ignore_nan_variants():
    a = np.array([1.0, np.nan, 3.0, 4.0])
    b = np.array([1.0, 2.0, np.nan, 4.0])
    assert tu.almost_equal_ignore_nan(a, b)
    tu.assert_almost_equal_ignore_nan(a, b)
    assert np.isnan(a[1]) and np.isnan(b[2])  # inputs untouched
    b[3] = 5.0
    assert not tu.almost_equal_ignore_nan(a, b)
    with pytest.raises(AssertionError, match=r"\(3,\), x=4.0, y=5.0"):
        tu.assert_almost_equal_ignore_nan(a, b, names=("x", "y"))


def test_assert_almost_equal_with_err_allows_a_mismatch_rate():
    a = np.zeros(10)
    b = np.zeros(10)
    b[:2] = 1.0  # 20% of the elements mismatch
    tu.assert_almost_equal_with_err(a, b, etol=0.2)
    tu.assert_almost_equal_with_err(a, b, etol=0.25)
    with pytest.raises(AssertionError, match="etol=0.1"):
        tu.assert_almost_equal_with_err(a, b, etol=0.1)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b)  # etol 0: any mismatch fails
    tu.assert_almost_equal_with_err(a, b, rtol=0, atol=1.0)


def test_assert_allclose_and_compare_ndarray_tuple():
    tu.assert_allclose(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))
    x = nd.array([1, 2])
    tu.compare_ndarray_tuple((x, (x, x)), (x.asnumpy(), (x.asnumpy(), x.asnumpy())))
    tu.compare_ndarray_tuple(None, (x,))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((x, x), (x.asnumpy(), x.asnumpy() + 1))


def test_np_reduce():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(x, 1, False, np.sum), x.sum(axis=1))
    np.testing.assert_array_equal(tu.np_reduce(x, (0, 2), True, np.max), x.max(axis=(0, 2), keepdims=True))
    assert tu.np_reduce(x, (0, 2), True, np.max).shape == (1, 3, 1)
    assert tu.np_reduce(x, None, False, np.sum) == x.sum()
    assert tu.np_reduce(x, None, True, np.sum).shape == (1, 1, 1)
    np.testing.assert_array_equal(tu.np_reduce(x, -1, True, np.sum), x.sum(axis=-1, keepdims=True))


def test_collapse_sum_like():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (4,)), a.sum(axis=(0, 1)))
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (2, 3, 4)), a)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (0, 4)), np.zeros((0, 4)))


def test_same_array_detects_shared_memory():
    x = nd.array([1.0, 2.0, 3.0])
    assert tu.same_array(x, x)
    assert not tu.same_array(x, x.copy())
    np.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0, 3.0])  # restored


# --- random data ---------------------------------------------------------------------------


def test_rand_shapes_stay_in_range():
    np.random.seed(7)
    for _ in range(200):
        s2 = tu.rand_shape_2d(3, 5)
        assert len(s2) == 2 and 1 <= s2[0] <= 3 and 1 <= s2[1] <= 5
        s3 = tu.rand_shape_3d(2, 3, 4)
        assert len(s3) == 3 and all(1 <= s <= d for s, d in zip(s3, (2, 3, 4)))
        sn = tu.rand_shape_nd(4, dim=6)
        assert isinstance(sn, tuple) and len(sn) == 4 and all(1 <= s <= 6 for s in sn)
        assert all(isinstance(s, int) for s in sn + s2 + s3)
    seen = {s for _ in range(300) for s in tu.rand_shape_nd(3, dim=2, allow_zero_size=True)}
    assert seen == {0, 1, 2}
    seen = {s for _ in range(300) for s in tu.rand_shape_nd(3, dim=2)}
    assert seen == {1, 2}
    assert tu.rand_shape_nd(0) == ()


def test_rand_coord_2d():
    np.random.seed(1)
    for _ in range(100):
        x, y = tu.rand_coord_2d(2, 5, -3, -1)
        assert 2 <= x < 5 and -3 <= y < -1
        assert isinstance(x, np.int64) and isinstance(y, np.int64)


def test_random_arrays_and_sample():
    one = tu.random_arrays((2, 3))
    assert isinstance(one, np.ndarray) and one.shape == (2, 3) and one.dtype == np.float32
    several = tu.random_arrays((2,), (), (1, 4))
    assert [a.shape for a in several] == [(2,), (), (1, 4)]
    assert all(a.dtype == np.float32 for a in several)
    np.random.seed(3)
    first = tu.random_arrays((5,))
    np.random.seed(3)
    np.testing.assert_array_equal(first, tu.random_arrays((5,)))

    arrays = tu.random_uniform_arrays((100,), (3, 3), low=-2.0, high=-1.0, dtype=np.float64)
    assert isinstance(arrays, list) and [a.shape for a in arrays] == [(100,), (3, 3)]
    assert all(a.dtype == np.float64 and a.min() >= -2.0 and a.max() < -1.0 for a in arrays)
    assert tu.random_uniform_arrays((4,))[0].dtype == np.float32
    with pytest.raises(TypeError):
        tu.random_uniform_arrays((4,), scale=2)

    population = list(range(10))
    picked = tu.random_sample(population, 4)
    assert len(picked) == 4 and len(set(picked)) == 4 and set(picked) <= set(population)
    assert population == list(range(10))
    assert sorted(tu.random_sample(population, 10)) == population
    with pytest.raises(AssertionError):
        tu.random_sample(population, 11)


def test_rand_ndarray_shape_dtype_and_context():
    x = tu.rand_ndarray((3, 4))
    assert isinstance(x, nd.NDArray)
    assert x.shape == (3, 4) and x.dtype == np.float32 and x.stype == "default"
    assert x.context == mx.cpu()
    assert np.all(np.isfinite(x.asnumpy())) and x.asnumpy().std() > 0
    y = tu.rand_ndarray((2, 5), dtype=np.float64, ctx=mx.cpu())
    assert y.shape == (2, 5) and y.dtype == np.float64
    z = tu.rand_ndarray((6,), dtype="int32")
    assert z.shape == (6,) and z.dtype == np.int32
    assert tu.rand_ndarray(tu.rand_shape_nd(3, dim=4)).ndim == 3
    # seeded like numpy: the values are random_arrays' values
    np.random.seed(11)
    expected = tu.random_arrays((2, 2))
    np.random.seed(11)
    np.testing.assert_array_equal(tu.rand_ndarray((2, 2)).asnumpy(), expected)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_rand_ndarray_sparse_is_a_clear_error(stype):
    with pytest.raises(mx.MXNetError, match="sparse storage") as info:
        tu.rand_ndarray((4, 4), stype=stype, density=0.5)
    assert isinstance(info.value, NotImplementedError)
    assert stype in str(info.value)
    with pytest.raises(mx.MXNetError, match="unknown storage type"):
        tu.rand_ndarray((2, 2), stype="dense_ish")


def test_shuffle_csr_column_indices_keeps_each_row():
    class Csr:  # the parts of a CSR matrix the helper touches
        indptr = np.array([0, 3, 3, 8])
        indices = np.array([0, 1, 2, 0, 1, 2, 3, 4])

    csr = Csr()
    np.random.seed(0)
    tu.shuffle_csr_column_indices(csr)
    assert sorted(csr.indices[0:3]) == [0, 1, 2]
    assert sorted(csr.indices[3:8]) == [0, 1, 2, 3, 4]


def test_vector_tensor_and_identity_helpers():
    v = tu.create_vector(5)
    assert v.dtype == np.int64
    np.testing.assert_array_equal(v.asnumpy(), [0, 1, 2, 3, 4])
    t = tu.create_2d_tensor(3, 2)
    assert t.shape == (3, 2) and t.dtype == np.int64
    np.testing.assert_array_equal(t.asnumpy(), [[0, 0], [1, 1], [2, 2]])
    eye = tu.get_identity_mat(3)
    assert eye.dtype == np.float32
    np.testing.assert_array_equal(eye.asnumpy(), np.eye(3))
    batch = tu.get_identity_mat_batch(2)
    assert batch.shape == (2, 2, 2)
    np.testing.assert_array_equal(batch.asnumpy(), [np.eye(2), np.eye(2)])


def test_assign_each():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = tu.assign_each(x, lambda v: v * 10)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [[10, 20], [30, 40]])
    np.testing.assert_array_equal(tu.assign_each(x, None), x)
    np.testing.assert_array_equal(tu.assign_each2(x, x + 1, lambda p, q: p * q), x * (x + 1))


def test_random_matrices_with_real_eigenvalues():
    np.random.seed(5)
    q = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-12)
    m = tu.new_matrix_with_real_eigvals_2d(4)
    eig = np.linalg.eigvals(m)
    assert np.allclose(eig.imag, 0, atol=1e-8) and np.all(np.abs(eig.real) <= 10 + 1e-8)
    s = tu.new_sym_matrix_with_real_eigvals_2d(3)
    np.testing.assert_allclose(s, s.T, atol=1e-12)
    assert tu.new_matrix_with_real_eigvals_nd((2, 3, 3, 3)).shape == (2, 3, 3, 3)
    assert tu.new_sym_matrix_with_real_eigvals_nd((2, 2, 2)).shape == (2, 2, 2)


# --- test control --------------------------------------------------------------------------


def test_environment_sets_and_restores(monkeypatch):
    monkeypatch.setenv("OXNET_TU_KEPT", "before")
    monkeypatch.delenv("OXNET_TU_NEW", raising=False)
    with tu.environment("OXNET_TU_KEPT", "inside"):
        assert os.environ["OXNET_TU_KEPT"] == "inside"
    assert os.environ["OXNET_TU_KEPT"] == "before"

    with tu.environment({"OXNET_TU_KEPT": None, "OXNET_TU_NEW": "1"}):
        assert "OXNET_TU_KEPT" not in os.environ
        assert os.environ["OXNET_TU_NEW"] == "1"
    assert os.environ["OXNET_TU_KEPT"] == "before"
    assert "OXNET_TU_NEW" not in os.environ

    with pytest.raises(KeyError):
        with tu.environment("OXNET_TU_NEW", "2"):
            assert os.environ["OXNET_TU_NEW"] == "2"
            raise KeyError("body failed")
    assert "OXNET_TU_NEW" not in os.environ

    with pytest.raises(AssertionError):
        with tu.environment("ONLY_A_NAME"):
            pass


def test_set_env_var_returns_the_previous_value(monkeypatch):
    monkeypatch.delenv("OXNET_TU_VAR", raising=False)
    assert tu.set_env_var("OXNET_TU_VAR", "a", default_val="unset") == "unset"
    assert os.environ["OXNET_TU_VAR"] == "a"
    assert tu.set_env_var("OXNET_TU_VAR", "b") == "a"
    assert os.environ["OXNET_TU_VAR"] == "b"


def test_assert_exception():
    tu.assert_exception(int, ValueError, "not a number")
    tu.assert_exception(lambda *, key: {}[key], KeyError, key="k")
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(int, ValueError, "12")
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(lambda: None, AssertionError)
    with pytest.raises(TypeError):  # other exceptions propagate
        tu.assert_exception(int, ValueError, None)


def test_retry_reruns_until_a_pass():
    calls = []

    @tu.retry(3)
    def flaky(limit):
        """Fails until its third call."""
        calls.append(1)
        assert len(calls) >= limit, "not yet"
        return "done"

    assert flaky(3) == "done" and len(calls) == 3
    assert flaky.__name__ == "flaky" and "third call" in flaky.__doc__

    calls.clear()
    with pytest.raises(AssertionError, match="not yet"):
        flaky(5)
    assert len(calls) == 3

    errors = []

    @tu.retry(4)
    def broken():
        errors.append(1)
        raise ValueError("not an assertion")

    with pytest.raises(ValueError):
        broken()
    assert len(errors) == 1
    with pytest.raises(AssertionError):
        tu.retry(0)


def test_devices_and_build_flags(monkeypatch):
    assert tu.list_gpus() == list(range(mx.context.num_gpus()))
    assert tu.has_tvm_ops() is False
    assert tu.is_op_runnable() is True
    monkeypatch.setenv("CD_JOB", "1")
    assert tu.is_cd_run() is True
    monkeypatch.setenv("CD_JOB", "0")
    assert tu.is_cd_run() is False
    monkeypatch.delenv("CD_JOB")
    assert tu.is_cd_run() is False
    assert isinstance(tu.is_aarch64_run(), bool)


def test_dummy_iter_repeats_the_first_batch():
    class Source:
        provide_data = [("data", (2, 3))]
        provide_label = [("label", (2,))]
        batch_size = 2

        def __init__(self):
            self.batches = iter(["first", "second"])

        def __iter__(self):
            return self

        def __next__(self):
            return next(self.batches)

    it = tu.DummyIter(Source())
    assert it.provide_data == [("data", (2, 3))] and it.provide_label == [("label", (2,))]
    assert it.batch_size == 2
    assert [next(it) for _ in range(4)] == ["first"] * 4
    assert it.next() == "first"
    it.reset()
    assert next(iter(it)) == "first"
    assert tu.DummyIter([10, 20]).next() == 10


def test_discard_stderr_restores_the_stream(capfd):
    with tu.discard_stderr():
        os.write(2, b"hidden\n")
        print("also hidden", file=sys.stderr)
    os.write(2, b"visible\n")
    err = capfd.readouterr().err
    assert "visible" in err and "hidden" not in err


# --- gradients, and the module's exports ---------------------------------------------------


def test_numeric_gradient_helpers_still_work():
    x = np.random.default_rng(0).uniform(-1, 1, size=(2, 3))
    assert tu.check_numeric_gradient("tanh", [x]) < 1e-6
    assert tu.check_numeric_gradient(lambda a: a * a, [x]) < 1e-6
    assert tu.check_op("sigmoid", [x]) < 1e-6


def test_star_import_exports_the_helpers():
    namespace = {}
    exec("from oxnet.test_utils import *", namespace)  # pylint: disable=exec-used
    for name in (
        "default_context", "set_default_context", "default_dtype", "default_rtols", "default_atols",
        "get_rtol", "get_atol", "get_tols", "get_etol", "np_reduce", "same", "almost_equal",
        "assert_almost_equal", "assert_almost_equal_with_err", "almost_equal_ignore_nan",
        "assert_almost_equal_ignore_nan", "assert_exception", "retry", "random_arrays", "random_sample",
        "random_uniform_arrays", "rand_shape_2d", "rand_shape_3d", "rand_shape_nd", "rand_coord_2d",
        "rand_ndarray", "create_vector", "environment", "set_env_var", "list_gpus", "collapse_sum_like",
        "is_cd_run", "has_tvm_ops", "is_op_runnable", "effective_dtype", "DummyIter",
        "check_numeric_gradient", "check_op", "np",
        # as MXNet's module (no __all__), it hands out the package and its imports too
        "mx", "npt", "os", "Features", "use_np", "download", "verify_generator", "compare_optimizer",
    ):
        assert name in namespace, name
    assert namespace["np"] is np
    assert namespace["mx"] is mx
    # no private helpers leak
    assert not any(name.startswith("_") for name in namespace if name != "__builtins__")
    assert mx.test_utils.rand_ndarray is tu.rand_ndarray
