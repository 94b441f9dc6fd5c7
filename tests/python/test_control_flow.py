"""Imperative control flow: ``mx.nd.contrib.foreach``, ``while_loop`` and
``cond``, and ``gluon.contrib.rnn.dynamic_unroll`` built on foreach.

They are checked against plain Python loops, against the values and
gradients MXNet 1.9.1 computed (tests/fixtures/control_flow/values.json,
written by scripts/make_control_flow_fixtures.py), against finite
differences and the unrolled computation for gradients, and
dynamic_unroll against ``cell.unroll`` with the same weights.
"""

import json
import pathlib

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.base import MXNetError
from oxnet.gluon.contrib.rnn import rnn_cell as contrib_rnn_cell

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "control_flow" / "values.json"

foreach = mx.nd.contrib.foreach
while_loop = mx.nd.contrib.while_loop
cond = mx.nd.contrib.cond


@pytest.fixture(scope="module")
def fixtures():
    with open(FIXTURES) as f:
        return json.load(f)


def nd(values):
    return mx.nd.array(np.asarray(values, dtype=np.float32))


def leaves(nested):
    if isinstance(nested, mx.nd.NDArray):
        return [nested]
    return [leaf for item in nested for leaf in leaves(item)]


def close(actual, expected, rtol=1e-5, atol=1e-6):
    actual = actual.asnumpy() if isinstance(actual, mx.nd.NDArray) else np.asarray(actual)
    np.testing.assert_allclose(actual, np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol)


def backward_with(results, heads):
    autograd.backward(results, head_grads=[nd(h) for h in heads])


def attached(inputs):
    arrays = {k: nd(v) for k, v in inputs.items()}
    for array in arrays.values():
        array.attach_grad()
    return arrays


# -- foreach ------------------------------------------------------------------

def test_foreach_matches_python_loop():
    rng = np.random.default_rng(0)
    data = nd(rng.uniform(-1, 1, (5, 3)))
    init = nd(rng.uniform(-1, 1, (3,)))

    def step(x, states):
        total = states[0] * 0.5 + x
        return [total, x * 2], [total]

    outs, states = foreach(step, data, [init])
    total = init.asnumpy()
    expected = []
    for row in data.asnumpy():
        total = total * 0.5 + row
        expected.append(total)
    assert isinstance(outs, list) and len(outs) == 2 and outs[0].shape == (5, 3)
    close(outs[0], np.stack(expected))
    close(outs[1], data.asnumpy() * 2)
    assert isinstance(states, list) and len(states) == 1
    close(states[0], expected[-1])


def test_foreach_output_structure():
    data = mx.nd.arange(6).reshape((3, 2))
    # a lone NDArray output stays a lone NDArray; a lone NDArray state too
    out, state = foreach(lambda x, s: (x + s, s + 1), data, mx.nd.zeros((2,)))
    assert isinstance(out, mx.nd.NDArray) and out.shape == (3, 2)
    assert isinstance(state, mx.nd.NDArray)
    close(out, [[0, 1], [3, 4], [6, 7]])
    close(state, [3, 3])
    # a list of one output stays a list of one
    outs, _ = foreach(lambda x, s: ([x], s), data, [mx.nd.zeros((2,))])
    assert isinstance(outs, list) and len(outs) == 1 and outs[0].shape == (3, 2)
    # states come back as the body returned them (here a tuple)
    _, states = foreach(lambda x, s: (x, s), data, (mx.nd.ones((2,)),))
    assert isinstance(states, tuple)
    # no outputs, or no states
    outs, states = foreach(lambda x, s: ([], [s[0] + x]), data, [mx.nd.zeros((2,))])
    assert outs == []
    close(states[0], [6, 9])
    outs, states = foreach(lambda x, s: (x * 2, []), data, [])
    assert states == []
    close(outs, data.asnumpy() * 2)
    # a 1-D array steps over one-element slices, as in MXNet
    outs, _ = foreach(lambda x, s: (x * 3, s), mx.nd.arange(3), [])
    assert outs.shape == (3, 1)
    close(outs, [[0], [3], [6]])


