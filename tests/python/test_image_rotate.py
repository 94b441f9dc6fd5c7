"""mx.image.imrotate / random_rotate and the Rotate / RandomRotation
transforms, against MXNet 1.9.1's results (tests/fixtures/image/imrotate.npz,
from scripts/make_imrotate_fixtures.py) and by their geometry."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.data.vision import transforms

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image", "imrotate.npz")


@pytest.fixture(scope="module")
def mxnet_results():
    return np.load(FIXTURE)


@pytest.mark.parametrize("name,angle,kw", [("r30", 30.0, {}), ("rm45_in", -45.0, {"zoom_in": True}),
                                           ("r60_out", 60.0, {"zoom_out": True}), ("r90", 90.0, {})])
def test_imrotate_matches_mxnet(mxnet_results, name, angle, kw):
    out = mx.image.imrotate(mx.nd.array(mxnet_results["img"]), angle, **kw)
    np.testing.assert_allclose(out.asnumpy(), mxnet_results[name], atol=2e-6)
    # the transform is the same function
    np.testing.assert_allclose(transforms.Rotate(angle, **kw)(mx.nd.array(mxnet_results["img"])).asnumpy(),
                               mxnet_results[name], atol=2e-6)


def test_batch_with_one_angle_per_image_matches_mxnet(mxnet_results):
    out = mx.image.imrotate(mx.nd.array(mxnet_results["batchin"]), mx.nd.array([15.0, -120.0]), zoom_out=True)
    np.testing.assert_allclose(out.asnumpy(), mxnet_results["batch"], atol=2e-6)


def test_geometry():
    img = np.random.RandomState(0).uniform(size=(2, 5, 5)).astype(np.float32)
    x = mx.nd.array(img)
    np.testing.assert_allclose(mx.image.imrotate(x, 0.0).asnumpy(), img, atol=1e-6)
    # a square turned by 180 degrees is the image reversed both ways
    np.testing.assert_allclose(mx.image.imrotate(x, 180.0).asnumpy(), img[:, ::-1, ::-1], atol=1e-5)
    # zoomed in, no zero border appears on a constant image (MXNet's
    # geometry leaves the corner pixels blending 6% of the outside)
    ones = mx.nd.ones((1, 6, 8))
    assert mx.image.imrotate(ones, 33.0, zoom_in=True).asnumpy().min() > 0.9
    assert mx.image.imrotate(ones, 33.0).asnumpy().min() < 0.5


def test_gradient_flows_to_the_image():
    x = mx.nd.array(np.random.RandomState(1).uniform(size=(1, 4, 4)))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.image.imrotate(x, 90.0).sum()
    y.backward()
    # a quarter turn of a square maps pixels onto pixels: every gradient is 1
    np.testing.assert_allclose(x.grad.asnumpy(), np.ones((1, 4, 4)), atol=1e-5)


def test_random_rotation_draws_within_limits():
    img = mx.nd.array(np.random.RandomState(2).uniform(size=(1, 9, 9)))
    np.random.seed(0)
    outs = [transforms.RandomRotation((10, 20))(img).asnumpy() for _ in range(3)]
    assert not np.allclose(outs[0], outs[1])
    np.random.seed(0)
    np.random.random()  # the transform's coin
    expected = mx.image.imrotate(img, np.random.uniform(10, 20)).asnumpy()
    np.testing.assert_allclose(outs[0], expected, atol=1e-6)
    assert transforms.RandomRotation((10, 20), rotate_with_proba=0.0)(img) is img


def test_errors():
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(mx.nd.ones((1, 3, 3), dtype="uint8"), 10)
    with pytest.raises(ValueError, match="cannot be both"):
        mx.image.imrotate(mx.nd.ones((1, 3, 3)), 10, zoom_in=True, zoom_out=True)
    with pytest.raises(ValueError, match="2 images need 2 angles"):
        mx.image.imrotate(mx.nd.ones((2, 1, 3, 3)), mx.nd.array([1, 2, 3]))
    with pytest.raises(ValueError, match="low < high"):
        transforms.RandomRotation((20, 10))
    with pytest.raises(ValueError, match="rotate_with_proba"):
        transforms.RandomRotation((0, 10), rotate_with_proba=2)
