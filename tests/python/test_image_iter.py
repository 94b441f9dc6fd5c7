"""``mx.image`` augmenters and ``ImageIter``: batches, labels and padding
against MXNet 1.9.1's ``ImageIter`` reading the same RecordIO file (run in
the side environment .venv-mxnet; skipped without it), and the augmenters
by hand."""

import json
import pathlib
import random
import subprocess

import numpy as np
import pytest

import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"


def images(n=7, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:14, 0:18].astype(np.float64)
    out = []
    for k in range(n):
        base = rng.uniform(40, 200, 3)
        img = base + 30 * np.stack([np.sin(x / (3 + k)), np.cos(y / (2 + k)), np.sin((x + y) / 5)], axis=2)
        out.append(np.clip(img, 0, 255).astype(np.uint8))
    return out


def write_rec(folder, imgs):
    rec = mx.recordio.MXIndexedRecordIO(str(folder / "d.idx"), str(folder / "d.rec"), "w")
    for k, img in enumerate(imgs):
        rec.write_idx(k, mx.recordio.pack_img((0, float(k), k, 0), img[:, :, ::-1], img_fmt=".png"))
    rec.close()
    return str(folder / "d.rec"), str(folder / "d.idx")


RUN = """
import json, sys
import {engine} as mx
rec, idx = sys.argv[1], sys.argv[2]
out = {{}}
for handle in ('pad', 'discard', 'roll_over'):
    it = mx.image.ImageIter(3, (3, 8, 10), path_imgrec=rec, path_imgidx=idx, resize=12,
                            last_batch_handle=handle, mean=True, std=True)
    epochs = []
    for epoch in range(3):
        batches = []
        for batch in it:
            batches.append([batch.pad, batch.label[0].asnumpy().tolist(), batch.data[0].asnumpy().tolist()])
        epochs.append(batches)
        it.reset()
    out[handle] = epochs
print(json.dumps(out))
"""


def run(engine, python, rec, idx):
    result = subprocess.run([python, "-c", RUN.format(engine=engine), rec, idx], capture_output=True, text=True,
                            timeout=300, cwd=str(ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_image_iter_matches_mxnet(tmp_path):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    rec, idx = write_rec(tmp_path, images())
    ours = run("oxnet", str(ROOT / ".venv" / "bin" / "python"), rec, idx)
    theirs = run("mxnet", str(MXNET_PYTHON), rec, idx)
    for handle in ("pad", "discard", "roll_over"):
        assert len(ours[handle]) == len(theirs[handle])
        for epoch, (a, b) in enumerate(zip(ours[handle], theirs[handle])):
            assert [x[:2] for x in a] == [x[:2] for x in b], (handle, epoch)  # pads and labels
            for (_, _, da), (_, _, db) in zip(a, b):
                # resized bit for bit as OpenCV, then normalised in float32
                np.testing.assert_allclose(da, db, rtol=1e-6, atol=1e-6)


def test_image_iter_batches_by_hand(tmp_path):
    imgs = images(5)
    rec, idx = write_rec(tmp_path, imgs)
    it = mx.image.ImageIter(2, (3, 14, 18), path_imgrec=rec, path_imgidx=idx)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 1]
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [0, 1])
    np.testing.assert_array_equal(batches[2].label[0].asnumpy(), [4, 0])  # padded from the start
    np.testing.assert_array_equal(batches[1].data[0].asnumpy()[1], imgs[3].transpose(2, 0, 1).astype(np.float32))
    # an image list and files on disk give the same batches
    for k, img in enumerate(imgs):
        (tmp_path / f"{k}.png").write_bytes(mx.recordio.unpack(mx.recordio.pack_img((0, 0, 0, 0), img[:, :, ::-1],
                                                                                     img_fmt=".png"))[1])
    listed = mx.image.ImageIter(2, (3, 14, 18), imglist=[[float(k), f"{k}.png"] for k in range(5)],
                                path_root=str(tmp_path))
    for a, b in zip(listed, batches):
        np.testing.assert_array_equal(a.data[0].asnumpy(), b.data[0].asnumpy())
        np.testing.assert_array_equal(a.label[0].asnumpy(), b.label[0].asnumpy())
    with pytest.raises(ValueError, match="3 channels"):
        mx.image.ImageIter(2, (1, 14, 18), path_imgrec=rec)


def test_augmenters_by_hand():
    img = mx.nd.array(images(1)[0], dtype="uint8")
    random.seed(4)
    flip = mx.image.HorizontalFlipAug(1.0)
    np.testing.assert_array_equal(flip(img).asnumpy(), img.asnumpy()[:, ::-1])
    x = mx.image.CastAug()(img)
    assert x.dtype == np.float32
    bright = mx.image.BrightnessJitterAug(0.5)
    random.seed(5)
    alpha = 1.0 + random.uniform(-0.5, 0.5)
    random.seed(5)
    np.testing.assert_allclose(bright(x.copy()).asnumpy(), x.asnumpy() * alpha, rtol=1e-5)
    sat = mx.image.SaturationJitterAug(0.3)
    random.seed(6)
    alpha = 1.0 + random.uniform(-0.3, 0.3)
    xs = x.asnumpy()
    grey = (xs * np.array([0.299, 0.587, 0.114])).sum(axis=2, keepdims=True)
    random.seed(6)
    np.testing.assert_allclose(sat(x.copy()).asnumpy(), alpha * xs + (1 - alpha) * grey, rtol=1e-4, atol=1e-3)
    gray = mx.image.RandomGrayAug(1.0)(x).asnumpy()
    np.testing.assert_allclose(gray[:, :, 0], gray[:, :, 2], rtol=1e-6)
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_mirror=True, mean=True, std=True,
                                    brightness=0.1, pca_noise=0.1)
    names = [type(a).__name__ for a in augs]
    assert names == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug", "LightingAug",
                     "ColorNormalizeAug"]
    out = img
    for aug in augs:
        out = aug(out)
    assert out.shape == (8, 8, 3) and out.dtype == np.float32
    assert json.loads(augs[0].dumps()) == ["resizeaug", {"size": 10, "interp": 2}]


def test_imread_of_a_missing_file_is_an_mxnet_error_and_an_oserror(tmp_path):
    missing = str(tmp_path / "nowhere" / "blah.jpg")
    with pytest.raises(mx.MXNetError, match="imread: cannot read"):
        mx.img.image.imread(missing)
    with pytest.raises(OSError):
        mx.image.imread(missing)


def test_imresize_takes_float_images_as_mxnet():
    # MXNet 1.9.1's imresize and transforms.Resize take float images too; a
    # float copy of a uint8 image resizes to within rounding of the uint8 one
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, (30, 20, 3)).astype("uint8")
    as_u8 = mx.image.imresize(mx.nd.array(img, dtype="uint8"), 12, 17).asnumpy().astype(np.float64)
    for dtype in ("float32", "float64"):
        out = mx.image.imresize(mx.nd.array(img, dtype=dtype), 12, 17)
        assert out.dtype == np.dtype(dtype) and out.shape == (17, 12, 3)
        np.testing.assert_allclose(out.asnumpy(), as_u8, atol=1.0)
        np.testing.assert_allclose(mx.gluon.data.vision.transforms.Resize((12, 17))(mx.nd.array(img, dtype=dtype))
                                   .asnumpy(), out.asnumpy(), rtol=1e-6)
    grey = mx.image.imresize(mx.nd.array(img[:, :, 0], dtype="float32"), 12, 17)
    assert grey.shape == (17, 12)
