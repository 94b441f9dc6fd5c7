"""Python custom operators: the seeds' code, every CustomOpProp hook, the
reference's failure cases, and threads."""

import threading

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, nd

import seed_customop
import seed_sigmoid_dense
import seed_softmax


def test_seed_sigmoid_forward_and_backward_match_numpy():
    a = np.array([0, 1, 2, 3], dtype=np.float32)
    x = nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, op_type="sigmoid")
    y.backward()
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(y.asnumpy(), s, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), s * (1 - s), rtol=1e-6)


def test_seed_dense_kwargs_arrive_as_strings_and_numbers_match():
    rng = np.random.default_rng(3)
    a = rng.uniform(size=(4, 3)).astype(np.float32)
    w = rng.uniform(size=(5, 3)).astype(np.float32)
    y = nd.Custom(nd.array(a), nd.array(w), bias=0.1, op_type="dense")
    np.testing.assert_allclose(y.asnumpy(), a @ w.T + 0.1, rtol=1e-5)
    # the seed's main() runs as written: its Gluon DenseBlock holds the weight
    dense, x, y = seed_sigmoid_dense.main()
    w = dense.weight.data().asnumpy()
    assert dense.weight.name == dense.prefix + "weight" and w.shape == (5, 3)
    assert np.all(np.abs(w) <= 0.07)  # the default initializer, Uniform(0.07)
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() @ w.T + 0.1, rtol=1e-5)


def test_seed_softmax_gives_cross_entropy_gradient():
    x, label, prob = seed_softmax.main()
    a = x.asnumpy()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prob.asnumpy(), p, rtol=1e-5)
    want = p.copy()
    want[np.arange(4), label.asnumpy().astype(int)] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_seed_customop_function_and_def_grad():
    x, y, loss = seed_customop.main()
    a, labels = x.asnumpy().astype(np.float64), y.asnumpy()
    p = np.exp(a - a.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    n = a.shape[0]
    np.testing.assert_allclose(loss.asscalar(), -np.log(p[np.arange(n), labels]).sum() / n, rtol=1e-5)
    p[np.arange(n), labels] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), p / n, rtol=1e-4, atol=1e-6)


def test_customop_in_mxnet_mode_takes_ndarrays():
    @mx.customop("mxnet")
    def scale(x):
        assert isinstance(x, nd.NDArray)
        return x * 3

    scale.def_grad(lambda ans, x: (lambda g: g * 3))
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = scale(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), [3, 6])
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 3])
    assert mx.operator.customop is mx.customop


class _Recorder(mx.operator.CustomOp):
    """Records what it was called with; output = data * scale + aux."""

    calls = []

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        _Recorder.calls.append(("forward", is_train, list(req)))
        self.assign(out_data[0], req[0], in_data[0] * self.scale + aux[0])
        self.assign(out_data[1], req[1], in_data[1] + 0)
        aux[0][:] = aux[0] + 1  # aux states are mutable

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        _Recorder.calls.append(("backward", list(req), len(out_grad), len(in_data), len(out_data)))
        self.assign(in_grad[0], req[0], out_grad[0] * self.scale)
        self.assign(in_grad[1], req[1], out_grad[1])


@mx.operator.register("recorder")
class _RecorderProp(mx.operator.CustomOpProp):
    created = []

    def __init__(self, scale="1"):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def list_arguments(self):
        return ["data", "other"]

    def list_outputs(self):
        return ["scaled", "copy"]

    def list_auxiliary_states(self):
        return ["counter"]

    def infer_shape(self, in_shape):
        # refines the second argument's shape from the first (it may come as given)
        return [in_shape[0], in_shape[0]], [in_shape[0], in_shape[0]], [in_shape[0]]

    def infer_type(self, in_type):
        assert in_type[0] is np.float32 or in_type[0] == np.float32
        return in_type, [in_type[0], in_type[0]], [in_type[0]]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad

    def create_operator(self, ctx, in_shapes, in_dtypes):
        _RecorderProp.created.append((str(ctx), [tuple(s) for s in in_shapes], list(in_dtypes)))
        return _Recorder(self.scale)


