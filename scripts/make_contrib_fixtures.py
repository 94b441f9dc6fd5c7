"""Writes tests/fixtures/contrib/reference.json: reference numbers from real
MXNet 1.9.1 for tests/python/test_contrib_svrg.py and
tests/python/test_optimizer_contrib.py.

Run with MXNet's environment:  .venv-mxnet/bin/python scripts/make_contrib_fixtures.py

The SVRG cases compute the full gradients once per run (MXNet 1.9.1 adds
each new full-gradient pass onto the previous one, which oxnet does not
copy) and name the layer ``fc1`` (MXNet routes any parameter whose name
contains ``full`` to its assignment optimizer).
"""

import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "contrib", "reference.json")


def svrg_data():
    x = (np.arange(24, dtype="float32").reshape(12, 2) * 7 % 5 + 1) / 2
    y = x.dot(np.array([1.0, 2.0], dtype="float32")) + 0.5
    return x, y


def svrg_module(update_freq):
    from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule

    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc1", num_hidden=1)
    lro = mx.sym.LinearRegressionOutput(fc, mx.sym.Variable("lin_reg_label"), name="lro")
    return SVRGModule(lro, data_names=["data"], label_names=["lin_reg_label"], update_freq=update_freq)


def svrg_iter():
    x, y = svrg_data()
    return mx.io.NDArrayIter(x, y, batch_size=5, shuffle=False, label_name="lin_reg_label",
                             last_batch_handle="pad")


def params_of(mod):
    args = mod.get_params()[0]
    return {k: v.asnumpy().tolist() for k, v in sorted(args.items())}


def svrg_cases():
    out = {}
    x, y = svrg_data()
    out["x"], out["y"] = x.tolist(), y.tolist()
    # full gradients at the initial weights, and the weights after one SVRG step
    di = svrg_iter()
    mod = svrg_module(2)
    mod.bind(di.provide_data, di.provide_label)
    mod.init_params(mx.init.One())
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.01),))
    mod.update_full_grads(di)
    out["full_grads"] = {k: v.asnumpy().tolist() for k, v in sorted(mod._param_dict[0].items())}
    di.reset()
    batch = next(di)
    mod.forward_backward(batch)
    mod.update()
    out["one_step"] = params_of(mod)
    # fit: 3 epochs, one full-gradient pass (epoch 0), plain SGD and SGD with momentum
    for key, params in (("fit_sgd", (("learning_rate", 0.01),)),
                        ("fit_momentum", (("learning_rate", 0.01), ("momentum", 0.9)))):
        di = svrg_iter()
        mod = svrg_module(3)
        metric = mx.metric.create("mse")
        mod.fit(di, eval_metric=metric, optimizer="sgd", optimizer_params=params, num_epoch=3,
                initializer=mx.init.One())
        out[key] = params_of(mod)
        out[key + "_mse"] = metric.get()[1]
    return out


def group_adagrad_cases():
    rng = np.random.RandomState(3)
    weight0 = rng.uniform(-1, 1, (3, 4)).astype("float32")
    grads = [rng.uniform(-1, 1, (3, 4)).astype("float32") for _ in range(3)]
    cases = []
    for opts in ({}, {"eps": 1e-8}, {"clip_gradient": 0.4}, {"rescale_grad": 0.14},
                 {"eps": 1e-8, "clip_gradient": 0.5, "rescale_grad": 0.8}):
        kwargs = dict(opts, learning_rate=0.1)
        opt = mx.optimizer.create("groupadagrad", **kwargs)
        updater = mx.optimizer.get_updater(opt)
        weight = mx.nd.array(weight0)
        weights = []
        for g in grads:
            updater(0, mx.nd.array(g), weight)
            weights.append(weight.asnumpy().tolist())
        cases.append({"kwargs": kwargs, "weights": weights, "history": updater.states[0].asnumpy().tolist()})
    return {"weight0": weight0.tolist(), "grads": [g.tolist() for g in grads], "cases": cases}


def main():
    mx.random.seed(0)
    np.random.seed(0)
    data = {"mxnet": mx.__version__, "svrg": svrg_cases(), "group_adagrad": group_adagrad_cases()}
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
