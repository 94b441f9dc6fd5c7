"""Data-parallel modules: ``mx.mod.Module(context=[cpu(0), cpu(1)])`` cuts
each batch over the contexts (``work_load_list``), keeps a copy of the
parameters on each, sums the gradients through the kvstore, joins outputs
and input gradients, updates metrics once per context and averages the
per-context aux states, as MXNet 1.9.1 does (its numbers in
tests/fixtures/module/multi-context.npz, from scripts/make_module_fixtures.py);
model-parallel placement with ``group2ctxs``; the executor group itself."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.module.executor_group import DataParallelExecutorGroup, split_input_slice

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "module", "multi-context.npz")
SETTINGS = {"one": ([mx.cpu(0)], None), "two": ([mx.cpu(0), mx.cpu(1)], None),
            "uneven": ([mx.cpu(0), mx.cpu(1)], [1, 3])}


def _bn_mlp():
    fc1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6, name="fc1")
    act = mx.sym.Activation(mx.sym.BatchNorm(fc1, name="bn", fix_gamma=False), act_type="tanh")
    return mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(act, num_hidden=2, name="fc2"), mx.sym.var("label"),
                                         name="lro")


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_fit_over_contexts_matches_mxnet(setting):
    f = np.load(FIXTURE)
    ctxs, load = SETTINGS[setting]
    it = mx.io.NDArrayIter(f["x"], f["y"], batch_size=8, label_name="label")
    mod = mx.mod.Module(_bn_mlp(), data_names=("data",), label_names=("label",), context=ctxs,
                        work_load_list=load)
    metric = []
    init = {k[5:]: mx.nd.array(f[k]) for k in f.files if k.startswith("init:")}
    mod.fit(it, num_epoch=3, optimizer="sgd", optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
            arg_params=init, aux_params={"bn_moving_mean": mx.nd.zeros(6), "bn_moving_var": mx.nd.ones(6)},
            eval_metric=mx.metric.MSE(), batch_end_callback=lambda p: metric.append(p.eval_metric.get()[1]))
    np.testing.assert_allclose(metric, f[f"{setting}:metric"], rtol=1e-4)
    arg, aux = mod.get_params()
    for name, value in list(arg.items()) + list(aux.items()):
        kind = "arg" if name in arg else "aux"
        np.testing.assert_allclose(value.asnumpy(), f[f"{setting}:{kind}:{name}"], rtol=1e-4, atol=1e-5,
                                   err_msg=name)
    it.reset()
    np.testing.assert_allclose(mod.predict(it).asnumpy(), f[f"{setting}:pred"], rtol=1e-4, atol=1e-5)
    # every context holds the same weights after the kvstore's updates
    for arrays in mod._exec_group.param_arrays:
        assert [a.context for a in arrays] == ctxs
        for a in arrays[1:]:
            np.testing.assert_array_equal(a.asnumpy(), arrays[0].asnumpy())


def test_split_input_slice_follows_the_work_load():
    assert split_input_slice(8, [1, 1]) == [slice(0, 4), slice(4, 8)]
    assert split_input_slice(8, [1, 3]) == [slice(0, 2), slice(2, 8)]
    assert split_input_slice(7, [1, 1, 1]) == [slice(0, 2), slice(2, 4), slice(4, 7)]
    with pytest.raises(ValueError, match="empty"):
        split_input_slice(2, [1, 1, 1])


def test_outputs_and_input_grads_join_over_contexts():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    x = np.arange(24, dtype="float32").reshape(6, 4) / 10
    w = np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4)
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)], work_load_list=[2, 1])
    mod.bind([("data", (6, 4))], inputs_need_grad=True)
    mod.init_params(arg_params={"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.zeros(3)})
    assert mod.output_shapes == [("fc_output", (6, 3))]
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=True)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), x @ w.T, rtol=1e-6)
    per_context = mod.get_outputs(merge_multi_context=False)[0]
    assert [o.shape for o in per_context] == [(4, 3), (2, 3)]
    assert [o.context for o in per_context] == [mx.cpu(0), mx.cpu(1)]
    heads = np.arange(18, dtype="float32").reshape(6, 3)
    mod.backward([mx.nd.array(heads)])
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), heads @ w, rtol=1e-6)
    # the parameter gradient on each context is its slice's
    grads = mod._exec_group.grad_arrays[0]
    np.testing.assert_allclose(grads[0].asnumpy(), heads[:4].T @ x[:4], rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), heads[4:].T @ x[4:], rtol=1e-6)


def test_a_list_of_batches_goes_one_per_context():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 3))])
    mod.init_params(initializer=mx.init.One())
    a, b = np.ones((2, 3), "float32"), 2 * np.ones((2, 3), "float32")
    mod.forward([mx.io.DataBatch([mx.nd.array(a)]), mx.io.DataBatch([mx.nd.array(b)])], is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), [[3, 3], [3, 3], [6, 6], [6, 6]])
    # a list of another length than the contexts is an error naming both
    mod2 = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod2.bind([("data", (6, 3))])
    mod2.init_params()
    with pytest.raises(mx.MXNetError, match="3 batches for 2 contexts"):
        mod2.forward([mx.io.DataBatch([mx.nd.ones((2, 3))])] * 3)


def test_batch_size_changes_reshape_every_context():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (8, 3))])
    mod.init_params(initializer=mx.init.One())
    mod.forward(mx.io.DataBatch([mx.nd.ones((6, 3))]), is_train=False)
    assert mod.get_outputs()[0].shape == (6, 2)
    assert [e.arg_dict["data"].shape for e in mod._exec_group.execs] == [(3, 3), (3, 3)]
    # the weights are still shared with the first binding (one copy per context)
    w0 = mod._exec_group.execs[0].arg_dict["fc_weight"]
    mod.forward(mx.io.DataBatch([mx.nd.ones((8, 3))]), is_train=False)
    assert mx.test_utils.same_array(w0, mod._exec_group.execs[0].arg_dict["fc_weight"])


def test_states_over_contexts():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    mod = mx.mod.Module(mx.sym.Group([a * 2, a + b]), data_names=("a",), label_names=None, state_names=["b"],
                        context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("a", (4, 2))])
    mod.init_params()
    mod.set_states(states=[mx.nd.array(np.arange(8).reshape(4, 2))])
    per_context = mod.get_states(merge_multi_context=False)[0]
    np.testing.assert_array_equal(per_context[1].asnumpy(), [[4, 5], [6, 7]])
    np.testing.assert_array_equal(mod.get_states()[0].asnumpy(), np.arange(8).reshape(4, 2))
    mod.set_states(value=3)
    assert (mod.get_states()[0].asnumpy() == 3).all()


def test_group2ctxs_places_argument_arrays():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.var("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        c = a + mx.sym.var("b")
    mod = mx.mod.Module(c, data_names=["a", "b"], label_names=None, context=[mx.cpu(0)],
                        group2ctxs={"dev1": mx.cpu(1), "dev2": mx.cpu(2)})
    mod.bind([("a", (2, 5)), ("b", (2, 5))], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 5)), mx.nd.ones((2, 5))]), is_train=True)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((2, 5), 3))
    mod.backward([mx.nd.ones((2, 5))])
    ga, gb = mod.get_input_grads()
    assert (ga.context, gb.context) == (mx.cpu(1), mx.cpu(2))
    np.testing.assert_array_equal(ga.asnumpy(), np.full((2, 5), 2))
    np.testing.assert_array_equal(gb.asnumpy(), np.ones((2, 5)))
    with pytest.raises(ValueError, match="3 contexts for 2 devices"):
        mx.mod.Module(c, data_names=["a", "b"], label_names=None, context=[mx.cpu(0), mx.cpu(1)],
                      group2ctxs={"dev1": [mx.cpu(1)] * 3}).bind([("a", (2, 5)), ("b", (2, 5))])


def test_shared_groups_share_parameters_and_input_memory():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    ctxs = [mx.cpu(0), mx.cpu(1)]
    first = DataParallelExecutorGroup(net, ctxs, [1, 1], [("data", (8, 3))], None, ["fc_weight", "fc_bias"],
                                      for_training=True, inputs_need_grad=False)
    second = DataParallelExecutorGroup(net, ctxs, [1, 1], [("data", (4, 3))], None, ["fc_weight", "fc_bias"],
                                       for_training=True, inputs_need_grad=False, shared_group=first)
    assert second.shared_data_arrays is first.shared_data_arrays
    for e1, e2 in zip(first.execs, second.execs):
        assert mx.test_utils.same_array(e1.arg_dict["fc_weight"], e2.arg_dict["fc_weight"])
        assert mx.test_utils.same_array(e1.grad_dict["fc_weight"], e2.grad_dict["fc_weight"])
        # the smaller batch's input is a view of the larger one's memory
        e2.arg_dict["data"][:] = 7
        assert (e1.arg_dict["data"].asnumpy().ravel()[:6] == 7).all()


def test_bucketing_module_over_contexts_trains_like_one_context():
    def sym_gen(key):
        data = mx.sym.var("data")
        net = mx.sym.FullyConnected(mx.sym.reshape(data, shape=(0, -1)), num_hidden=2, name="fc")
        return mx.sym.LinearRegressionOutput(net, mx.sym.var("label"), name="lro"), ("data",), ("label",)

    rng = np.random.RandomState(0)
    batches = [(k, rng.uniform(-1, 1, (4, k)).astype("float32"), rng.uniform(-1, 1, (4, 2)).astype("float32"))
               for k in (3, 3, 3, 3)]
    results = []
    for ctxs in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3, context=ctxs)
        mod.bind([("data", (4, 3))], [("label", (4, 2))])
        mod.init_params(initializer=mx.init.Constant(0.1))
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
        for k, x, y in batches:
            batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=k,
                                    provide_data=[("data", x.shape)], provide_label=[("label", y.shape)])
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
        results.append(mod.get_params()[0]["fc_weight"].asnumpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)