def test_foreach_nested_lists():
    x = mx.nd.arange(8).reshape((4, 2))
    y = mx.nd.arange(4).reshape((4, 1))
    z = mx.nd.ones((4, 3))

    def step(data, states):
        a, [b, c] = data
        h, [k] = states
        new_h = h + a * b
        new_k = k + c.sum()
        return [new_h, [new_k, a]], [new_h, [new_k]]

    outs, states = foreach(step, [x, [y, z]], [mx.nd.zeros((2,)), [mx.nd.zeros((1,))]])
    assert isinstance(outs, list) and isinstance(outs[1], list)
    assert [o.shape for o in leaves(outs)] == [(4, 2), (4, 1), (4, 2)]
    h = np.zeros(2)
    hs = []
    for a, b in zip(x.asnumpy(), y.asnumpy()):
        h = h + a * b
        hs.append(h)
    close(outs[0], np.stack(hs))
    close(outs[1][0], [[3], [6], [9], [12]])
    close(outs[1][1], x)
    assert isinstance(states[1], list)
    close(states[0], hs[-1])
    close(states[1][0], [12])


def test_foreach_matches_mxnet(fixtures):
    case = fixtures["foreach"]
    arrays = attached(case["inputs"])
    w = arrays["w"]

    def body(data, states):
        x, y = data
        h, [c] = states
        new_h = mx.nd.tanh(x * w + h * 0.5) + y.sum()
        new_c = c * y + new_h.mean()
        return [new_h * 2, [new_c, x * h]], [new_h, [new_c]]

    with autograd.record():
        outs, states = foreach(body, [arrays["x"], arrays["y"]], [arrays["h"], [arrays["c"]]])
        results = leaves(outs) + leaves(states)
    backward_with(results, case["heads"])
    assert len(results) == len(case["results"])
    for result, expected in zip(results, case["results"]):
        close(result, expected, rtol=1e-5, atol=1e-5)
    for name, expected in case["grads"].items():
        close(arrays[name].grad, expected, rtol=1e-4, atol=1e-5)


def test_nested_foreach_matches_mxnet(fixtures):
    case = fixtures["nested_foreach"]
    arrays = attached(case["inputs"])

    def inner(x, states):
        out = x * 2 + mx.nd.sin(states[0])
        return out, [out]

    def outer(x, states):
        out, _ = foreach(inner, x, states)
        out = mx.nd.broadcast_add(out, states[0])
        return out, [out[1] * 0.5]

    with autograd.record():
        out, states = foreach(outer, arrays["data"], [arrays["state"]])
        results = [out, states[0]]
    backward_with(results, case["heads"])
    for result, expected in zip(results, case["results"]):
        close(result, expected, rtol=1e-5, atol=1e-5)
    for name, expected in case["grads"].items():
        close(arrays[name].grad, expected, rtol=1e-4, atol=1e-5)