def test_every_prop_hook_aux_states_and_operator_reuse():
    _Recorder.calls.clear()
    _RecorderProp.created.clear()
    x = nd.array([[1.0, 2.0]])
    other = nd.array([[5.0, 6.0]])
    counter = nd.zeros((1, 2))
    x.attach_grad()
    other.attach_grad()
    with autograd.record():
        scaled, copy = nd.Custom(x, other, counter, scale=2.5, op_type="recorder")
    np.testing.assert_allclose(scaled.asnumpy(), [[2.5, 5.0]])
    np.testing.assert_allclose(copy.asnumpy(), [[5.0, 6.0]])
    np.testing.assert_allclose(counter.asnumpy(), [[1, 1]])
    autograd.backward([scaled, copy])
    np.testing.assert_allclose(x.grad.asnumpy(), [[2.5, 2.5]])
    np.testing.assert_allclose(other.grad.asnumpy(), [[1, 1]])
    assert _Recorder.calls[0] == ("forward", True, ["write", "write"])
    assert _Recorder.calls[1][0:2] == ("backward", ["write", "write"])
    with autograd.predict_mode():
        nd.Custom(x, other, counter, scale=2.5, op_type="recorder")
    assert _Recorder.calls[-1] == ("forward", False, ["write", "write"])
    # one operator per (kwargs, shapes, dtypes): the second call reused it
    assert len(_RecorderProp.created) == 1
    ctx, shapes, dtypes = _RecorderProp.created[0]
    assert ctx == "cpu(0)" and shapes == [(1, 2), (1, 2)] and dtypes[0] == np.float32
    assert "recorder" in mx.operator.get_all_registered_operators()


