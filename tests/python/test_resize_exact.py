"""uint8 resizes and warps bit for bit as MXNet 1.9.1's OpenCV 3.4.2 makes
them: tests/fixtures/resize/mxnet_resize.npz (scripts/make_resize_fixture.py)
holds MXNet's ``mx.image.imresize`` of random images with every
interpolation (40 cases each: enlarging, shrinking, whole factors,
one-pixel sides, 1, 3 and 4 channels, wide rows) and ``ImageRecordIter``'s
rotations, scales and aspect ratios (``cv::warpAffine``, 10 cases for each
``inter_method`` 1 to 4)."""

import pathlib

import numpy as np
import pytest

import oxnet as mx

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "resize" / "mxnet_resize.npz"


@pytest.fixture(scope="module")
def fixture():
    return np.load(FIXTURE)


@pytest.mark.parametrize("interp", range(5))
def test_imresize_matches_mxnet_bit_for_bit(fixture, interp):
    meta = fixture["resize_meta"]
    cases = meta[meta[:, 1] == interp]
    assert len(cases) == 40
    for case, _, nh, nw in cases.tolist():
        src, want = fixture[f"resize_{case}_src"], fixture[f"resize_{case}_out"]
        got = mx.image.imresize(mx.nd.array(src, dtype="uint8"), nw, nh, interp=interp)
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got.asnumpy().reshape(want.shape), want,
                                      err_msg=f"case {case}: {src.shape} -> {want.shape}, interp {interp}")
        # the operator behind gluon's Resize runs the same code
        op = mx.nd.image.resize(mx.nd.array(src, dtype="uint8"), size=(nw, nh), interp=interp)
        np.testing.assert_array_equal(op.asnumpy().reshape(want.shape), want, err_msg=f"case {case}, operator")


@pytest.mark.parametrize("inter_method", [1, 2, 3, 4])
def test_image_record_iter_warps_match_mxnet_bit_for_bit(fixture, tmp_path, inter_method):
    meta, scales = fixture["warp_meta"], fixture["warp_scale"]
    picked = meta[:, 2] == inter_method
    assert picked.sum() == 10
    for (case, angle, _, fill), (scale, ratio) in zip(meta[picked].tolist(), scales[picked].tolist()):
        src, want = fixture[f"warp_{case}_src"], fixture[f"warp_{case}_out"]
        c = src.shape[2]
        path = str(tmp_path / f"warp{case}.rec")
        rec = mx.recordio.MXRecordIO(path, "w")
        rec.write(mx.recordio.pack_img((0, 0.0, 0, 0), src[:, :, ::-1] if c == 3 else src[:, :, 0], img_fmt=".png"))
        rec.close()
        it = mx.io.ImageRecordIter(path, (c,) + want.shape[:2], 1, rotate=angle, inter_method=inter_method,
                                   fill_value=fill, dtype="uint8", min_random_scale=scale, max_random_scale=scale,
                                   min_aspect_ratio=ratio, max_aspect_ratio=ratio)
        got = next(iter(it)).data[0].asnumpy()[0].transpose(1, 2, 0)
        np.testing.assert_array_equal(got, want, err_msg=f"case {case}: angle {angle}, scale {scale}, ratio {ratio}")