def test_foreach_gradients_match_unrolled_loop():
    rng = np.random.default_rng(1)
    values = {"x": rng.uniform(-1, 1, (3, 2)), "h": rng.uniform(-1, 1, (2,)), "w": rng.uniform(-1, 1, (2,))}

    def step(x, h, w):
        return mx.nd.sigmoid(x * w + h)

    looped = attached(values)
    with autograd.record():
        outs, states = foreach(lambda x, s: (s[0] * x, [step(x, s[0], looped["w"])]),
                               looped["x"], [looped["h"]])
        loss = (outs * outs).sum() + states[0].sum() * 3
    loss.backward()

    unrolled = attached(values)
    with autograd.record():
        h = unrolled["h"]
        pieces = []
        for i in range(3):
            x = unrolled["x"][i]
            pieces.append(h * x)
            h = step(x, h, unrolled["w"])
        out = mx.nd.stack(*pieces)
        loss2 = (out * out).sum() + h.sum() * 3
    loss2.backward()
    close(loss, loss2.asnumpy())
    for name in values:
        close(looped[name].grad, unrolled[name].grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_foreach_errors():
    data = mx.nd.ones((2, 3))
    # wrong kinds: AssertionError as in MXNet, and MXNetError
    for bad_data in (5, [data, 5]):
        with pytest.raises(AssertionError, match="foreach's data must be an NDArray"):
            foreach(lambda x, s: (x, s), bad_data, [])
    with pytest.raises(MXNetError, match="init_states must be an NDArray"):
        foreach(lambda x, s: (x, s), data, [3])
    with pytest.raises(AssertionError, match="outputs of foreach's body"):
        foreach(lambda x, s: (3, s), data, [])
    with pytest.raises(AssertionError, match="as many states as init_states"):
        foreach(lambda x, s: (x, [s[0], s[0]]), data, [mx.nd.ones((3,))])
    with pytest.raises(MXNetError, match="must return \\(outputs, new_states\\)"):
        foreach(lambda x, s: x, data, [])
    # wrong values
    with pytest.raises(ValueError, match="same length along axis 0"):
        foreach(lambda x, s: (x[0], s), [data, mx.nd.ones((3, 1))], [])
    with pytest.raises(MXNetError, match="holds no NDArray"):
        foreach(lambda x, s: (x, s), [], [])
    with mx.np_shape():
        empty = mx.nd.zeros((0, 3))
    with pytest.raises(MXNetError, match="no steps"):
        foreach(lambda x, s: (x, s), empty, [])
    counter = {"n": 0}

    def growing(x, s):
        counter["n"] += 1
        return [x] * counter["n"], s
    with pytest.raises(ValueError, match="same structure at every step"):
        foreach(growing, data, [])

    def reshaping(x, s):
        counter["n"] += 1
        return x[: counter["n"]], s
    counter["n"] = 0
    with pytest.raises(MXNetError, match="shapes of output 0 differ"):
        foreach(reshaping, data, [])


# -- while_loop ---------------------------------------------------------------

def test_while_loop_matches_python_loop_and_pads_with_zeros():
    # MXNet's documented example: outputs i + s while i <= 5
    loop_vars = (mx.nd.array([0], dtype="int64"), mx.nd.array([1], dtype="int64"))
    outs, (i, s) = while_loop(lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s + i]), loop_vars,
                              max_iterations=10)
    assert isinstance(outs, list) and len(outs) == 1
    assert outs[0].shape == (10, 1) and outs[0].dtype == np.int64
    assert outs[0].asnumpy().ravel().tolist() == [1, 2, 4, 7, 11, 16, 0, 0, 0, 0]
    assert i.asscalar() == 6 and s.asscalar() == 16
    # stopped by max_iterations: no padding
    outs, (i, s) = while_loop(lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s + i]), loop_vars,
                              max_iterations=3)
    assert outs[0].asnumpy().ravel().tolist() == [1, 2, 4]
    assert i.asscalar() == 3 and s.asscalar() == 4
    # a Python loop doing the same
    rng = np.random.default_rng(2)
    start = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    outs, final = while_loop(lambda x: x.sum() < 40, lambda x: ([x * 2, [x.sum()]], [x + 1.5]),
                             [mx.nd.array(start)], max_iterations=20)
    x, rows, sums = start.copy(), [], []
    while x.sum() < 40:
        rows.append(x * 2)
        sums.append([x.sum()])
        x = x + 1.5
    steps = len(rows)
    assert 0 < steps < 20
    assert isinstance(outs[1], list)
    assert outs[0].shape == (20, 2, 3) and outs[1][0].shape == (20, 1)
    close(outs[0][:steps], np.stack(rows))
    close(outs[1][0][:steps], sums, rtol=1e-5, atol=1e-5)
    assert not outs[0][steps:].asnumpy().any() and not outs[1][0][steps:].asnumpy().any()
    assert isinstance(final, list)
    close(final[0], x)


def test_while_loop_zero_iterations():
    loop_vars = (mx.nd.array([0], dtype="int64"), mx.nd.array([1], dtype="int64"))
    body = lambda i, s: ([i + s], [i + 1, s + i])  # noqa: E731
    outs, states = while_loop(lambda i, s: i > 100, body, loop_vars, max_iterations=10)
    # the step outputs are unknown: [] and the loop_vars as they were given
    assert outs == []
    assert states is loop_vars
    as_list = list(loop_vars)
    outs, states = while_loop(lambda i, s: i > 100, body, as_list, max_iterations=10)
    assert outs == [] and states is as_list
    for max_iterations in (0, -2):
        outs, states = while_loop(lambda i, s: i < 3, body, loop_vars, max_iterations=max_iterations)
        assert outs == [] and states is loop_vars
    # a lone NDArray loop variable comes back as a lone NDArray
    start = mx.nd.array([7])
    outs, state = while_loop(lambda i: i < 3, lambda i: (i * 2, i + 1), start, max_iterations=5)
    assert outs == [] and state is start


