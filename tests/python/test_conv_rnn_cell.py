"""The convolutional recurrent cells of mx.gluon.contrib.rnn against MXNet
1.9.1 (tests/fixtures/deformable/reference.npz, written by
scripts/make_deformable_fixtures.py) and hand-computed steps."""

import json
import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.gluon.contrib import rnn

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "deformable", "reference.npz")
CELLS = [f"Conv{d}D{k}Cell" for k in ("RNN", "LSTM", "GRU") for d in (1, 2, 3)]


@pytest.fixture(scope="module")
def ref():
    with np.load(FIXTURE) as f:
        return {k: f[k] for k in f.files}


def _load(cell, ref, key):
    for name, p in cell.collect_params().items():
        p.set_data(mx.nd.array(ref[f"{key}/{name[len(cell.prefix):]}"]))


@pytest.mark.parametrize("key", [f"cell_{c}" for c in CELLS] + ["cell_Conv2DGRUCell_relu"])
@pytest.mark.parametrize("hybridize", [False, True])
def test_cells_match_mxnet(ref, key, hybridize):
    name = key[len("cell_"):].replace("_relu", "")
    kwargs = json.loads(str(ref[f"{key}/kwargs"]))
    cell = getattr(rnn, name)(**kwargs)
    cell.initialize()
    if hybridize:
        cell.hybridize()
    x = mx.nd.array(ref[f"{key}/x"])
    cell.unroll(3, x, merge_outputs=True)  # deferred shapes
    _load(cell, ref, key)
    outputs, states = cell.unroll(3, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(outputs.asnumpy(), ref[f"{key}/out"], rtol=1e-4, atol=1e-5)
    assert len(states) == (2 if "LSTM" in name else 1)
    for i, s in enumerate(states):
        np.testing.assert_allclose(s.asnumpy(), ref[f"{key}/state{i}"], rtol=1e-4, atol=1e-5)
    # the same sequence time-major, as a list of steps
    steps = [x[:, t] for t in range(3)]
    outs, _ = cell.unroll(3, steps, layout="TNC", merge_outputs=False)
    for t in range(3):
        np.testing.assert_allclose(outs[t].asnumpy(), ref[f"{key}/out"][:, t], rtol=1e-4, atol=1e-5)


def test_one_rnn_step_by_hand():
    """Conv1DRNNCell with 1x1 kernels is an Elman cell per position."""
    cell = rnn.Conv1DRNNCell((2, 4), 3, 1, 1, activation="tanh")
    cell.initialize()
    rng = np.random.RandomState(3)
    wi, wh = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (3, 3))
    bi, bh = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    cell.i2h_weight.set_data(mx.nd.array(wi[:, :, None]))
    cell.h2h_weight.set_data(mx.nd.array(wh[:, :, None]))
    cell.i2h_bias.set_data(mx.nd.array(bi))
    cell.h2h_bias.set_data(mx.nd.array(bh))
    x = rng.uniform(-1, 1, (2, 2, 4))
    h = rng.uniform(-1, 1, (2, 3, 4))
    out, states = cell(mx.nd.array(x), [mx.nd.array(h)])
    want = np.tanh(np.einsum("oc,ncw->now", wi, x) + bi[:, None] + np.einsum("oc,ncw->now", wh, h) + bh[:, None])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_parameters_states_and_layouts():
    cell = rnn.Conv2DLSTMCell((3, 8, 6), 4, (3, 3), (5, 3), i2h_pad=(1, 0), h2h_dilate=(1, 2), prefix="lstm_")
    assert {k: tuple(p.shape) for k, p in cell.collect_params().items()} == {
        "lstm_i2h_weight": (16, 3, 3, 3), "lstm_h2h_weight": (16, 4, 5, 3),
        "lstm_i2h_bias": (16,), "lstm_h2h_bias": (16,)}
    assert cell.state_info(2) == [{"shape": (2, 4, 8, 4), "__layout__": "NCHW"}] * 2
    assert [s.shape for s in cell.begin_state(batch_size=2)] == [(2, 4, 8, 4)] * 2
    assert repr(cell) == "Conv2DLSTMCell(3 -> 16, tanh, NCHW)"
    # channel last: the channel axis of weights, inputs and states moves to the end
    cell = rnn.Conv1DGRUCell((9, 2), 5, 3, 3, conv_layout="NWC")
    assert cell.prefix.startswith("conv_gru")
    assert cell.i2h_weight.shape == (15, 3, 2) and cell.h2h_weight.shape == (15, 3, 5)
    assert cell.state_info(4) == [{"shape": (4, 7, 5), "__layout__": "NWC"}]
    # channel last equals channel first with the axes moved
    a = rnn.Conv2DRNNCell((2, 5, 4), 3, 3, 3, i2h_pad=1)
    b = rnn.Conv2DRNNCell((5, 4, 2), 3, 3, 3, i2h_pad=1, conv_layout="NHWC")
    for c in (a, b):
        c.initialize()
        c(mx.nd.ones((1, 2, 5, 4)) if c is a else mx.nd.ones((1, 5, 4, 2)), c.begin_state(batch_size=1))
    rng = np.random.RandomState(5)
    for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        v = rng.uniform(-1, 1, getattr(a, name).shape)
        getattr(a, name).set_data(mx.nd.array(v))
        getattr(b, name).set_data(mx.nd.array(np.moveaxis(v, 1, -1) if v.ndim > 1 else v))
    x = rng.uniform(-1, 1, (2, 3, 2, 5, 4))
    oa, _ = a.unroll(3, mx.nd.array(x), merge_outputs=True)
    ob, _ = b.unroll(3, mx.nd.array(np.moveaxis(x, 2, -1)), merge_outputs=True)
    np.testing.assert_allclose(np.moveaxis(ob.asnumpy(), -1, 2), oa.asnumpy(), rtol=1e-5, atol=1e-6)


