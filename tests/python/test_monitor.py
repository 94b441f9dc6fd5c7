"""``mx.monitor.Monitor``: statistics of operator outputs, arguments and
auxiliary states every ``interval`` batches (checked against numpy), on a
bound executor and through ``Module.fit``."""

import logging

import numpy as np

import oxnet as mx


def test_monitor_collects_matching_arrays_every_interval():
    x = mx.sym.var("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=3, name="fc1"), act_type="relu", name="act")
    rng = np.random.default_rng(0)
    args = {"data": mx.nd.array(rng.standard_normal((4, 5))), "fc1_weight": mx.nd.array(rng.standard_normal((3, 5))),
            "fc1_bias": mx.nd.array(rng.standard_normal(3))}
    exe = net.bind(mx.cpu(), args)
    mon = mx.monitor.Monitor(2, pattern=".*(output|weight)", sort=True)
    mon.install(exe)
    rows = []
    for _ in range(3):
        mon.tic()
        exe.forward()
        rows.append(mon.toc())
    assert rows[1] == []  # only every second batch
    names = [name for _, name, _ in rows[0]]
    assert names == sorted(names) and "fc1_output" in names and "fc1_weight" in names and "fc1_bias" not in names
    stat = {name: float(text) for _, name, text in rows[0]}
    fc = args["data"].asnumpy() @ args["fc1_weight"].asnumpy().T + args["fc1_bias"].asnumpy()
    np.testing.assert_allclose(stat["fc1_output"], np.linalg.norm(fc) / np.sqrt(fc.size), rtol=1e-5)
    w = args["fc1_weight"].asnumpy()
    np.testing.assert_allclose(stat["fc1_weight"], np.linalg.norm(w) / np.sqrt(w.size), rtol=1e-5)
    assert rows[2][0][0] == 3  # the step counter
    assert mx.mon is mx.monitor


def test_module_fit_prints_monitor_rows(caplog):
    data = mx.sym.var("data")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), name="softmax")
    it = mx.io.NDArrayIter(np.random.default_rng(1).standard_normal((8, 3)), np.array([0, 1] * 4), batch_size=4)
    mod = mx.mod.Module(out)
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=1, monitor=mx.monitor.Monitor(1, pattern="fc_weight"))
    lines = [r.getMessage() for r in caplog.records if "fc_weight" in r.getMessage()]
    assert len(lines) == 2 and lines[0].startswith("Batch:")


def test_monitor_sees_backward_kernels_named_as_mxnet():
    # MXNet 1.9.1 reports a backward kernel's outputs as <node>_backward_output[k]
    # (LinearRegressionOutput's backward: the data and label gradients)
    x = mx.sym.var("data")
    net = mx.sym.LinearRegressionOutput(x, mx.sym.var("label"), name="lro", grad_scale=2)
    data, label = np.array([[0.5, 2.0]], "float32"), np.array([[1.0, 1.0]], "float32")
    exe = net.simple_bind(mx.cpu(), data=(1, 2), label=(1, 2))
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy().copy()))
    exe.forward(is_train=True, data=data, label=label)
    exe.backward()
    assert "lro_output" in seen and "lro_backward_output0" in seen and "lro_backward_output1" in seen
    # grad_scale / (outputs per example) * (out - label), MXNet's regression gradient
    np.testing.assert_allclose(seen["lro_backward_output0"], 2 / 2 * (data - label))