def test_while_loop_output_forms():
    start = mx.nd.array([0])
    # a lone NDArray output and a lone NDArray loop variable
    out, state = while_loop(lambda i: i < 3, lambda i: (i * 2, i + 1), start, max_iterations=5)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (5, 1)
    close(out, [[0], [2], [4], [0], [0]])
    assert isinstance(state, mx.nd.NDArray)
    close(state, [3])
    # func returning a list for a lone loop variable still gives a lone NDArray back
    _, state = while_loop(lambda i: i < 3, lambda i: (i * 2, [i + 1]), start, max_iterations=5)
    assert isinstance(state, mx.nd.NDArray)
    # no step output (None), tuples, a Python condition, max_iterations as an NDArray or a float
    outs, states = while_loop(lambda i: i < 3, lambda i: (None, i + 1), [start], max_iterations=5)
    assert outs == [] and isinstance(states, list)
    close(states[0], [3])
    outs, states = while_loop(lambda i: True, lambda i: ((i, i * 2), (i + 1,)), [start],
                              max_iterations=mx.nd.array([3]))
    assert isinstance(outs, list) and len(outs) == 2 and outs[1].shape == (3, 1)
    assert isinstance(states, list)
    outs, _ = while_loop(lambda i: i < 10, lambda i: (i, i + 1), start, max_iterations=2.7)
    assert outs.shape == (2, 1)
    # nested loop variables are handed to cond and func as they are
    outs, states = while_loop(lambda i, s: i < 2, lambda i, s: (i, (i + 1, [s[0] + 10])),
                              [start, [mx.nd.array([5])]], max_iterations=3)
    close(states[1][0], [25])
    # padding keeps the dtype
    outs, _ = while_loop(lambda i: i < 2, lambda i: (i.astype("int32"), i + 1), start, max_iterations=4)
    assert outs.dtype == np.int32 and outs.asnumpy().ravel().tolist() == [0, 1, 0, 0]


def test_while_loop_matches_mxnet(fixtures):
    for case in fixtures["while_loop"]:
        arrays = attached(case["inputs"])
        w = arrays["w"]
        limit = case["limit"]

        def func(i, s):
            new_s = mx.nd.sin(s * w) + i
            return [new_s, [new_s * i]], [i + 1, new_s]

        with autograd.record():
            outs, (i, s) = while_loop(lambda i, s: i < limit, func, [mx.nd.array([0]), arrays["s"]],
                                      max_iterations=case["max_iterations"])
            steps = int(i.asscalar())
            flat = leaves(outs)
            assert [list(o.shape) for o in flat] == case["shapes"]
            results = [o[:steps] for o in flat] + [s] if steps else [s * 1]
        assert steps == case["steps"]
        backward_with(results, case["heads"])
        for result, expected in zip(results, case["results"]):
            close(result, expected, rtol=1e-5, atol=1e-5)
        for name, expected in case["grads"].items():
            close(arrays[name].grad, expected, rtol=1e-4, atol=1e-5)


def test_while_loop_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    w0 = rng.uniform(0.5, 1.0, (3,))
    x0 = rng.uniform(-1, 1, (3,))

    def run(x_values, w_values, record=False):
        x, w = nd(x_values), nd(w_values)
        if record:
            x.attach_grad()
            w.attach_grad()
        with autograd.record(train_mode=False) if record else autograd.pause():
            outs, (_, final) = while_loop(lambda k, x: k < 4,
                                          lambda k, x: ([mx.nd.tanh(x) * k], [k + 1, mx.nd.tanh(x * w) + x]),
                                          [mx.nd.array([0]), x], max_iterations=6)
            loss = (outs[0] * outs[0]).sum() + (final * nd([1.0, -2.0, 0.5])).sum()
        if record:
            loss.backward()
            return x.grad.asnumpy(), w.grad.asnumpy()
        return float(loss.asscalar())

    grad_x, grad_w = run(x0, w0, record=True)
    eps = 1e-2
    for base, grad, which in ((x0, grad_x, 0), (w0, grad_w, 1)):
        numeric = np.zeros_like(base)
        for j in range(base.size):
            up, down = base.copy(), base.copy()
            up[j] += eps
            down[j] -= eps
            args_up = (up, w0) if which == 0 else (x0, up)
            args_down = (down, w0) if which == 0 else (x0, down)
            numeric[j] = (run(*args_up) - run(*args_down)) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=2e-2, atol=2e-3)


