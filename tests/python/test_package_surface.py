"""MXNet 1.9.1's package surface: every public module of MXNet's Python
package imports as ``oxnet.<module>`` (the list comes from MXNet's wheel,
scripts/make_package_fixtures.py); what oxnet deliberately lacks says so at
use, not at import; the small utility modules (log, registry, error,
libinfo, misc, executor_manager, io.utils, nd.op) behave as MXNet's."""

import importlib
import logging
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet._absent import NotProvidedError

MODULES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "package", "mxnet_modules.txt")


def _mxnet_modules():
    with open(MODULES) as f:
        return [line.strip() for line in f if line.strip()]


@pytest.mark.parametrize("name", _mxnet_modules())
def test_every_mxnet_module_imports(name):
    importlib.import_module(f"oxnet.{name}")


@pytest.mark.parametrize("expr", [
    "mx.np.array([1, 2])", "mx.npx.set_np()", "mx.nd.sparse.csr_matrix((2, 2))", "mx.nd.sparse.CSRNDArray()",
    "mx.sym.sparse.dot", "mx.contrib.quantization.quantize_model", "mx.torch.foo",
    "mx.kvstore.kvstore_server.KVStoreServer", "mx.tvmop.foo",
])
def test_what_oxnet_lacks_raises_at_use_and_says_why(expr):
    import oxnet.kvstore.kvstore_server  # noqa: F401  (a submodule: imported, as in MXNet code)
    with pytest.raises(mx.MXNetError, match="not offered by oxnet") as err:
        eval(expr)  # noqa: S307  (fixed expressions)
    assert isinstance(err.value, NotProvidedError)


def test_absent_names_import_and_hasattr_is_false():
    from oxnet import np, npx  # noqa: F401  (MXNet code imports them at the top)
    from oxnet.ndarray.sparse import CSRNDArray, RowSparseNDArray
    import oxnet.numpy.linalg  # noqa: F401
    assert not hasattr(mx.np, "array")
    assert not isinstance(mx.nd.ones(2), (CSRNDArray, RowSparseNDArray))


def test_op_modules_are_the_operator_functions():
    np.testing.assert_array_equal(mx.nd.op.relu(mx.nd.array([-1, 2])).asnumpy(), [0, 2])
    assert mx.sym.op.FullyConnected is mx.sym.FullyConnected


def test_get_logger_formats_as_mxnet(tmp_path, capsys):
    logger = mx.log.get_logger("oxnet_surface_test", level=mx.log.INFO)
    logger.info("hello %d", 3)
    line = capsys.readouterr().err.strip()
    assert line.startswith("\x1b[32mI") and line.endswith("]\x1b[0m hello 3") and "test_package_surface.py" in line
    # a named logger is set up once: asking again keeps its handler and level
    assert mx.log.get_logger("oxnet_surface_test", level=mx.log.ERROR).level == logging.INFO
    path = tmp_path / "log.txt"
    mx.log.get_logger("oxnet_surface_file", filename=str(path), level=mx.log.DEBUG).debug("to file")
    assert path.read_text() == "to file\n"
    with pytest.warns(DeprecationWarning):
        mx.log.getLogger("oxnet_surface_test")


def test_registry_register_alias_create():
    class Base:
        def __init__(self, x=0):
            self.x = x

    register = mx.registry.get_register_func(Base, "thing")
    alias = mx.registry.get_alias_func(Base, "thing")
    create = mx.registry.get_create_func(Base, "thing")

    @alias("other")
    @register
    class Fancy(Base):
        pass

    assert set(mx.registry.get_registry(Base)) == {"fancy", "other"}
    assert create("FANCY", x=2).x == 2 and isinstance(create("other"), Fancy)
    assert create('["fancy", {"x": 5}]').x == 5 and create('{"thing": "fancy", "x": 6}').x == 6
    assert create({"thing": "fancy", "x": 7}).x == 7
    inst = Fancy(1)
    assert create(inst) is inst
    with pytest.raises(mx.MXNetError, match="nothing is not registered"):
        create("nothing")
    with pytest.raises(mx.MXNetError, match="subclasses of Base"):
        register(int)
    with pytest.warns(UserWarning, match="overriding"):
        register(type("Fancy2", (Base,), {}), "fancy")


def test_error_classes_and_registry():
    err = mx.error.InternalError("broken")
    assert isinstance(err, mx.MXNetError) and "hint" in str(err)
    assert mx.base.error_types["ValueError"] is ValueError

    @mx.error.register
    class MyError(mx.MXNetError):
        pass

    assert mx.base.error_types["MyError"] is MyError


