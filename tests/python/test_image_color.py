"""The colour operators of mx.nd.image and the transforms on them
(RandomBrightness ... RandomLighting): MXNet 1.9.1's results where its
draws can be pinned (tests/fixtures/image/color.npz, from
scripts/make_image_color_fixtures.py), hand-computed values, the ranges
of the random draws, per-image draws in batches, and hybridization."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.data.vision import transforms

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image", "color.npz")
img = mx.nd.image


@pytest.fixture(scope="module")
def mxnet_results():
    return np.load(FIXTURE)


def pinned(x):
    return {"brightness": img.random_brightness(x, min_factor=1.3, max_factor=1.3),
            "contrast": img.random_contrast(x, min_factor=0.6, max_factor=0.6),
            "hue": img.random_hue(x, min_factor=0.2, max_factor=0.2),
            "lighting": img.adjust_lighting(x, alpha=(0.3, -0.2, 0.1))}


@pytest.mark.parametrize("tag,dtype", [("u8", "uint8"), ("f32", "float32")])
def test_pinned_draws_match_mxnet(mxnet_results, tag, dtype):
    for name, y in pinned(mx.nd.array(mxnet_results["rgb"], dtype=dtype)).items():
        assert y.dtype == np.dtype(dtype)
        np.testing.assert_allclose(y.asnumpy().astype(np.float64), mxnet_results[f"{tag}_{name}"], atol=2e-4,
                                   err_msg=name)


def test_grey_images_match_mxnet(mxnet_results):
    g = mx.nd.array(mxnet_results["grey_in"], dtype="float32")
    np.testing.assert_allclose(img.random_brightness(g, min_factor=0.5, max_factor=0.5).asnumpy(),
                               mxnet_results["grey_brightness"])
    np.testing.assert_allclose(img.random_contrast(g, min_factor=0.6, max_factor=0.6).asnumpy(),
                               mxnet_results["grey_contrast"], rtol=1e-6)
    # one channel: hue, saturation and lighting change nothing
    for y in (img.random_hue(g, min_factor=0.3, max_factor=0.3), img.random_saturation(g, 0.2, 0.2),
              img.adjust_lighting(g, alpha=(1, 1, 1))):
        np.testing.assert_array_equal(y.asnumpy(), g.asnumpy())


def test_saturation_mixes_with_the_whole_grey_level():
    x = np.random.RandomState(0).uniform(0, 255, (3, 2, 3)).astype(np.float32)
    grey = x @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    y = img.random_saturation(mx.nd.array(x), min_factor=0.25, max_factor=0.25).asnumpy()
    np.testing.assert_allclose(y, 0.25 * x + 0.75 * grey[..., None], rtol=1e-5)


def test_draws_stay_in_range_and_differ_per_image():
    x = mx.nd.full((6, 2, 2, 3), 100.0)
    y = img.random_brightness(x, min_factor=0.5, max_factor=1.5).asnumpy()
    factors = y[:, 0, 0, 0] / 100.0
    assert np.all((factors >= 0.5) & (factors <= 1.5))
    assert len(np.unique(factors)) == 6  # one draw per image
    assert np.allclose(y, factors[:, None, None, None] * 100.0)  # one factor within each image
    mx.random.seed(3)
    a = img.random_color_jitter(x, 0.4, 0.4, 0.4, 0.1).asnumpy()
    mx.random.seed(3)
    b = img.random_color_jitter(x, 0.4, 0.4, 0.4, 0.1).asnumpy()
    np.testing.assert_array_equal(a, b)


def test_lighting_adds_one_shift_per_image():
    x = mx.nd.array(np.random.RandomState(1).uniform(0, 255, (2, 3, 3, 3)).astype(np.float32))
    d = img.random_lighting(x, alpha_std=0.5).asnumpy() - x.asnumpy()
    assert np.allclose(d, d[:, :1, :1, :], atol=1e-3)
    assert not np.allclose(d[0, 0, 0], d[1, 0, 0])
    # the deterministic form: alpha along the first component only shifts by 55.46 × its vector
    np.testing.assert_allclose(img.adjust_lighting(mx.nd.zeros((1, 1, 3)), alpha=(1, 0, 0)).asnumpy().ravel(),
                               55.46 * np.array([-0.5675, -0.5808, -0.5836]), rtol=1e-5)


def test_transforms_hybridize_with_to_tensor():
    x = mx.nd.array(np.random.RandomState(2).randint(0, 256, (2, 8, 8, 3)), dtype="uint8")
    t = transforms.Compose([transforms.RandomColorJitter(0.3, 0.3, 0.3, 0.05), transforms.RandomLighting(0.1),
                            transforms.ToTensor()])  # one hybridized group
    out = t(x)
    assert out.shape == (2, 3, 8, 8) and out.dtype == np.float32
    assert 0.0 <= out.asnumpy().min() and out.asnumpy().max() <= 1.0
    for cls in (transforms.RandomBrightness, transforms.RandomContrast, transforms.RandomSaturation):
        y = cls(0.0)(x)  # amount 0: factor 1 exactly
        np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def test_errors_name_the_argument():
    x = mx.nd.ones((2, 2, 3))
    with pytest.raises(mx.MXNetError, match="min_factor"):
        img.random_brightness(x, min_factor=2, max_factor=1)
    with pytest.raises(mx.MXNetError, match="alpha must have 3 values"):
        img.adjust_lighting(x, alpha=(1, 2))
    with pytest.raises(mx.MXNetError, match=r"\(height, width, channels\)"):
        img.random_contrast(mx.nd.ones((3, 3)), min_factor=1, max_factor=1)
    with pytest.raises(mx.MXNetError, match="brightness must not be negative"):
        img.random_color_jitter(x, -1, 0, 0, 0)
    with pytest.raises(ValueError, match="hue must not be negative"):
        transforms.RandomHue(-0.1)