def test_grad_req_add_reaches_the_custom_op():
    x = nd.array([0.0, 1.0])
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = nd.Custom(x, op_type="sigmoid")
        y.backward()
    s = 1 / (1 + np.exp(-np.array([0.0, 1.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * (1 - s), rtol=1e-6)


class _ExactSigmoid(mx.operator.CustomOp):
    """The seed's Sigmoid, computing in the input's dtype (the seed's
    nd.array(y) rounds to float32, too coarse for float64 gradient checks)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], nd.array(1 / (1 + np.exp(-x)), dtype=x.dtype))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y, dy = out_data[0].asnumpy(), out_grad[0].asnumpy()
        self.assign(in_grad[0], req[0], nd.array(dy * (1 - y) * y, dtype=y.dtype))


@mx.operator.register("exact_sigmoid")
class _ExactSigmoidProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _ExactSigmoid()


def test_op_checker_and_numeric_gradient_on_a_python_op():
    x = np.random.default_rng(5).normal(size=(3, 4))
    err = mx.test_utils.check_op("Custom", [nd.array(x, dtype="float64")], {"op_type": "exact_sigmoid"})
    assert err < 1e-6
    worst = mx.test_utils.check_numeric_gradient(lambda a: nd.Custom(a, op_type="exact_sigmoid"), [x])
    assert worst < 1e-6
    # a wrong gradient is caught
    class Wrong(_ExactSigmoid):
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    class WrongProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Wrong()

    mx.operator.register("wrong_grad")(WrongProp)
    with pytest.raises(mx.MXNetError, match="gradient"):
        mx.test_utils.check_op("Custom", [nd.array(x, dtype="float64")], {"op_type": "wrong_grad"})
    with pytest.raises(AssertionError, match="gradient"):
        mx.test_utils.check_numeric_gradient(lambda a: nd.Custom(a, op_type="wrong_grad"), [x])


# --- the reference's four failure cases, and other faults -------------------


def _register_failing(name, forward):
    class Op(mx.operator.CustomOp):
        pass

    Op.forward = forward

    class Prop(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Op()

    mx.operator.register(name)(Prop)


def _assert_false(self, is_train, req, in_data, out_data, aux):
    assert False, "forward refused"


def _inner_shape_error(self, is_train, req, in_data, out_data, aux):
    self.assign(out_data[0], req[0], nd.dot(in_data[0], in_data[0]))


def _inner_error_waited(self, is_train, req, in_data, out_data, aux):
    y = nd.dot(in_data[0], in_data[0])
    y.wait_to_read()
    self.assign(out_data[0], req[0], y)


def _inner_error_not_waited(self, is_train, req, in_data, out_data, aux):
    nd.dot(in_data[0], in_data[0])


@pytest.mark.parametrize(
    "forward, exc, pattern",
    [
        (_assert_false, AssertionError, "Custom\\(op_type=fault_0\\): forward refused"),
        (_inner_shape_error, mx.MXNetError, "fault_1.*dot.*shape"),
        (_inner_error_waited, mx.MXNetError, "fault_2.*dot.*shape"),
        (_inner_error_not_waited, mx.MXNetError, "fault_3.*dot.*shape"),
    ],
)
def test_reference_failure_cases_raise_at_the_call_site(forward, exc, pattern):
    name = f"fault_{[_assert_false, _inner_shape_error, _inner_error_waited, _inner_error_not_waited].index(forward)}"
    _register_failing(name, forward)
    x = nd.ones((2, 3))
    with pytest.raises(exc, match=pattern) as info:
        nd.Custom(x, op_type=name)
    if exc is AssertionError:
        assert isinstance(info.value.__cause__, AssertionError)  # the original, with its traceback
        # ... and, as MXNet raised MXNetError for it, that too
        assert isinstance(info.value, mx.MXNetError) and type(info.value).__name__ == "AssertionError"
    # the engine and the operator stay usable
    np.testing.assert_allclose(nd.Custom(x, op_type="sigmoid").asnumpy(), np.full((2, 3), 1 / (1 + np.e ** -1)), rtol=1e-6)
    with pytest.raises(exc):
        nd.Custom(x, op_type=name)


def test_exceptions_in_prop_hooks_keep_their_type():
    class BadShape(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            raise KeyError("no such shape")

        def create_operator(self, ctx, s, t):
            return mx.operator.CustomOp()

    class BadInit(mx.operator.CustomOpProp):
        def __init__(self, needed):
            super().__init__()

    mx.operator.register("bad_shape")(BadShape)
    mx.operator.register("bad_init")(BadInit)
    with pytest.raises(KeyError, match="no such shape"):
        nd.Custom(nd.ones(2), op_type="bad_shape")
    with pytest.raises(TypeError, match="needed"):
        nd.Custom(nd.ones(2), op_type="bad_init")
    with pytest.raises(mx.MXNetError, match="unknown_op_type|not registered|no custom operator"):
        nd.Custom(nd.ones(2), op_type="unknown_op_type")


def test_wrong_inferred_shape_mismatched_assignment_and_input_writes_are_errors():
    class WrongShape(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [(7, 7)], []

        def create_operator(self, ctx, s, t):
            return seed_sigmoid_dense.Sigmoid()

    class WritesInput(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            in_data[0][:] = 0

    class WritesInputProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, s, t):
            return WritesInput()

    class BadAssign(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], nd.ones((5, 5)))

    class BadAssignProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, s, t):
            return BadAssign()

    mx.operator.register("wrong_shape")(WrongShape)
    mx.operator.register("writes_input")(WritesInputProp)
    mx.operator.register("bad_assign")(BadAssignProp)
    x = nd.array([1.0, 2.0])
    with pytest.raises(mx.MXNetError, match="shape"):
        nd.Custom(x, op_type="wrong_shape")
    with pytest.raises(mx.MXNetError, match="read-only"):
        nd.Custom(x, op_type="writes_input")
    assert x.asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(mx.MXNetError, match="shape"):
        nd.Custom(x, op_type="bad_assign")


def test_four_threads_call_python_ops_concurrently():
    errors = []
    results = {}

    def work(tid):
        try:
            a = np.full((3,), float(tid), dtype=np.float32)
            x = nd.array(a)
            for _ in range(1000):
                y = nd.Custom(x, op_type="sigmoid")
            results[tid] = y.asnumpy()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    for tid in range(4):
        np.testing.assert_allclose(results[tid], np.full(3, 1 / (1 + np.exp(-tid))), rtol=1e-6)


def test_in_and_out_data_are_the_engines_buffers():
    seen = {}

    class Doubler(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            inputs = np.asarray(in_data[0])  # no copy: the engine's input, read-only here
            seen["input_writeable"] = inputs.flags.writeable
            np.asarray(out_data[0])[...] = inputs * 2  # written in place, no nd.array round trip

    class DoublerProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Doubler()

    mx.operator.register("doubler")(DoublerProp)
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = nd.Custom(x, op_type="doubler")
    np.testing.assert_allclose(y.asnumpy(), [[2, 4], [6, 8]])
    assert seen["input_writeable"] is False


def test_backward_sees_req_add_for_a_variable_with_grad_req_add():
    seen = []

    class Square(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            seen.append(req[0])
            self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])

    @mx.operator.register("square_req_probe")
    class SquareProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(True)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Square()

    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = nd.Custom(x, op_type="square_req_probe") + x  # a second path into x accumulates too
        y.backward()
    assert seen == ["add", "add"]
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (2 * np.array([1.0, 2.0]) + 1))
    w = nd.array([3.0])
    w.attach_grad()
    with autograd.record():
        z = nd.Custom(w, op_type="square_req_probe")
    z.backward()
    assert seen[-1] == "write"
    np.testing.assert_allclose(w.grad.asnumpy(), [6.0])


def test_deprecated_numpy_op_and_ndarray_op_run_as_custom_operators():
    x_sym = mx.sym.Variable("X")
    # the defaults copy forward and give ones backward, as MXNet 1.9.1's
    with pytest.warns(DeprecationWarning):
        default = mx.operator.NumpyOp()
    y = default.get_symbol(x_sym, name="numpy_op")
    x, dx = nd.ones(10) * 10, nd.zeros(10)
    exe = y.bind(mx.cpu(), args=[x], args_grad={"X": dx})
    exe.forward(is_train=True)
    exe.backward(nd.ones(10) * 3)
    assert (exe.outputs[0].asnumpy() == 10).all() and (dx.asnumpy() == 1).all()

    class Square(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] ** 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * in_data[0] * out_grad[0]

    class Scale(mx.operator.NDArrayOp):
        def list_arguments(self):
            return ["a", "b"]

        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] * in_data[1]

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = in_data[1] * out_grad[0]
            in_grad[1][:] = in_data[0] * out_grad[0]

    a = np.random.default_rng(0).normal(size=(3, 4))
    b = np.random.default_rng(1).normal(size=(3, 4))
    with pytest.warns(DeprecationWarning):
        square, scale = Square(), Scale()
    net = scale(square(mx.sym.Variable("a")), mx.sym.Variable("b"))
    mx.test_utils.check_symbolic_forward(net, [a, b], [a * a * b], rtol=1e-5)
    mx.test_utils.check_numeric_gradient(net, [a, b], rtol=1e-4, atol=1e-6)


def test_operator_introspection():
    names = mx.operator.get_all_registered_operators()
    assert {"Activation", "FullyConnected", "Custom"} <= set(names)
    info = mx.operator.get_operator_arguments("Activation")
    # the strings of MXNet 1.9.1's operator info
    assert info == mx.operator.OperatorArguments(
        2, ["data", "act_type"], ["NDArray-or-Symbol", "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"])
    dropout = mx.operator.get_operator_arguments("Dropout")
    assert dropout.types[1:3] == ["float, optional, default=0.5", "{'always', 'training'},optional, default='training'"]
    concat = mx.operator.get_operator_arguments("Concat")
    assert concat.names[:2] == ["data", "num_args"] and concat.types[0] == "NDArray-or-Symbol[]"
    with pytest.raises(mx.MXNetError, match="no operator named 'NoSuchOp'"):
        mx.operator.get_operator_arguments("NoSuchOp")
