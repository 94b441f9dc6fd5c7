"""mx.init: the values of each built-in initializer, user subclasses, create()
from names and JSON, MXNet's dispatch by name and by ``__init__``, seeding, and
a comparison with MXNet 1.9.1 itself."""

import json
import pathlib
import subprocess
import warnings

import numpy as np
import pytest

import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"


def filled(init, shape, name="fc_weight", dtype="float32", attrs=None):
    arr = mx.nd.zeros(shape, dtype=dtype)
    init(mx.init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


# ----- constants ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_zero_one_constant(dtype):
    assert (filled(mx.init.Zero(), (2, 3), dtype=dtype) == 0).all()
    assert (filled(mx.init.One(), (2, 3), dtype=dtype) == 1).all()
    assert (filled(mx.init.Constant(0.25), (2, 3), dtype=dtype) == 0.25).all()
    assert mx.init.Zeros is mx.init.Zero and mx.init.Ones is mx.init.One


def test_constant_takes_lists_arrays_and_broadcasts():
    np.testing.assert_array_equal(filled(mx.init.Constant([1, 2, 3]), (2, 3)), [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(filled(mx.init.Constant([[1], [2]]), (2, 3)), [[1, 1, 1], [2, 2, 2]])
    value = mx.nd.array([[5, 6], [7, 8]])
    np.testing.assert_array_equal(filled(mx.init.Constant(value), (2, 2)), [[5, 6], [7, 8]])
    np.testing.assert_array_equal(filled(mx.init.Constant(np.array([1.5, 2.5])), (3, 2)), [[1.5, 2.5]] * 3)
    np.testing.assert_array_equal(filled(mx.init.Constant(np.float32(3)), (2,)), [3, 3])
    with pytest.raises(ValueError, match="fc_weight"):
        filled(mx.init.Constant([1, 2]), (2, 3))


def test_constant_dumps_is_json_and_survives_a_symbol_attribute():
    scales = mx.nd.array([0.5, 1.5, 2.5])
    init = mx.init.Constant(scales)
    assert json.loads(init.dumps()) == ["constant", {"value": [0.5, 1.5, 2.5]}]
    # seed 003's form: a list taken from an array, stored on a symbol variable
    var = mx.sym.var("scales", shape=(3,), init=mx.init.Constant(scales.asnumpy().tolist()))
    spec = var.attr("__init__")
    assert json.loads(spec) == ["constant", {"value": [0.5, 1.5, 2.5]}]
    np.testing.assert_array_equal(filled(mx.init.Xavier(), (3,), name="scales", attrs={"__init__": spec}),
                                  [0.5, 1.5, 2.5])
    assert isinstance(mx.init.create(spec), mx.init.Constant)


def test_bilinear_and_lstm_bias_by_hand():
    p = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_array_equal(filled(mx.init.Bilinear(), (1, 1, 4, 4))[0, 0], np.outer(p, p))
    with pytest.raises(ValueError, match="up_weight"):
        filled(mx.init.Bilinear(), (3, 3), name="up_weight")
    got = filled(mx.init.LSTMBias(2.0), (8,), name="lstm_forget", attrs={"__init__": mx.init.LSTMBias(2.0)})
    np.testing.assert_array_equal(got, [0, 0, 2, 2, 0, 0, 0, 0])


# ----- random draws ---------------------------------------------------------------------

def test_uniform_and_normal_moments():
    u = filled(mx.init.Uniform(0.5), (200, 500))
    assert np.abs(u).max() <= 0.5 and np.abs(u).max() > 0.49
    assert abs(u.mean()) < 0.01 and abs(u.std() - 0.5 / np.sqrt(3)) < 0.005
    n = filled(mx.init.Normal(2.0), (100000,))
    assert abs(n.mean()) < 0.03 and abs(n.std() - 2.0) < 0.03


@pytest.mark.parametrize("shape,factor,fan", [((300, 200), "avg", 250), ((300, 200), "in", 200),
                                              ((300, 200), "out", 300), ((32, 16, 3, 3), "avg", 216),
                                              ((32, 16, 3, 3), "in", 144), ((32, 16, 3, 3), "out", 288)])
def test_xavier_scale(shape, factor, fan):
    c = np.sqrt(3.0 / fan)
    u = filled(mx.init.Xavier(factor_type=factor), shape)
    assert np.abs(u).max() <= c * (1 + 1e-6) and np.abs(u).max() > 0.98 * c
    g = filled(mx.init.Xavier("gaussian", factor, magnitude=2), shape)
    assert abs(g.std() - np.sqrt(2.0 / fan)) < 0.04 * np.sqrt(2.0 / fan)
    m = filled(mx.init.MSRAPrelu(factor, slope=0.0), shape)
    assert abs(m.std() - np.sqrt(2.0 / fan)) < 0.04 * np.sqrt(2.0 / fan)


def test_xavier_rejects_vectors_and_bad_arguments():
    with pytest.raises(ValueError, match="dense0_weight"):
        filled(mx.init.Xavier(), (5,), name="dense0_weight")
    with pytest.raises(ValueError, match="rnd_type"):
        filled(mx.init.Xavier(rnd_type="cauchy"), (5, 5))
    with pytest.raises(ValueError, match="factor_type"):
        filled(mx.init.MSRAPrelu(factor_type="mid"), (5, 5))


@pytest.mark.parametrize("shape", [(4, 10), (10, 4), (4, 2, 3, 3)])
def test_orthogonal(shape):
    w = filled(mx.init.Orthogonal(scale=2.0, rand_type="normal"), shape).reshape(shape[0], -1).astype(np.float64)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)


def test_seed_makes_draws_reproducible():
    for init in [mx.init.Uniform(), mx.init.Normal(), mx.init.Xavier(), mx.init.MSRAPrelu(), mx.init.Orthogonal()]:
        mx.random.seed(7)
        a = filled(init, (6, 5))
        mx.random.seed(7)
        b = filled(init, (6, 5))
        mx.random.seed(8)
        c = filled(init, (6, 5))
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


# ----- dispatch -------------------------------------------------------------------------

def test_dispatch_by_name_suffix():
    init = mx.init.Constant(7)
    for name, want in [("fc_weight", 7), ("fc_bias", 0), ("bn_gamma", 1), ("bn_beta", 0), ("q_min", 0),
                       ("q_max", 1), ("fc_bias_quantize", 0)]:
        arr = mx.nd.ones((3,)) * 3
        init(mx.init.InitDesc(name), arr)
        assert (arr.asnumpy() == want).all(), name
    with pytest.raises(ValueError, match="bn_running_mean"):
        init(mx.init.InitDesc("bn_running_mean"), mx.nd.zeros((3,)))


def test_dispatch_by_init_attribute():
    # a JSON string, a registered name and an instance all override the name's rule
    for spec in ['["constant", {"value": 4}]', mx.init.Constant(4)]:
        got = filled(mx.init.Zero(), (2,), name="bn_running_mean", attrs={"__init__": spec})
        assert (got == 4).all()
    assert (filled(mx.init.Zero(), (2,), name="fc_bias", attrs={"__init__": "ones"}) == 1).all()
    desc = mx.init.InitDesc("fc_weight", {"__init__": ""})
    arr = mx.nd.zeros((2,))
    mx.init.One()(desc, arr)
    assert (arr.asnumpy() == 1).all() and desc.global_init is not None


def test_legacy_string_names():
    init = mx.init.Constant(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name, want in [("bn_moving_mean", 0), ("bn_moving_var", 1), ("fc_weight", 7), ("stn_loc_weight", 0)]:
            arr = mx.nd.ones((6,)) * 3
            init(name, arr)
            assert (arr.asnumpy() == want).all(), name
        arr = mx.nd.zeros((6,))
        init("stn_loc_bias", arr)
        np.testing.assert_array_equal(arr.asnumpy(), [1, 0, 0, 0, 1, 0])


class Halves(mx.init.Initializer):
    """A user initializer: weights 0.5, biases 2."""

    def __init__(self, level=0.5):
        super().__init__(level=level)
        self.level = level

    def _init_weight(self, _, arr):
        arr[:] = self.level

    def _init_bias(self, _, arr):
        arr[:] = 2


def test_user_subclass_and_register():
    assert (filled(Halves(), (3,), name="fc_weight") == 0.5).all()
    assert (filled(Halves(), (3,), name="fc_bias") == 2).all()
    assert (filled(Halves(), (3,), name="bn_gamma") == 1).all()
    assert Halves(0.25).dumps() == '["halves", {"level": 0.25}]'
    mx.init.register(Halves)
    made = mx.init.create(Halves(0.25).dumps())
    assert isinstance(made, Halves) and made.level == 0.25
    assert (filled(mx.init.Zero(), (2,), name="fc_bias", attrs={"__init__": Halves(3.0).dumps()}) == 3).all()
    with pytest.raises(TypeError):
        mx.init.register(int)


def test_create_from_names_and_json():
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert isinstance(mx.init.create("Xavier"), mx.init.Xavier)
    assert isinstance(mx.init.create("msraprelu"), mx.init.MSRAPrelu)
    x = mx.init.create('["xavier", {"rnd_type": "gaussian", "magnitude": 2}]')
    assert (x.rnd_type, x.magnitude) == ("gaussian", 2.0)
    assert mx.init.create({"initializer": "normal", "sigma": 0.5}).sigma == 0.5
    assert mx.init.create('{"initializer": "uniform", "scale": 0.2}').scale == 0.2
    assert mx.init.create("uniform", 0.3).scale == 0.3
    inst = mx.init.Normal()
    assert mx.init.create(inst) is inst
    assert mx.init.create(mx.init.Normal(0.5)) == mx.init.Normal(0.5)
    with pytest.raises(ValueError, match="nosuch"):
        mx.init.create("nosuch")
    for init in [mx.init.Zero(), mx.init.One(), mx.init.Uniform(0.1), mx.init.Normal(), mx.init.Xavier(),
                 mx.init.MSRAPrelu(), mx.init.Orthogonal(), mx.init.Bilinear(), mx.init.Constant(3)]:
        again = mx.init.create(init.dumps())
        assert again.dumps() == init.dumps()
        # the engine reads every built-in's dumps() and writes it the same way
        assert json.loads(mx._oxnet.init_canonical(init.dumps())) == json.loads(init.dumps())


def test_mixed_and_load():
    mixed = mx.init.Mixed(["fc1_.*", ".*"], [mx.init.Constant(2), mx.init.One()])
    assert (filled(mixed, (2,), name="fc1_weight") == 2).all()
    assert (filled(mixed, (2,), name="fc2_weight") == 1).all()
    with pytest.raises(ValueError, match="fc_weight"):
        filled(mx.init.Mixed(["bias"], [mx.init.Zero()]), (2,), name="fc_weight")
    saved = {"arg:fc_weight": mx.nd.array([[1, 2], [3, 4]]), "aux:bn_moving_var": mx.nd.array([9, 8])}
    load = mx.init.Load(saved, default_init=mx.init.Constant(5))
    np.testing.assert_array_equal(filled(load, (2, 2), name="fc_weight"), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(filled(load, (2,), name="bn_moving_var"), [9, 8])
    assert (filled(load, (3,), name="other_weight") == 5).all()
    with pytest.raises(ValueError, match="Shape mismatch"):
        filled(load, (4,), name="fc_weight")
    with pytest.raises(ValueError, match="no default"):
        filled(mx.init.Load(saved), (4,), name="x_weight")


def test_load_reads_a_file_with_nd_load(monkeypatch):
    # Load(file name) reads the file with mx.nd.load; a stand-in records the call
    calls = []

    def fake_load(fname):
        calls.append(fname)
        return {"arg:fc_weight": mx.nd.array([1, 2, 3])}

    monkeypatch.setattr(mx.nd, "load", fake_load, raising=False)
    load = mx.init.Load("model-0001.params")
    assert calls == ["model-0001.params"]
    np.testing.assert_array_equal(filled(load, (3,), name="fc_weight"), [1, 2, 3])
    with pytest.raises(TypeError):
        mx.init.Load(42)


# ----- against MXNet 1.9.1 ---------------------------------------------------------------

MXNET_SCRIPT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import mxnet as mx
mx.random.seed(0)
out = {"dumps": {}, "exact": {}, "random": {}}
specs = json.loads(sys.argv[1])
for key, spec in specs["dumps"].items():
    out["dumps"][key] = eval(spec).dumps()
for key, (spec, shape, name) in specs["exact"].items():
    arr = mx.nd.zeros(tuple(shape))
    eval(spec)(mx.init.InitDesc(name), arr)
    out["exact"][key] = arr.asnumpy().tolist()
for key, (spec, shape) in specs["random"].items():
    arr = mx.nd.zeros(tuple(shape))
    eval(spec)(mx.init.InitDesc("w_weight"), arr)
    a = arr.asnumpy()
    out["random"][key] = [float(np.abs(a).max()), float(a.std()), float(a.mean())]
print(json.dumps(out))
"""

# (MXNet's Constant(list).dumps() raises, so the array case gives an NDArray)
DUMPS = {k: k for k in ["mx.init.Zero()", "mx.init.One()", "mx.init.Constant(3)",
                        "mx.init.Constant(mx.nd.array([1.5, 2]))", "mx.init.Uniform(0.1)", "mx.init.Normal()", "mx.init.Xavier()",
                        "mx.init.Xavier('gaussian', 'in', 2.34)", "mx.init.MSRAPrelu()",
                        "mx.init.MSRAPrelu('out', 0.1)", "mx.init.Orthogonal()", "mx.init.Bilinear()",
                        "mx.init.LSTMBias(2.0)"]}
EXACT = {
    "const": ["mx.init.Constant(0.3)", [3, 4], "fc_weight"],
    "const_list": ["mx.init.Constant([1.0, 2.0, 3.0])", [2, 3], "fc_weight"],
    "one": ["mx.init.One()", [2, 3], "fc_weight"],
    "zero": ["mx.init.Zero()", [2, 3], "fc_weight"],
    "gamma": ["mx.init.Uniform()", [4], "bn_gamma"],
    "bilinear4": ["mx.init.Bilinear()", [2, 1, 4, 4], "up_weight"],
    "bilinear35": ["mx.init.Bilinear()", [1, 2, 3, 5], "up_weight"],
    "bilinear_odd": ["mx.init.Bilinear()", [1, 1, 7, 7], "up_weight"],
    "lstm": ["mx.init.LSTMBias(1.5)", [12], "lstm_weight"],
}
RANDOM = {
    "uniform": ["mx.init.Uniform(0.3)", [200, 300]],
    "normal": ["mx.init.Normal(0.2)", [200, 300]],
    "xavier": ["mx.init.Xavier()", [256, 128]],
    "xavier_conv_in": ["mx.init.Xavier('gaussian', 'in', 2)", [64, 32, 3, 3]],
    "xavier_out": ["mx.init.Xavier('uniform', 'out', 6)", [100, 400]],
    "msra": ["mx.init.MSRAPrelu()", [64, 32, 3, 3]],
    "msra_in": ["mx.init.MSRAPrelu('in', 0)", [300, 200]],
}


@pytest.fixture(scope="module")
def mxnet_results():
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    specs = json.dumps({"dumps": DUMPS, "exact": EXACT, "random": RANDOM})
    result = subprocess.run([str(MXNET_PYTHON), "-c", MXNET_SCRIPT, specs], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_dumps_match_mxnet(mxnet_results):
    for key in DUMPS:
        assert eval(key).dumps() == mxnet_results["dumps"][key], key  # pylint: disable=eval-used


def test_deterministic_initializers_match_mxnet_exactly(mxnet_results):
    for key, (spec, shape, name) in EXACT.items():
        mine = filled(eval(spec), tuple(shape), name=name)  # pylint: disable=eval-used
        np.testing.assert_array_equal(mine, np.array(mxnet_results["exact"][key], dtype=np.float32), err_msg=key)


def test_random_initializers_match_mxnet_bounds_and_scale(mxnet_results):
    for key, (spec, shape) in RANDOM.items():
        a = filled(eval(spec), tuple(shape), name="w_weight")  # pylint: disable=eval-used
        their_max, their_std, _ = mxnet_results["random"][key]
        assert abs(a.std() - their_std) < 0.04 * their_std, key
        assert abs(a.mean()) < 0.05 * their_std, key
        if "Uniform" in spec or ("Xavier" in spec and "gaussian" not in spec):
            # same bound: both reach, and neither passes, the uniform range
            assert np.abs(a).max() <= their_max * 1.01 and np.abs(a).max() >= their_max * 0.99, key


def test_constant_keeps_arrays_as_lists_and_prelu_gamma_starts_at_a_quarter():
    # as MXNet 1.9.1: Constant's kwargs are JSON-ready; a prelu's own gamma
    # variable carries Constant(0.25)
    init = mx.init.Constant(mx.nd.ones((2,)))
    assert init._kwargs == {"value": [1.0, 1.0]}
    assert init.dumps() == json.dumps(["constant", {"value": [1.0, 1.0]}])
    sym = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="prelu", name="act")
    assert sym.attr_dict()["act_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