def test_while_loop_errors():
    start = mx.nd.array([0])
    body = lambda i: (i, i + 1)  # noqa: E731
    with pytest.raises(ValueError, match="max_iterations"):
        while_loop(lambda i: i < 3, body, start)
    with pytest.raises(MXNetError, match="max_iterations"):
        while_loop(lambda i: i < 3, body, start)
    with pytest.raises(ValueError, match="cannot convert max_iterations"):
        while_loop(lambda i: i < 3, body, start, max_iterations="abc")
    with pytest.raises(ValueError, match="at least one element"):
        while_loop(lambda: True, lambda: ([], []), [], max_iterations=3)
    with pytest.raises(AssertionError, match="loop_vars must be an NDArray"):
        while_loop(lambda i: i < 3, body, 5, max_iterations=3)
    with pytest.raises(ValueError, match="length of loop_vars should be consistent"):
        while_loop(lambda i, s: i < 3, lambda i, s: ([i], [i + 1]), [start, start], max_iterations=3)
    with pytest.raises(ValueError, match="NDArray of one element"):
        while_loop(lambda i: i < 3, body, mx.nd.array([0, 1]), max_iterations=3)
    with pytest.raises(MXNetError, match="must return \\(step_output, new_loop_vars\\)"):
        while_loop(lambda i: i < 3, lambda i: i + 1, start, max_iterations=3)
    with pytest.raises(AssertionError, match="step output of while_loop's func"):
        while_loop(lambda i: i < 3, lambda i: (3, i + 1), start, max_iterations=3)
    with pytest.raises(ValueError, match="Number of elements in step_output"):
        while_loop(lambda i: i < 3, lambda i: ([i] * (int(i.asscalar()) + 1), i + 1), start, max_iterations=5)
    with pytest.raises(ValueError, match="shapes of output 0 differ"):
        while_loop(lambda i: i < 3, lambda i: (mx.nd.ones((int(i.asscalar()) + 1,)), i + 1), start,
                   max_iterations=5)


# -- cond ---------------------------------------------------------------------

def test_cond_picks_a_branch():
    a, b = mx.nd.array([1]), mx.nd.array([2])
    out = cond(a * b < 5, lambda: (a + 5) * (b + 5), lambda: (a - 5) * (b - 5))
    close(out, [42])
    out = cond(a * b > 5, lambda: [a + 5], lambda: [a - 5, b])
    assert isinstance(out, list) and len(out) == 2
    close(out[0], [-4])
    # Python values by their truth, one-element arrays of any shape or dtype
    assert cond(0, lambda: "then", lambda: "else") == "else"
    assert cond(None, lambda: "then", lambda: "else") == "else"
    assert cond(mx.nd.array([3], dtype="int64"), lambda: "then", lambda: "else") == "then"
    assert cond(mx.nd.array([[0]]), lambda: "then", lambda: "else") == "else"
    # only the chosen branch runs
    ran = []
    cond(mx.nd.array([1]), lambda: ran.append("then"), lambda: ran.append("else"))
    assert ran == ["then"]


def test_cond_matches_mxnet(fixtures):
    for case in fixtures["cond"]:
        arrays = attached(case["inputs"])
        a, b = arrays["a"], arrays["b"]
        with autograd.record():
            out = cond(mx.nd.array([case["pred"]]), lambda: [a * b, mx.nd.exp(a)],
                       lambda: [a - mx.nd.square(b), b * 3])
        backward_with(out, case["heads"])
        for result, expected in zip(out, case["results"]):
            close(result, expected)
        for name, expected in case["grads"].items():
            close(arrays[name].grad, expected)


def test_cond_errors():
    with pytest.raises(ValueError, match="cond's pred must be an NDArray of one element"):
        cond(mx.nd.array([1, 1]), lambda: 1, lambda: 2)
    with pytest.raises(MXNetError, match="cond's pred"):
        cond(mx.nd.array([1, 1]), lambda: 1, lambda: 2)
    with pytest.raises(ValueError, match="cannot convert cond's pred"):
        cond(np.array([1, 1]), lambda: 1, lambda: 2)


def test_control_flow_in_contrib_namespace():
    for name in ("foreach", "while_loop", "cond"):
        assert callable(getattr(mx.nd.contrib, name))
        assert getattr(mx.ndarray.contrib, name) is getattr(mx.nd.contrib, name)


# -- dynamic_unroll -------------------------------------------------------------

def _cell_and_data(cell_class, layout, seed, seq=4, batch=3, size=5, hidden=6):
    rng = np.random.default_rng(seed)
    cell = cell_class(hidden, input_size=size, prefix="rnn_")
    cell.initialize()
    for param in cell.collect_params().values():
        param.set_data(nd(rng.uniform(-0.5, 0.5, param.shape)))
    shape = (seq, batch, size) if layout == "TNC" else (batch, seq, size)
    data = rng.uniform(-1, 1, shape)
    begin = [rng.uniform(-1, 1, (batch, hidden)) for _ in cell.state_info()]
    return cell, data, begin


