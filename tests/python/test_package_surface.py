"""The parts of MXNet 1.x's package surface that user code imports:
``mx.base``, ``mx.util``, ``mx.runtime``, ``mx.engine`` and the statistical
checks of ``mx.test_utils``."""

import threading

import numpy as np
import pytest

import oxnet as mx
from oxnet import test_utils as tu


def test_base_names_and_the_missing_c_library():
    assert mx.base.py_str(b"caf\xc3\xa9") == "café"
    assert mx.base._as_list(3) == [3] and mx.base._as_list((1, 2)) == (1, 2)
    assert isinstance(np.float64(1), mx.base.numeric_types) and isinstance(np.int8(1), mx.base.integer_types)
    assert mx.base.mx_real_t is np.float32
    err = mx.base.NotImplementedForSymbol(np.sum, "+", 1.0)
    assert isinstance(err, mx.MXNetError)
    assert str(err) == ('Function sum (namely operator "+") with arguments (<class \'float\'>) '
                        "is not implemented for Symbol and only available in NDArray.")
    with pytest.raises(mx.MXNetError, match="MXNDArrayFromDLPack: oxnet has no C API library"):
        mx.base.check_call(mx.base._LIB.MXNDArrayFromDLPack(None))


def test_np_shape_flag_is_per_thread_and_scoped():
    assert not mx.is_np_shape()
    with mx.np_shape(True):
        assert mx.is_np_shape()
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
        assert seen == [False]
    assert not mx.is_np_shape()

    @mx.use_np_shape
    def inside():
        return mx.is_np_shape()

    assert inside() and not mx.is_np_shape()
    with mx.np_array(True):
        with pytest.raises(ValueError, match="NumPy array semantics is still active"):
            mx.set_np_shape(False)
    mx.util.set_np()
    assert mx.is_np_shape() and mx.is_np_array()
    mx.util.reset_np()
    assert not mx.is_np_shape() and not mx.is_np_array()


def test_runtime_features_name_this_build():
    features = mx.runtime.Features()
    assert features is mx.runtime.Features()
    assert list(features)[:5] == ["CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT"]
    # the GPU backend is built in (it loads CUDA at run time); cuDNN is not used yet
    assert features.is_enabled("cuda") and features.is_enabled("INT64_TENSOR_SIZE")
    assert repr(features["CUDNN"]) == "✖ CUDNN"
    with pytest.raises(RuntimeError, match="unknown"):
        features.is_enabled("QUANTUM")


def test_engine_bulk_remembers_and_restores_the_size():
    before = mx.engine.set_bulk_size(7)
    with mx.engine.bulk(30):
        assert mx.engine.set_bulk_size(30) == 30
    assert mx.engine.set_bulk_size(before) == 7


def test_distribution_checks_accept_the_right_distribution_and_reject_a_wrong_one():
    from scipy import stats

    np.random.seed(5)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: stats.norm.ppf(q, 0, 1), 5)
    assert len(buckets) == 5 and buckets[0][0] == -np.inf and buckets[-1][1] == np.inf
    normal = lambda n: np.random.normal(0, 1, size=n)  # noqa: E731
    pvalues = tu.verify_generator(normal, buckets, probs, nsamples=20000, nrepeat=3)
    assert len(pvalues) == 3
    shifted = lambda n: np.random.normal(0.3, 1, size=n)  # noqa: E731
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(shifted, buckets, probs, nsamples=20000, nrepeat=3)
    # discrete buckets: the values themselves
    p, observed, _ = tu.chi_square_check(lambda n: np.random.randint(0, 3, size=n), [0, 1, 2], [1 / 3] * 3, 30000)
    assert observed.sum() == 30000 and p > 1e-4
    assert tu.mean_check(normal, 0, 1, nsamples=20000) and not tu.mean_check(shifted, 0, 1, nsamples=20000)
    assert tu.var_check(normal, 1, nsamples=20000) and not tu.var_check(lambda n: 2 * normal(n), 1, 20000)


def test_sparse_makers_say_there_is_no_sparse_storage():
    with pytest.raises(mx.MXNetError, match="no sparse storage"):
        tu.rand_sparse_ndarray((3, 3), "csr")


def test_model_checks_compare_what_they_claim():
    # compare_optimizer: a built-in against itself passes, against another rate fails
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.5), (3, 4),
                             np.float32)
    # same_symbol_structure looks at the operators node by node
    x = mx.sym.var("x")
    assert tu.same_symbol_structure(mx.sym.sin(x), mx.sym.sin(x, name="other"))
    assert not tu.same_symbol_structure(mx.sym.sin(x), mx.sym.cos(x))
    # check_speed times a bound symbol: a positive number of seconds per run
    assert tu.check_speed(mx.sym.sin(x), N=2, x=(4, 5)) > 0
    assert tu.check_speed(mx.sym.sin(x), N=2, typ="forward", x=(4, 5)) > 0
    with pytest.raises(ValueError, match="typ"):
        tu.check_speed(mx.sym.sin(x), typ="sideways", x=(4, 5))


def test_check_gluon_hybridize_consistency_checks_against_numpy():
    def builder(prefix):
        net = mx.gluon.nn.HybridSequential(prefix=prefix)
        with net.name_scope():
            net.add(mx.gluon.nn.Dense(3, in_units=4))
        return net

    data = [mx.nd.array(np.random.uniform(size=(2, 4)))]
    tu.check_gluon_hybridize_consistency(builder, data)
    with pytest.raises(AssertionError):
        tu.check_gluon_hybridize_consistency(builder, data, numpy_func=lambda x: np.zeros((2, 3)) + 7)


def test_modules_oxnet_lacks_say_so_at_use():
    for name in ("np", "npx"):
        assert not hasattr(mx, name)
        with pytest.raises(AttributeError, match=f"mx.{name} .*not provided"):
            getattr(mx, name)


def test_contexts_and_gpu_queries_exist():
    assert mx.cpu_pinned(1) == mx.context.Context("cpu_pinned", 1)
    # pinned host memory keeps its label, as in MXNet; operators on it give cpu(id) results
    pinned = mx.nd.ones((2,), ctx=mx.cpu_pinned(1))
    assert pinned.context == mx.cpu_pinned(1) and (pinned + 1).context == mx.cpu(1)
    assert callable(mx.context.gpu_memory_info) and callable(mx.util.get_cuda_compute_capability)
    with pytest.raises(mx.MXNetError, match="is not a GPU"):
        mx.util.get_cuda_compute_capability(mx.cpu())