def test_libinfo_points_at_the_engine_and_headers():
    libs = mx.libinfo.find_lib_path()
    assert libs and all(os.path.isfile(p) for p in libs)
    include = mx.libinfo.find_include_path()
    assert os.path.isfile(os.path.join(include, "oxnet", "lib_api.h"))
    assert mx.libinfo.__version__ == "1.9.1"


def test_misc_factor_scheduler():
    sched = mx.misc.FactorScheduler(step=3, factor=0.5)
    sched.base_lr = 1.0
    assert [sched(i) for i in range(7)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25]
    with pytest.raises(ValueError, match="factor"):
        mx.misc.FactorScheduler(step=3, factor=2)


def test_io_utils_and_io_io():
    from oxnet.io import utils
    data = utils._init_data([np.zeros((4, 2)), np.ones((4, 3))], allow_empty=False, default_name="data")
    assert [n for n, _ in data] == ["_0_data", "_1_data"]
    picked = utils._getdata_by_idx(data, [3, 1])
    assert picked[1][1].shape == (2, 3)
    assert utils._has_instance(data, mx.nd.NDArray)
    assert mx.io.io.NDArrayIter is mx.io.NDArrayIter
    with pytest.raises(mx.MXNetError, match="MXDataIter"):
        mx.io.io.MXDataIter(None)


def test_executor_manager_trains_over_two_contexts():
    x = np.random.RandomState(0).uniform(-1, 1, (8, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="label")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc"),
                                        mx.sym.var("label"))
    manager = mx.executor_manager.DataParallelExecutorManager(
        net, [mx.cpu(0), mx.cpu(1)], it, net.list_arguments(), ["fc_weight", "fc_bias"], [])
    manager.set_params({"fc_weight": mx.nd.zeros((1, 3)), "fc_bias": mx.nd.zeros((1,))}, {})
    manager.load_data_batch(next(iter(it)))
    manager.forward(is_train=True)
    manager.backward()
    grads = manager.grad_arrays[0]
    # each context's gradient is its half of the batch: (pred - y) * x summed over its rows
    np.testing.assert_allclose(grads[0].asnumpy(), (-y[:4] * x[:4]).sum(axis=0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(grads[1].asnumpy(), (-y[4:] * x[4:]).sum(axis=0, keepdims=True), rtol=1e-5)
    out = {"fc_weight": mx.nd.zeros((1, 3)), "fc_bias": mx.nd.zeros((1,))}
    manager.copy_to(out, {})
    assert (out["fc_weight"].asnumpy() == 0).all()


def test_names_at_mxnets_module_paths():
    # where MXNet 1.9.1 defines them, beside where oxnet does
    from oxnet.image.image import CreateAugmenter, ImageIter
    from oxnet.image.detection import RandomOrderAug
    from oxnet.ndarray.ndarray import concatenate, maximum
    from oxnet.symbol.symbol import zeros
    assert ImageIter is mx.image.ImageIter and CreateAugmenter is mx.image.CreateAugmenter
    assert RandomOrderAug is mx.image.RandomOrderAug
    assert concatenate is mx.nd.concatenate and maximum is mx.nd.maximum and zeros is mx.sym.zeros
    assert mx.model.DataParallelExecutorManager is mx.executor_manager.DataParallelExecutorManager
    assert mx.model.LogValidationMetricsCallback is mx.callback.LogValidationMetricsCallback
    assert mx.io.MXDataIter is mx.io.io.MXDataIter and mx.gluon.tensor_types[1] is mx.nd.NDArray
    with pytest.raises(mx.MXNetError, match="no parameter servers"):
        mx.kvstore.KVStoreServer


def test_symbol_eye_and_linspace_as_numpy():
    np.testing.assert_array_equal(mx.sym.eye(3, 4, k=1).eval()[0].asnumpy(), np.eye(3, 4, k=1))
    np.testing.assert_array_equal(mx.sym.eye(3, k=-1, dtype="int32").eval()[0].asnumpy(), np.eye(3, k=-1))
    np.testing.assert_allclose(mx.sym.linspace(1, 2, 5).eval()[0].asnumpy(), np.linspace(1, 2, 5))
    out = mx.sym.linspace(1, 2, 5, endpoint=False, dtype="float64").eval()[0]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), np.linspace(1, 2, 5, endpoint=False))
    # a graph node: shapes infer through it, and it survives a JSON round trip
    net = mx.sym.eye(2) + mx.sym.var("x")
    assert net.infer_shape(x=(2, 2))[1] == [(2, 2)]
    again = mx.sym.load_json(net.tojson())
    np.testing.assert_array_equal(again.eval(x=mx.nd.ones((2, 2)))[0].asnumpy(), np.eye(2) + 1)
