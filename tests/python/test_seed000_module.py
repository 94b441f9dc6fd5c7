"""Seed 000 whole (examples/python/seed000_module.py): the symbolic MLP
with seed 000's numpy softmax as its loss, trained by Module.fit on the
shipped digits with Speedometer lines and a checkpoint per epoch, reloaded
and scored."""

import logging
import os

import seed000_module


def test_module_fit_trains_checkpoints_and_reloads(tmp_path, caplog):
    prefix = str(tmp_path / "mlp")
    with caplog.at_level(logging.INFO):
        train_acc, held_out = seed000_module.main(epochs=4, prefix=prefix)
    assert train_acc > 0.9 and held_out > 0.9
    assert os.path.exists(prefix + "-symbol.json")
    assert all(os.path.exists(f"{prefix}-{e:04d}.params") for e in range(1, 5))
    speed = [r.getMessage() for r in caplog.records if "samples/sec" in r.getMessage()]
    assert speed and "accuracy" in speed[0]


def test_profiled_training_traces_every_step(tmp_path):
    import json

    import oxnet as mx

    trace = tmp_path / "trace.json"
    mx.profiler.clear()
    seed000_module.main(epochs=1, prefix=str(tmp_path / "p"), profile=str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    steps = sum(1 for e in events if e.get("name") == "ExecutorForward")
    names = [e.get("name") for e in events]
    # one forward of the custom softmax's Python code per training step,
    # one backward, and the two dense layers' nodes
    assert steps > 10
    assert names.count("softmax::pure_python") == steps
    assert names.count("_backward_softmax::pure_python") == steps
    assert names.count("FullyConnected") == 2 * steps
    mx.profiler.clear()


def test_two_contexts_train_to_the_one_context_parameters(tmp_path):
    # the numpy softmax's gradient is per example, so the two halves of each
    # batch summed by the kvstore give the whole batch's gradient
    import numpy as np

    import oxnet as mx
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    seed000_module.main(epochs=2, prefix=one)
    seed000_module.main(epochs=2, prefix=two, contexts=2)
    a, b = mx.nd.load(one + "-0002.params"), mx.nd.load(two + "-0002.params")
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_allclose(b[k].asnumpy(), a[k].asnumpy(), rtol=1e-4, atol=1e-5, err_msg=k)
