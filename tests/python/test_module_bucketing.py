"""mx.mod.BucketingModule: buckets share the default bucket's parameters,
training reproduces MXNet 1.9.1's parameters, checkpoints round-trip."""

import numpy as np
import pytest

import oxnet as mx


def sym_gen(key):
    del key  # the graph is the same; the data's second axis is the bucket
    h = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, flatten=False, name="fc")
    loss = mx.sym.mean(mx.sym.square(mx.sym.mean(h, axis=1) - mx.sym.var("label")))
    return loss, ("data",), ("label",)


class BucketIter(mx.io.DataIter):
    """Five batches of 3 sequences, of lengths 4, 2, 4, 2, 2."""

    def __init__(self):
        super().__init__(batch_size=3)
        rng = np.random.RandomState(0)
        self.batches = []
        for key in [4, 2, 4, 2, 2]:
            x = rng.uniform(-1, 1, (3, key, 3)).astype("float32")
            y = rng.uniform(-1, 1, (3, 2)).astype("float32")
            self.batches.append((key, x, y))
        self.i = 0
        self.provide_data = [mx.io.DataDesc("data", (3, 4, 3))]
        self.provide_label = [mx.io.DataDesc("label", (3, 2))]
        self.default_bucket_key = 4

    def reset(self):
        self.i = 0

    def next(self):
        if self.i == len(self.batches):
            raise StopIteration
        key, x, y = self.batches[self.i]
        self.i += 1
        return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], pad=0, bucket_key=key,
                               provide_data=[mx.io.DataDesc("data", x.shape)],
                               provide_label=[mx.io.DataDesc("label", y.shape)])


def _fit():
    it = BucketIter()
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    w = np.arange(6, dtype="float32").reshape(2, 3) / 10
    mod.fit(it, num_epoch=3, optimizer="adam", optimizer_params={"learning_rate": 0.05},
            eval_metric=mx.metric.Loss(), arg_params={"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.zeros((2,))})
    return mod, it


def test_bucketing_fit_reproduces_mxnet():
    mod, it = _fit()
    arg, _ = mod.get_params()
    # MXNet 1.9.1 with make_loss around the same loss
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(),
                               [[-0.033381033688783646, 0.27809903025627136, 0.26400211453437805],
                                [-0.04365794360637665, 0.13215108215808868, 0.49044671654701233]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), [-0.2022736370563507, -0.03923584893345833], rtol=1e-5)
    assert mod.score(it, mx.metric.Loss())[0][1] == pytest.approx(0.2487688273191452, rel=1e-5)
    assert sorted(mod._buckets) == [2, 4]
    # the short bucket uses the default bucket's parameter memory
    short, full = mod._buckets[2], mod._buckets[4]
    full._exec_group.execs[0].arg_dict["fc_weight"][:] = 0.5
    assert (short._exec_group.execs[0].arg_dict["fc_weight"].asnumpy() == 0.5).all()
    assert short._optimizer is full._optimizer


def test_bucketing_checkpoint_round_trip(tmp_path):
    mod, it = _fit()
    prefix = str(tmp_path / "bucket")
    mod.save_checkpoint(prefix, 3)
    loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen, default_bucket_key=4)
    loaded.bind(it.provide_data, it.provide_label, for_training=False)
    for batch in BucketIter():
        mod.forward(batch, is_train=False)
        loaded.forward(batch, is_train=False)
        np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), loaded.get_outputs()[0].asnumpy())
    with pytest.raises(ValueError, match="sym_gen is required"):
        mx.mod.BucketingModule.load(prefix, 3, default_bucket_key=4)


def test_bucketing_errors():
    with pytest.raises(ValueError, match="default_bucket_key is required"):
        mx.mod.BucketingModule(sym_gen)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    assert mod.data_names == ("data",) and len(mod.output_names) == 1
    with pytest.raises(mx.MXNetError, match="needs bind"):
        mod.forward(next(BucketIter()))
