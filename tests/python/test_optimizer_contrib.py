"""mx.optimizer.contrib.GroupAdaGrad against MXNet 1.9.1's numbers
(tests/fixtures/contrib/reference.json, from scripts/make_contrib_fixtures.py)
and the update rule written out in numpy."""

import json
import pathlib

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "contrib" / "reference.json"
REF = json.loads(FIXTURES.read_text())["group_adagrad"]


def test_registered_and_reachable():
    assert mx.optimizer.contrib.GroupAdaGrad is mx.optimizer.Optimizer.opt_registry["groupadagrad"]
    opt = mx.optimizer.create("groupadagrad", eps=1e-6, learning_rate=0.5)
    assert isinstance(opt, mx.optimizer.contrib.GroupAdaGrad)
    assert opt.float_stable_eps == 1e-6 and opt.learning_rate == 0.5
    assert "contrib" in mx.optimizer.__all__
    assert mx.optimizer.contrib.__all__ == ["GroupAdaGrad"]


@pytest.mark.parametrize("case", range(len(REF["cases"])))
def test_matches_mxnet(case):
    spec = REF["cases"][case]
    opt = mx.optimizer.create("groupadagrad", **spec["kwargs"])
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.array(REF["weight0"])
    for grad, expected in zip(REF["grads"], spec["weights"]):
        updater(0, mx.nd.array(grad), weight)
        np.testing.assert_allclose(weight.asnumpy(), np.array(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(updater.states[0].asnumpy(), np.array(spec["history"]), rtol=1e-5)


def test_rule_in_numpy():
    rng = np.random.RandomState(0)
    w = rng.uniform(-1, 1, (4, 3)).astype("float32")
    grads = [rng.uniform(-2, 2, (4, 3)).astype("float32") for _ in range(3)]
    opt = mx.optimizer.contrib.GroupAdaGrad(learning_rate=0.2, eps=1e-4, clip_gradient=1.0, rescale_grad=0.7)
    weight = mx.nd.array(w)
    state = opt.create_state(0, weight)
    assert state.shape == (4, 1) and (state.asnumpy() == 0).all()
    hist = np.zeros((4, 1), "float32")
    for g in grads:
        opt.update(0, weight, mx.nd.array(g), state)
        gg = np.clip(g * 0.7, -1.0, 1.0)
        hist += (gg ** 2).mean(axis=1, keepdims=True)
        w = w - 0.2 * gg / np.sqrt(hist + 1e-4)
        np.testing.assert_allclose(weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state.asnumpy(), hist, rtol=1e-5)


def test_errors():
    opt = mx.optimizer.contrib.GroupAdaGrad()
    with pytest.raises(ValueError, match="2-D"):
        opt.create_state(0, mx.nd.zeros((3,)))
    opt_wd = mx.optimizer.contrib.GroupAdaGrad(wd=0.1, param_idx2name={0: "emb_weight"})
    w = mx.nd.ones((2, 2))
    with pytest.raises(MXNetError, match="weight decay"):
        opt_wd.update(0, w, mx.nd.ones((2, 2)), opt_wd.create_state(0, w))
    with pytest.raises(TypeError, match="NDArray"):
        opt.update(0, np.ones((2, 2)), mx.nd.ones((2, 2)), mx.nd.zeros((2, 1)))


def test_gluon_trainer():
    emb = mx.gluon.nn.Embedding(5, 3)
    emb.initialize(mx.init.Constant(1.0))
    trainer = mx.gluon.Trainer(emb.collect_params(), "groupadagrad", {"learning_rate": 0.1})
    with mx.autograd.record():
        loss = emb(mx.nd.array([0, 2])).sum()
    loss.backward()
    trainer.step(1)
    w = emb.weight.data().asnumpy()
    # rows 0 and 2 got gradient 1: history 1, step 0.1 / sqrt(1 + 1e-5)
    np.testing.assert_allclose(w[[0, 2]], 1 - 0.1 / np.sqrt(1 + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(w[[1, 3, 4]], 1.0)


def test_adamw_update_takes_a_number_or_an_array_for_rescale_grad():
    # MXNet 1.9.1's mx.nd.contrib.adamw_update wraps a number into a one-element array
    w, g = mx.nd.ones((3,)), mx.nd.ones((3,))
    results = []
    for rescale in (0.5, mx.nd.array([0.5])):
        m, v = mx.nd.zeros((3,)), mx.nd.zeros((3,))
        results.append(mx.nd.contrib.adamw_update(w, g, m, v, rescale_grad=rescale, lr=0.1, eta=1.0).asnumpy())
    mean, var = 0.1 * 0.5, 0.001 * 0.25
    expected = 1 - 0.1 * mean / (np.sqrt(var) + 1e-8)
    np.testing.assert_allclose(results[0], np.full(3, expected), rtol=1e-5)  # float32 arithmetic
    np.testing.assert_array_equal(results[0], results[1])
    # 0 skips the update
    out = mx.nd.contrib.adamw_update(w, g, mx.nd.zeros((3,)), mx.nd.zeros((3,)), rescale_grad=0.0, lr=0.1, eta=1.0)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(3))