def test_symbolic_unroll_and_deferred_channels():
    cell = rnn.Conv3DGRUCell((2, 4, 5, 6), 3, 3, 3, prefix="g_")
    outputs, _ = cell.unroll(2, [mx.sym.var(f"t{i}") for i in range(2)])
    outputs = mx.sym.Group(outputs)
    assert outputs.list_outputs() == ["g_t0_out_output", "g_t1_out_output"]
    _, outs, _ = outputs.infer_shape(t0=(1, 2, 4, 5, 6), t1=(1, 2, 4, 5, 6))
    assert outs == [(1, 3, 2, 3, 4)] * 2
    cell = rnn.Conv1DLSTMCell((0, 7), 10, (3,), (3,))
    cell.hybridize()
    cell.initialize()
    cell.unroll(3, mx.nd.ones((8, 3, 5, 7)), merge_outputs=True)
    assert cell.i2h_weight.shape == (40, 5, 3)


def test_gradients_flow():
    cell = rnn.Conv2DGRUCell((2, 4, 4), 2, 3, 3, i2h_pad=1)
    cell.initialize(mx.init.Uniform(0.3))
    x = mx.nd.random.uniform(shape=(2, 3, 2, 4, 4))
    x.attach_grad()
    with mx.autograd.record():
        out, _ = cell.unroll(3, x, merge_outputs=True)
    out.backward()
    assert np.abs(x.grad.asnumpy()).sum() > 0
    assert all(np.abs(p.grad().asnumpy()).sum() > 0 for p in cell.collect_params().values())


def test_argument_errors():
    with pytest.raises(ValueError, match="h2h_kernel"):
        rnn.Conv2DRNNCell((2, 5, 5), 3, 3, (2, 3))
    with pytest.raises(ValueError, match="i2h_kernel"):
        rnn.Conv2DLSTMCell((2, 5, 5), 3, (3, 3, 3), 3)
    with pytest.raises(ValueError, match="conv_layout"):
        rnn.Conv1DGRUCell((2, 5), 3, 3, 3, conv_layout="NCHW")
    with pytest.raises(ValueError, match="input_shape"):
        rnn.Conv3DRNNCell((2, 5, 5), 3, 3, 3)
    cell = rnn.Conv1DRNNCell((2, 5), 3, 3, 3)
    cell.initialize()
    with pytest.raises(MXNetError, match="state"):
        cell(mx.nd.ones((1, 2, 5)), [mx.nd.ones((1, 3, 5))])


def test_exports_and_docs():
    for name in CELLS:
        cls = getattr(rnn, name)
        assert name in rnn.__all__ and cls.__doc__ and cls.__init__.__doc__
        assert cls is getattr(mx.gluon.contrib.rnn.conv_rnn_cell, name)
