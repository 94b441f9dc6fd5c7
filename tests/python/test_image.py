"""``mx.image``: decoding, reading, resizing (every interpolation), borders
and crops against what MXNet 1.9.1 (with its OpenCV) computed
(tests/fixtures/image/values.npz, from scripts/make_image_fixtures.py),
hand-worked crops, and errors."""

import pathlib
import random

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "image"


@pytest.fixture(scope="module")
def values():
    return np.load(FIXTURES / "values.npz")


def payload(key):
    rec = mx.recordio.MXIndexedRecordIO(str(FIXTURES / "mxnet.idx"), str(FIXTURES / "mxnet.rec"), "r")
    return mx.recordio.unpack(rec.read_idx(key))[1]


def off_by(got, want):
    got = got.asnumpy() if isinstance(got, mx.nd.NDArray) else got
    assert got.shape == want.shape, (got.shape, want.shape)
    return np.abs(got.astype(int) - want.astype(int)).max()


@pytest.mark.parametrize("name, key, tol", [("png", 2, 0), ("jpg", 3, 3)])
def test_imdecode_matches_mxnet(values, name, key, tol):
    data = payload(key)
    img = mx.image.imdecode(data)
    assert img.dtype == np.uint8 and img.shape == (24, 31, 3)
    assert off_by(img, values[f"imdecode_{name}"]) <= tol
    assert off_by(mx.image.imdecode(data, to_rgb=0), values[f"imdecode_{name}_bgr"]) <= tol
    assert off_by(mx.image.imdecode(data, flag=0), values[f"imdecode_{name}_grey"]) <= max(tol, 1)
    # bytes, numpy and NDArray buffers alike
    buf = np.frombuffer(data, dtype=np.uint8)
    assert off_by(mx.image.imdecode(buf), img.asnumpy()) == 0
    assert off_by(mx.image.imdecode(mx.nd.array(buf, dtype="uint8")), img.asnumpy()) == 0


def test_imread_reads_a_file(tmp_path, values):
    path = tmp_path / "img.png"
    path.write_bytes(payload(2))
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), values["rgb"])
    with pytest.raises(OSError, match="nothing.png"):
        mx.image.imread(str(tmp_path / "nothing.png"))


@pytest.mark.parametrize("interp", range(5))
def test_imresize_matches_mxnets_opencv_exactly(values, interp):
    src = mx.nd.array(values["rgb"], dtype="uint8")
    for w, h in ((17, 11), (50, 40), (31, 12)):
        out = mx.image.imresize(src, w, h, interp=interp)
        assert out.dtype == np.uint8
        assert off_by(out, values[f"resize_{interp}_{w}x{h}"]) == 0, (interp, w, h)


def test_resize_short_and_borders_match_mxnet(values):
    src = mx.nd.array(values["rgb"], dtype="uint8")
    assert off_by(mx.image.resize_short(src, 16), values["resize_short_16"]) == 0
    for kind in range(5):
        assert off_by(mx.image.copyMakeBorder(src, 2, 3, 4, 1, type=kind, value=9), values[f"border_{kind}"]) == 0


def test_crops_by_hand():
    img = mx.nd.array(np.arange(6 * 8 * 3).reshape(6, 8, 3), dtype="uint8")
    assert mx.image.scale_down((8, 6), (4, 4)) == (4, 4)
    assert mx.image.scale_down((8, 6), (16, 12)) == (8, 6)
    assert mx.image.scale_down((8, 6), (4, 12)) == (2, 6)
    np.testing.assert_array_equal(mx.image.fixed_crop(img, 2, 1, 3, 4).asnumpy(), img.asnumpy()[1:5, 2:5])
    out, (x0, y0, w, h) = mx.image.center_crop(img, (4, 2))
    assert (x0, y0, w, h) == (2, 2, 4, 2)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[2:4, 2:6])
    random.seed(3)
    out, (x0, y0, w, h) = mx.image.random_crop(img, (5, 3))
    assert (w, h) == (5, 3) and 0 <= x0 <= 3 and 0 <= y0 <= 3
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[y0:y0 + 3, x0:x0 + 5])
    out, (x0, y0, w, h) = mx.image.random_size_crop(img, (4, 4), 0.3, (0.75, 1.33))
    assert out.shape == (4, 4, 3) and w * h >= 0.3 * 48 * 0.8
    # the crop is resized to the size asked for
    out, _ = mx.image.center_crop(img, (16, 12))
    assert out.shape == (12, 16, 3)
    norm = mx.image.color_normalize(mx.nd.ones((2, 2, 3)) * 10, mx.nd.array([1, 2, 3]), mx.nd.array([3, 2, 1]))
    np.testing.assert_allclose(norm.asnumpy()[0, 0], [3, 4, 7])


def test_image_errors():
    with pytest.raises(MXNetError, match="cannot decode"):
        mx.image.imdecode(b"garbage")
    with pytest.raises(ValueError, match="buf must be of type bytes"):
        mx.image.imdecode("a string")
    img = mx.nd.ones((4, 4, 3), dtype="uint8")
    with pytest.raises(MXNetError, match="unknown interpolation 7"):
        mx.image.imresize(img, 2, 2, interp=7)
    with pytest.raises(MXNetError, match="uint8, float32 or float64"):
        mx.image.imresize(mx.nd.ones((4, 4, 3), dtype="int32"), 2, 2)
    with pytest.raises(ValueError, match="Unknown interp method 8"):
        mx.image.resize_short(img, 2, interp=8)