@pytest.mark.parametrize("cell_class", [gluon.rnn.LSTMCell, gluon.rnn.GRUCell])
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
@pytest.mark.parametrize("with_length", [False, True])
def test_dynamic_unroll_matches_unroll(cell_class, layout, with_length):
    cell, data, begin = _cell_and_data(cell_class, layout, seed=4)
    valid_length = nd([2, 4, 1]) if with_length else None
    runs = []
    for method in ("unroll", "dynamic"):
        x = nd(data)
        x.attach_grad()
        states = [nd(s) for s in begin]
        for s in states:
            s.attach_grad()
        with autograd.record():
            if method == "unroll":
                out, final = cell.unroll(4, x, states, layout=layout, merge_outputs=True, valid_length=valid_length)
            else:
                out, final = contrib_rnn_cell.dynamic_unroll(cell, x, states, layout=layout,
                                                             valid_length=valid_length)
            loss = (out * out).sum() + sum((f * (k + 2)).sum() for k, f in enumerate(final))
        loss.backward()
        runs.append((out.asnumpy(), [f.asnumpy() for f in final], x.grad.asnumpy(),
                     [s.grad.asnumpy() for s in states], cell.i2h_weight.grad().asnumpy().copy()))
    (out1, final1, gx1, gs1, gw1), (out2, final2, gx2, gs2, gw2) = runs
    assert out2.shape == out1.shape == data.shape[:2] + (6,)
    assert isinstance(runs[1][1], list) and len(final2) == len(final1)
    close(out2, out1)
    for a, b in zip(final2, final1):
        close(a, b)
    close(gx2, gx1, atol=1e-5)
    for a, b in zip(gs2, gs1):
        close(a, b, atol=1e-5)
    close(gw2, gw1, atol=1e-5)
    if with_length:
        time_axis = 0 if layout == "TNC" else 1
        past = np.take(out2, [2, 3], axis=time_axis)
        assert not np.take(past, [0], axis=1 - time_axis).any()


def test_dynamic_unroll_matches_mxnet(fixtures):
    for case in fixtures["dynamic_unroll"]:
        cell = getattr(gluon.rnn, case["cell"])(case["hidden"], input_size=len(case["inputs"][0][0]),
                                                prefix="rnn_")
        cell.initialize()
        for name, param in cell.collect_params().items():
            param.set_data(nd(case["weights"][name[len("rnn_"):]]))
        x = nd(case["inputs"])
        x.attach_grad()
        length = None if case["valid_length"] is None else nd(case["valid_length"])
        with autograd.record():
            outputs, states = contrib_rnn_cell.dynamic_unroll(cell, x, [nd(s) for s in case["begin"]],
                                                              layout=case["layout"], valid_length=length)
            results = [outputs] + list(states)
        backward_with(results, case["heads"])
        for result, expected in zip(results, case["results"]):
            close(result, expected, atol=1e-5)
        close(x.grad, case["grad_inputs"], rtol=1e-4, atol=1e-5)
        close(cell.i2h_weight.grad(), case["grad_i2h_weight"], rtol=1e-4, atol=1e-5)


def test_dynamic_unroll_forms_and_dropout():
    assert gluon.contrib.rnn.dynamic_unroll is contrib_rnn_cell.dynamic_unroll
    cell, data, _ = _cell_and_data(gluon.rnn.GRUCell, "TNC", seed=5)
    x = nd(data)
    # begin_state None gives the cell's zero states; a list of steps is stacked
    out, states = contrib_rnn_cell.dynamic_unroll(cell, x, None)
    ref, ref_states = cell.unroll(4, x, None, layout="TNC", merge_outputs=True)
    close(out, ref.asnumpy())
    close(states[0], ref_states[0].asnumpy())
    out_steps, _ = contrib_rnn_cell.dynamic_unroll(cell, [x[t] for t in range(4)], None)
    close(out_steps, ref.asnumpy())
    # dropout: nothing outside training; in training the input mask is shared by all steps
    out, _ = contrib_rnn_cell.dynamic_unroll(cell, x, None, drop_inputs=0.5, drop_outputs=0.5)
    close(out, ref.asnumpy())
    with autograd.train_mode():
        out, _ = contrib_rnn_cell.dynamic_unroll(cell, mx.nd.ones((4, 3, 5)), None, drop_outputs=0.5)
    kept = out.asnumpy() != 0
    assert (kept == kept[:1]).all()
