"""mx.gluon.model_zoo against MXNet 1.9.1.

- Every model's parameter names (``collect_params()`` order, with a fresh
  name scope so the prefixes are the first of their class), shapes,
  ``save_parameters`` keys and output shape equal what MXNet 1.9.1 gives
  (tests/fixtures/model_zoo/models.json, written by
  scripts/make_model_zoo_fixtures.py). Shapes come from shape inference on
  the fixture's input, so no weights are allocated for this check.
- Forward, hybridize (same output) and export + ``SymbolBlock.imports``
  (same output) run on a representative subset: the smallest model of each
  family on its smallest input, plus narrow custom ResNets built from the
  bottleneck and thumbnail variants and a narrow DenseNet with dropout.
  Set ``OXNET_MODEL_ZOO_ALL=1`` to run it on every model (slow in a debug
  build).
- Pretrained loading: the path, SHA-1 and error logic with a file written
  here, and MXNet 1.9.1's own ``save_parameters`` file giving MXNet's output
  (skipped without the side environment .venv-mxnet).
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon, nd
from oxnet.gluon.model_zoo import model_store, vision

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "model_zoo" / "models.json").read_text())
MODELS = FIXTURE["models"]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"

# One model per family (the cheapest to run), checked end to end on every run.
FORWARD_SUBSET = ["resnet18_v1", "resnet18_v2", "vgg11_bn", "alexnet", "densenet121", "squeezenet1.1",
                  "inceptionv3", "mobilenet0.25", "mobilenetv2_0.25"]
FORWARD_MODELS = list(MODELS) if os.environ.get("OXNET_MODEL_ZOO_ALL") else FORWARD_SUBSET


def _build(name, **kwargs):
    """``get_model(name)`` as the first block of its class (fresh name counters)."""
    with mx.name.NameManager():
        return vision.get_model(name, **kwargs)


def _input(shape, seed=0):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, size=shape).astype(np.float32))


@pytest.mark.parametrize("name", list(MODELS))
def test_parameter_names_shapes_and_keys_match_mxnet(name):
    expected = MODELS[name]
    net = _build(name)
    assert net.prefix == expected["prefix"]
    net.infer_shape(nd.zeros(tuple(expected["input"])))
    params = net.collect_params()
    got = [[k[len(net.prefix):], list(p.shape)] for k, p in params.items()]
    assert all(k.startswith(net.prefix) for k in params.keys())
    assert got == expected["params"]
    assert list(net._collect_params_with_prefix().keys()) == expected["structure"]
    _, out_shapes, _ = net(mx.sym.var("data")).infer_shape(data=tuple(expected["input"]))
    assert list(out_shapes[0]) == expected["output"]


def _check_forward_hybridize_export(net, x, tmp_path, expected_shape=None):
    """Imperative, hybridized and exported/imported outputs agree."""
    out = net(x).asnumpy()
    if expected_shape is not None:
        assert list(out.shape) == expected_shape
    assert np.isfinite(out).all()
    net.hybridize()
    hybrid = net(x).asnumpy()
    np.testing.assert_allclose(hybrid, out, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(out).max()))
    sym_file, params_file = net.export(str(tmp_path / "model"))
    block = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    imported = block(x).asnumpy()
    np.testing.assert_allclose(imported, out, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(out).max()))


@pytest.mark.parametrize("name", FORWARD_MODELS)
def test_forward_hybridize_export_import(name, tmp_path):
    expected = MODELS[name]
    mx.random.seed(1)
    net = _build(name)
    net.initialize(mx.init.Xavier())
    _check_forward_hybridize_export(net, _input(tuple(expected["input"])), tmp_path, expected["output"])
    # The shapes deferred initialization gave in the forward pass are MXNet's too.
    assert [[k[len(net.prefix):], list(p.shape)] for k, p in net.collect_params().items()] == expected["params"]


@pytest.mark.parametrize("version,block,thumbnail", [
    (1, vision.BottleneckV1, False), (2, vision.BottleneckV2, False),
    (1, vision.BasicBlockV1, True), (2, vision.BasicBlockV2, True)])
def test_narrow_resnets_of_every_block(version, block, thumbnail, tmp_path):
    mx.random.seed(2)
    cls = vision.ResNetV1 if version == 1 else vision.ResNetV2
    net = cls(block, [1, 2, 1, 1], [8, 16, 24, 32, 40], classes=7, thumbnail=thumbnail)
    net.initialize(mx.init.Xavier())
    _check_forward_hybridize_export(net, _input((2, 3, 16, 16)), tmp_path, [2, 7])


def test_narrow_densenet_with_dropout(tmp_path):
    mx.random.seed(3)
    net = vision.DenseNet(8, 4, [1, 2, 1, 1], bn_size=2, dropout=0.1, classes=5)
    net.initialize(mx.init.Xavier())
    # Dropout is the identity outside autograd's training mode.
    _check_forward_hybridize_export(net, _input((1, 3, 221, 221)), tmp_path, [1, 5])


def test_classes_and_prefix_keyword_arguments():
    net = vision.get_model("mobilenetv2_0.25", classes=10, prefix="mine_")
    assert net.prefix == "mine_"
    net.infer_shape(nd.zeros((1, 3, 32, 32)))
    assert net.output[0].weight.name == "mine_output_pred_weight"
    assert net.output[0].weight.shape == (10, 1280, 1, 1)


def test_get_model_is_case_insensitive_and_lists_models_on_error():
    assert isinstance(vision.get_model("ResNet18_V1"), vision.ResNetV1)
    with pytest.raises(ValueError) as info:
        vision.get_model("nope")
    message = str(info.value)
    assert message.startswith("Model nope is not supported. Available options are\n\t")
    listed = message.split("\n\t")[1:]
    assert listed == sorted(MODELS)


def test_constructors_and_classes_exported():
    for name in ["resnet18_v1", "resnet152_v2", "vgg19_bn", "alexnet", "densenet201", "squeezenet1_0",
                 "inception_v3", "mobilenet0_5", "mobilenet_v2_0_75", "get_resnet", "get_vgg",
                 "get_mobilenet", "get_mobilenet_v2", "ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2",
                 "BottleneckV1", "BottleneckV2", "VGG", "AlexNet", "DenseNet", "SqueezeNet", "Inception3",
                 "MobileNet", "MobileNetV2"]:
        assert hasattr(vision, name), name
    assert vision.resnet50_v1.__name__ == "resnet50_v1"
    assert mx.gluon.model_zoo.vision is vision
    assert isinstance(vision.get_resnet(2, 34), vision.ResNetV2)
    assert isinstance(vision.get_vgg(11, batch_norm=True).features[1], mx.gluon.nn.BatchNorm)


def test_missing_pretrained_file_names_directory_and_file(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))
    message = str(info.value)
    assert "resnet18_v1-a0666292.params" in message
    assert str(tmp_path) in message
    assert not list(tmp_path.iterdir())  # nothing downloaded or created
    with pytest.raises(FileNotFoundError, match=r"mobilenetv2_0\.5-aabd26cd\.params"):
        vision.get_model("mobilenetv2_0.5", pretrained=True, root=str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"vgg16_bn-7f01cf05\.params"):
        vision.vgg16_bn(pretrained=True, root=str(tmp_path))


def test_default_root_follows_mxnet_home(tmp_path):
    script = ("from oxnet.gluon.model_zoo import model_store\n"
              "try:\n    model_store.get_model_file('alexnet')\n"
              "except FileNotFoundError as e:\n    print(e)\n")
    env = dict(os.environ, MXNET_HOME=str(tmp_path / "home"))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert os.path.join(str(tmp_path / "home"), "models") in result.stdout
    assert "alexnet-44335d1f.params" in result.stdout


def test_unknown_pretrained_name():
    with pytest.raises(ValueError, match="Pretrained model for nope is not available"):
        model_store.get_model_file("nope")
    assert model_store.short_hash("squeezenet1.1") == "33ba0f93"


def _store_file(monkeypatch, root, name, source):
    """Copies ``source`` into ``root`` as the model store names it, with the
    store's digest for ``name`` patched to the file's."""
    data = Path(source).read_bytes()
    digest = hashlib.sha1(data).hexdigest()
    monkeypatch.setitem(model_store._model_sha1, name, digest)
    path = Path(root) / f"{name}-{digest[:8]}.params"
    path.write_bytes(data)
    return path


def test_pretrained_loads_the_stored_file_and_checks_its_sha1(tmp_path, monkeypatch):
    mx.random.seed(4)
    source = _build("mobilenet0.25")
    source.initialize(mx.init.Xavier())
    x = _input((1, 3, 32, 32))
    expected = source(x).asnumpy()
    source.save_parameters(str(tmp_path / "saved.params"))
    root = tmp_path / "models"
    root.mkdir()
    path = _store_file(monkeypatch, root, "mobilenet0.25", tmp_path / "saved.params")
    assert model_store.get_model_file("mobilenet0.25", root=str(root)) == str(path)
    net = vision.mobilenet0_25(pretrained=True, root=str(root), ctx=mx.cpu())
    np.testing.assert_array_equal(net(x).asnumpy(), expected)
    # The older format MXNet's load_parameters also accepts: full names
    # without the model's prefix (ParameterDict.save), no structure keys.
    source.collect_params().save(str(tmp_path / "legacy.params"), strip_prefix=source.prefix)
    path.unlink()
    path = _store_file(monkeypatch, root, "mobilenet0.25", tmp_path / "legacy.params")
    net = vision.mobilenet0_25(pretrained=True, root=str(root))
    np.testing.assert_array_equal(net(x).asnumpy(), expected)
    # A file whose content is not the published one is refused, not replaced.
    path.write_bytes(path.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(ValueError, match="Mismatch in the content of model file"):
        vision.mobilenet0_25(pretrained=True, root=str(root))
    assert path.exists()
    model_store.purge(str(root))
    assert not list(root.iterdir())


MXNET_SCRIPT = """
import sys, numpy as np, mxnet as mx
from mxnet.gluon.model_zoo import vision
name, out_dir = sys.argv[1], sys.argv[2]
mx.random.seed(11)
rng = np.random.RandomState(5)
net = vision.get_model(name)
net.initialize(mx.init.Xavier())
x = mx.nd.array(rng.uniform(-1, 1, size=(1, 3, 209, 209)).astype('float32'))
net(x)
for pname, p in net.collect_params().items():
    if pname.endswith('_bias'):
        p.set_data(mx.nd.array(rng.uniform(0, 0.2, p.shape)))
net.save_parameters(out_dir + '/net.params')
np.save(out_dir + '/x.npy', x.asnumpy())
np.save(out_dir + '/y.npy', net(x).asnumpy())
"""


def test_pretrained_file_written_by_mxnet_gives_mxnets_output(tmp_path, monkeypatch):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    result = subprocess.run([str(MXNET_PYTHON), "-c", MXNET_SCRIPT, "squeezenet1.1", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    root = tmp_path / "models"
    root.mkdir()
    _store_file(monkeypatch, root, "squeezenet1.1", tmp_path / "net.params")
    net = vision.squeezenet1_1(pretrained=True, root=str(root))
    expected = np.load(tmp_path / "y.npy")
    got = net(nd.array(np.load(tmp_path / "x.npy"))).asnumpy()
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
