"""gluon.Trainer's kvstore decisions, as MXNet 1.9.1 makes them."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd

TWO = [mx.cpu(0), mx.cpu(1)]


def _param(ctx=TWO):
    x = gluon.Parameter("x", shape=(4,))
    x.initialize(ctx=ctx, init="zeros")
    return x


def _backward(x, scale=lambda i: 1.0):
    with autograd.record():
        for i, w in enumerate(x.list_data()):
            (w * scale(i) + 1).backward()


@pytest.mark.parametrize("update_on_kvstore", [None, True, False])
def test_two_contexts_sum_their_gradients_whoever_updates(update_on_kvstore):
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5},
                            update_on_kvstore=update_on_kvstore)
    for _ in range(2):
        _backward(x)
        trainer.step(1)
    assert trainer._kvstore is not None and trainer._kvstore.type == "device"
    assert trainer._update_on_kvstore is (update_on_kvstore is not False)
    # gradient 1 on each context, summed: 2; momentum 0.5: -2 then -2 - (0.5*2 + 2) = -5
    for w in x.list_data():
        np.testing.assert_array_equal(w.asnumpy(), [-5.0] * 4)


def test_one_context_needs_no_store():
    x = _param([mx.cpu(0)])
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0})
    _backward(x)
    trainer.step(1)
    assert trainer._kvstore is None and trainer._update_on_kvstore is None
    assert x.data().asnumpy().tolist() == [-1.0] * 4


def test_a_store_without_an_optimizer_reduces_and_the_trainer_updates():
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=mx.kv.create("teststore"))
    _backward(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    assert x.data(mx.cpu(1)).asnumpy().tolist() == [-2.0] * 4
    bad = gluon.Trainer([x], "sgd", kvstore=mx.kv.create("teststore"), update_on_kvstore=True)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        bad.step(1)


def test_allreduce_then_update_and_their_errors_on_a_store_that_updates():
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, update_on_kvstore=False)
    _backward(x, scale=lambda i: float(i))  # gradients 0 and 1
    trainer.allreduce_grads()
    assert x.grad(mx.cpu(0)).asnumpy().tolist() == x.grad(mx.cpu(1)).asnumpy().tolist() == [1.0] * 4
    trainer.update(1)
    assert x.data(mx.cpu(1)).asnumpy().tolist() == [-1.0] * 4
    on_store = gluon.Trainer([_param()], "sgd", update_on_kvstore=True)
    for call in (on_store.allreduce_grads, lambda: on_store.update(1)):
        with pytest.raises(AssertionError, match="updated on kvstore is not supported"):
            call()


def test_a_scheduler_counts_one_update_per_step_over_two_contexts():
    for update_on_kvstore in (True, False):
        x = _param()
        sched = mx.lr_scheduler.FactorScheduler(2, factor=0.1, base_lr=1.0)
        trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched},
                                update_on_kvstore=update_on_kvstore)
        rates = []
        for _ in range(5):
            _backward(x)
            trainer.step(1)
            rates.append(trainer.learning_rate)
        np.testing.assert_allclose(rates, [1.0, 1.0, 0.1, 0.1, 0.01], rtol=1e-12)


def test_loading_parameters_restarts_a_store_that_holds_them():
    params = gluon.ParameterDict()
    x = params.get("x", shape=(4,))
    params.initialize(ctx=TWO, init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="local")
    _backward(x)
    trainer.step(1)
    assert x.data().asnumpy().tolist() == [pytest.approx(-0.2)] * 4
    x.set_data(nd.zeros((4,)))
    assert trainer._kvstore is None and trainer._kv_initialized is False
    _backward(x)
    trainer.step(1)
    assert x.data(mx.cpu(1)).asnumpy().tolist() == [pytest.approx(-0.2)] * 4


def test_stale_gradients_are_an_error_before_anything_changes():
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0})
    _backward(x)
    trainer.step(1)
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        trainer.step(1)
    assert x.data(mx.cpu(0)).asnumpy().tolist() == [-2.0] * 4
    trainer.step(1, ignore_stale_grad=True)  # nothing fresh: nothing changes
    assert x.data(mx.cpu(0)).asnumpy().tolist() == [-2.0] * 4


def test_states_round_trip_through_the_store(tmp_path):
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    _backward(x)
    trainer.step(1)
    assert trainer._update_on_kvstore
    path = str(tmp_path / "trainer.states")
    trainer.save_states(path)
    momentum = {k: v.asnumpy() for k, v in trainer._kvstore._updater.states.items()}
    _backward(x)
    trainer.step(1)
    trainer.load_states(path)
    assert trainer._optimizer is trainer._kvstore._updater.optimizer
    for k, v in trainer._kvstore._updater.states.items():
        np.testing.assert_array_equal(v.asnumpy(), momentum[k])
