"""``mx.io.ImageRecordIter``: batches, labels, pads and parts against MXNet
1.9.1's ``ImageRecordIter`` on the same file (the side environment
.venv-mxnet; skipped without it); the augmenter's deterministic settings
against MXNet's batches stored in tests/fixtures/image/aug_batches.npz;
the random augmentations' invariants; ``rotate_list`` against MXNet (one
of its angles per image); seeded randomness independent of the number of
threads; shuffling; errors."""

import json
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "image"
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"


def write_rec(path, n=11, label_width=1, seed=0):
    rng = np.random.default_rng(seed)
    rec = mx.recordio.MXRecordIO(str(path), "w")
    for k in range(n):
        h, w = int(rng.integers(12, 30)), int(rng.integers(12, 30))
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        img = rng.uniform(40, 200, 3) + 40 * np.stack([np.sin(x / 3), np.cos(y / 4), np.sin((x + y) / 5)], axis=2)
        label = float(k) if label_width == 1 else [float(k), float(-k)]
        rec.write(mx.recordio.pack_img((0, label, k, 0), np.clip(img, 0, 255).astype(np.uint8), img_fmt=".png"))
    rec.close()
    return str(path)


RUN = """
import json, sys
import {engine} as mx
kwargs = json.loads(sys.argv[2])
it = mx.io.ImageRecordIter(path_imgrec=sys.argv[1], **kwargs)
epochs = []
for epoch in range(2):
    epochs.append([[b.pad, b.label[0].asnumpy().tolist(), b.data[0].asnumpy().tolist()] for b in it])
    it.reset()
print(json.dumps(epochs))
"""


def run(engine, python, path, **kwargs):
    result = subprocess.run([python, "-c", RUN.format(engine=engine), path, json.dumps(kwargs)],
                            capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


CASES = [
    dict(data_shape=(3, 10, 12), batch_size=4, resize=14, mean_r=120, mean_g=110, mean_b=100, std_r=50, std_g=60,
         std_b=70, scale=0.5),
    dict(data_shape=(3, 16, 16), batch_size=3, round_batch=False, mirror=True, inter_method=2),
    dict(data_shape=(3, 12, 12), batch_size=5, label_width=2, num_parts=2, part_index=1),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_batches_match_mxnet(tmp_path, case):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    kwargs = CASES[case]
    path = write_rec(tmp_path / "d.rec", label_width=kwargs.get("label_width", 1))
    ours = run("oxnet", str(ROOT / ".venv" / "bin" / "python"), path, **kwargs)
    theirs = run("mxnet", str(MXNET_PYTHON), path, **kwargs)
    # the pixels are MXNet's bit for bit (OpenCV's fixed-point resizes), normalised in float32
    tol = 1e-5
    for epoch, (a, b) in enumerate(zip(ours, theirs)):
        assert len(a) == len(b), (case, epoch)
        for k, ((pad_a, label_a, data_a), (pad_b, label_b, data_b)) in enumerate(zip(a, b)):
            filled = len(label_a) - (pad_a if not kwargs.get("round_batch", True) else 0)
            # MXNet reports pad 0 without round_batch and leaves the rest as it was
            assert pad_a == pad_b or (not kwargs.get("round_batch", True) and pad_b == 0), (case, epoch, k)
            assert label_a[:filled] == label_b[:filled], (case, epoch, k)
            np.testing.assert_allclose(np.array(data_a)[:filled], np.array(data_b)[:filled], atol=tol)


def test_seeded_randomness_does_not_depend_on_threads_and_shuffles_per_epoch(tmp_path):
    path = write_rec(tmp_path / "r.rec", n=9)
    make = lambda threads: mx.io.ImageRecordIter(path, (3, 10, 10), 4, rand_crop=True, rand_mirror=True,  # noqa: E731
                                                 shuffle=True, seed=7, preprocess_threads=threads)
    one, three = make(1), make(3)
    first = [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in one]
    for (d1, l1, p1), b in zip(first, three):
        np.testing.assert_array_equal(d1, b.data[0].asnumpy())
        np.testing.assert_array_equal(l1, b.label[0].asnumpy())
    labels = np.concatenate([l for _, l, _ in first])
    assert [p for _, _, p in first] == [0, 0, 3]
    assert sorted(labels[:9].tolist()) == list(range(9))
    # round robin: the next epoch starts after the 3 records used as padding
    one.reset()
    assert sum(b.label[0].shape[0] - b.pad for b in one) == 6
    # each epoch draws a new order
    even = mx.io.ImageRecordIter(write_rec(tmp_path / "e.rec", n=8), (3, 10, 10), 4, shuffle=True, seed=7)
    orders = []
    for _ in range(2):
        orders.append(np.concatenate([b.label[0].asnumpy() for b in even]).tolist())
        even.reset()
    assert sorted(orders[0]) == sorted(orders[1]) == list(range(8)) and orders[0] != orders[1]


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(MXNetError, match="missing.rec"):
        mx.io.ImageRecordIter(str(tmp_path / "missing.rec"), (3, 8, 8), 2)
    path = write_rec(tmp_path / "e.rec", n=3)
    for kwargs, name in [(dict(brightness=-0.1), "brightness"), (dict(dtype="float16"), "dtype"),
                         (dict(min_random_scale=0.9, max_random_scale=0.5), "min_random_scale"),
                         (dict(min_aspect_ratio=2.0, max_aspect_ratio=1.0), "min_aspect_ratio"),
                         (dict(random_resized_crop=True, rand_crop=True), "rand_crop"),
                         (dict(max_crop_size=6), "min_crop_size"), (dict(pca_noise=-1), "pca_noise"),
                         (dict(max_random_illumination=-2), "max_random_illumination"), (dict(std_a=0.0), "std_a")]:
        with pytest.raises(MXNetError, match=name):
            mx.io.ImageRecordIter(path, (3, 8, 8), 2, **kwargs)
    with pytest.raises(ValueError, match="rotate"):
        mx.io.ImageRecordIter(path, (3, 8, 8), 2, rotate=12.5)
    with pytest.raises(MXNetError, match="max_crop_size"):
        mx.io.ImageRecordIter(path, (3, 8, 8), 2, min_crop_size=6, max_crop_size=40).next()
    with pytest.raises(MXNetError, match="path_imglist"):
        mx.io.ImageRecordIter(path, (3, 8, 8), 2, path_imglist=str(tmp_path / "missing.lst"))
    with pytest.raises(TypeError, match="no_such_argument"):
        mx.io.ImageRecordIter(path, (3, 8, 8), 2, no_such_argument=1)
    with pytest.raises(MXNetError, match="data_shape"):
        mx.io.ImageRecordIter(path, (2, 8, 8), 2)
    bad = mx.recordio.MXRecordIO(str(tmp_path / "bad.rec"), "w")
    bad.write(mx.recordio.pack((0, 0.0, 0, 0), b"not an image"))
    bad.close()
    it = mx.io.ImageRecordIter(str(tmp_path / "bad.rec"), (3, 8, 8), 1)
    with pytest.raises(MXNetError, match=r"bad.rec`, record 0: cannot decode"):
        it.next()


# MXNet's batches of scripts/make_image_fixtures.py's AUG_CASES, and the
# largest difference allowed, in grey levels (times scale / std), and the
# largest fraction of values that may differ: none, since every step
# computes as MXNet's (OpenCV's fixed-point resizes and warps, constant
# padding, the same float32 normalisation)
AUG_CASES = {
    "rotate": (dict(data_shape=(3, 16, 16), rotate=30, fill_value=40), 0, 0),
    # grey: the PNG's colour decoded to grey with libpng's weights, as OpenCV
    "rotate_grey": (dict(data_shape=(1, 16, 16), rotate=90, fill_value=200), 0, 0),
    "rotate_cubic": (dict(data_shape=(3, 16, 16), rotate=20, inter_method=2), 0, 0),
    "scale_aspect": (dict(data_shape=(3, 16, 16), rotate=45, max_random_scale=0.7, min_random_scale=0.7,
                          max_aspect_ratio=1.5, min_aspect_ratio=1.5, fill_value=0), 0, 0),
    "img_size": (dict(data_shape=(3, 16, 16), rotate=10, max_img_size=20, min_img_size=18, mirror=True), 0, 0),
    "pad": (dict(data_shape=(3, 30, 30), pad=4, fill_value=7), 0, 0),
    "resize_rotate_pad": (dict(data_shape=(3, 20, 20), resize=20, rotate=15, pad=2, fill_value=99, mean_r=120,
                               std_r=50, scale=0.5), 0, 0),
    "crop_size": (dict(data_shape=(3, 16, 16), min_crop_size=20, max_crop_size=20), 0, 0),
    "uint8": (dict(data_shape=(3, 16, 16), dtype="uint8", mirror=True, mean_r=100, scale=3), 0, 0),
    "int8": (dict(data_shape=(3, 16, 16), dtype="int8", mean_r=100, mean_g=120.6, mean_b=90), 0, 0),
    "imglist": (dict(data_shape=(3, 16, 16), label_width=2, path_imglist="aug.lst"), 0, 0),
    "mean_img": (dict(data_shape=(3, 16, 16), mean_img="aug_mean.nd", std_g=2.0), 0, 0),
}


@pytest.mark.parametrize("name", sorted(AUG_CASES))
def test_deterministic_augmentations_match_mxnet(tmp_path, name):
    kwargs, levels, fraction = AUG_CASES[name]
    kwargs = dict(kwargs)
    for key in ("path_imglist", "mean_img"):
        if key in kwargs:  # MXNet's own list and mean image (copied: a missing one would be written)
            kwargs[key] = str(shutil.copy(FIXTURES / kwargs[key], tmp_path / kwargs[key]))
    expected = np.load(FIXTURES / "aug_batches.npz")
    it = mx.io.ImageRecordIter(str(FIXTURES / "aug.rec"), batch_size=4, preprocess_threads=2, **kwargs)
    got = list(it)
    data = np.concatenate([b.data[0].asnumpy() for b in got])
    assert data.dtype == expected[f"{name}_data"].dtype and it.provide_data[0].dtype == data.dtype
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in got]), expected[f"{name}_label"])
    assert [b.pad for b in got] == expected[f"{name}_pad"].tolist()
    diff = np.abs(data.astype(np.float64) - expected[f"{name}_data"].astype(np.float64))
    step = kwargs.get("scale", 1.0) / min(kwargs.get(k, 1.0) for k in ("std_r", "std_g", "std_b"))
    if kwargs.get("dtype") == "uint8":
        step = 1.0
    assert diff.max() <= levels * step + 1e-4, (name, diff.max())
    assert (diff > 1e-4).mean() <= fraction, (name, (diff > 1e-4).mean())


def test_rotate_list_matches_mxnet(tmp_path):
    """MXNet's ``rotate_list``: each image turned by one of the angles, drawn
    at random (so oxnet's draws differ from MXNet's); one angle alone is
    MXNet's result exactly, and each image of a longer list is MXNet's
    result for one of its angles."""
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    path = str(FIXTURES / "aug.rec")
    kwargs = dict(data_shape=(3, 16, 16), batch_size=4, fill_value=30, dtype="uint8", inter_method=2)
    angles = (-30, 0, 90)
    # MXNet's string form; 0 alone still warps (the identity)
    theirs = {a: np.concatenate([np.array(b[2]) for b in run("mxnet", str(MXNET_PYTHON), path, rotate_list=str(a),
                                                                   **kwargs)[0]]) for a in angles}
    ours = np.concatenate([b.data[0].asnumpy() for b in mx.io.ImageRecordIter(path, rotate_list="90", **kwargs)])
    np.testing.assert_array_equal(ours, theirs[90])
    np.testing.assert_array_equal(theirs[0], batches(path, (3, 16, 16), 4, fill_value=30, dtype="uint8"))
    for threads in (1, 3):
        mixed = batches(path, (3, 16, 16), 4, fill_value=30, dtype="uint8", inter_method=2, seed=5,
                        rotate_list=list(angles), max_rotate_angle=10, rotate=45, preprocess_threads=threads)
        picked = [next(a for a in angles if np.array_equal(img, theirs[a][k])) for k, img in enumerate(mixed)]
        assert len(set(picked)) > 1, picked
    # the same list as a string
    np.testing.assert_array_equal(
        batches(path, (3, 16, 16), 4, fill_value=30, dtype="uint8", inter_method=2, seed=5, rotate_list="-30, 0,90"),
        batches(path, (3, 16, 16), 4, fill_value=30, dtype="uint8", inter_method=2, seed=5, rotate_list=(-30, 0, 90)))
    with pytest.raises(ValueError, match="rotate_list"):
        mx.io.ImageRecordIter(path, (3, 16, 16), 4, rotate_list="90,a")
    with pytest.raises(ValueError, match="rotate_list"):
        mx.io.ImageRecordIter(path, (3, 16, 16), 4, rotate_list=[12.5])


def test_mean_img_is_computed_and_saved_as_mxnet_does(tmp_path):
    path = tmp_path / "mean.nd"
    it = mx.io.ImageRecordIter(str(FIXTURES / "aug.rec"), (3, 16, 16), 4, mean_img=str(path), std_g=2.0)
    ours = mx.nd.load(str(path))
    theirs = mx.nd.load(str(FIXTURES / "aug_mean.nd"))
    assert list(ours) == list(theirs) == ["mean_img"]
    np.testing.assert_allclose(ours["mean_img"].asnumpy(), theirs["mean_img"].asnumpy(), rtol=1e-6, atol=1e-4)
    expected = np.load(FIXTURES / "aug_batches.npz")["mean_img_data"]
    np.testing.assert_allclose(np.concatenate([b.data[0].asnumpy() for b in it]), expected, atol=1e-4)
    # uint8 output ignores the mean image (and makes none)
    mx.io.ImageRecordIter(str(FIXTURES / "aug.rec"), (3, 16, 16), 4, mean_img=str(tmp_path / "u.nd"), dtype="uint8")
    assert not (tmp_path / "u.nd").exists()


def write_images(path, images):
    rec = mx.recordio.MXRecordIO(str(path), "w")
    for k, img in enumerate(images):
        rec.write(mx.recordio.pack_img((0, float(k), k, 0), img[:, :, ::-1], img_fmt=".png"))
    rec.close()
    return str(path)


def batches(path, shape, n, **kwargs):
    it = mx.io.ImageRecordIter(path, shape, n, **kwargs)
    return np.concatenate([b.data[0].asnumpy() for b in it])


def textured(n=12, h=20, w=20, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(60, 191, (h, w, 3)).astype(np.uint8) for _ in range(n)]


def test_brightness_contrast_saturation_invariants(tmp_path):
    const = write_images(tmp_path / "c.rec", [np.full((12, 12, 3), (100, 150, 50), np.uint8)] * 16)
    out = batches(const, (3, 8, 8), 16, brightness=0.5, seed=3)
    factors = out[:, :, 0, 0] / np.array([100, 150, 50])
    # one factor per image in [0.5, 1.5] (within rounding), varied across images
    assert np.all(np.abs(out - out[:, :, :1, :1]) == 0)
    assert np.all(factors > 0.5 - 0.01) and np.all(factors < 1.5 + 0.01)
    assert np.ptp(factors[:, 1]) > 0.3 and np.all(np.abs(factors - factors[:, 1:2]) < 0.02)
    # contrast pulls every channel toward MXNet's grey level (0.114 R + 0.587 G + 0.299 B = 114.4 here)
    out = batches(const, (3, 8, 8), 16, contrast=0.5, seed=3)
    alpha = (out[:, :, 0, 0] - 114.4) / (np.array([100, 150, 50]) - 114.4)
    assert np.all(np.abs(alpha - alpha[:, 1:2]) < 0.05) and np.all((alpha > 0.45) & (alpha < 1.55))
    assert np.ptp(alpha[:, 1]) > 0.3
    # saturation leaves grey images as they are
    grey = write_images(tmp_path / "g.rec", [np.full((12, 12, 3), v, np.uint8) for v in (30, 90, 200)])
    np.testing.assert_array_equal(batches(grey, (3, 8, 8), 3, saturation=0.9),
                                  batches(grey, (3, 8, 8), 3))


def test_pca_noise_adds_a_constant_per_channel(tmp_path):
    images = textured()
    path = write_images(tmp_path / "t.rec", images)
    plain = batches(path, (3, 20, 20), 12)
    noisy = batches(path, (3, 20, 20), 12, pca_noise=0.1, seed=4)
    offsets = noisy - plain
    assert np.all(offsets == offsets[:, :, :1, :1])
    offsets = offsets[:, :, 0, 0]
    # the largest eigenvalue's direction (about equal in R, G, B) dominates: 55.46 · 0.1 · N(0, 1)
    assert np.abs(offsets).max() <= 30 and np.abs(offsets).max() >= 2
    assert np.corrcoef(offsets[:, 0], offsets[:, 2])[0, 1] > 0.8


def test_hsl_lightness_and_hue_jitter(tmp_path):
    grey = write_images(tmp_path / "g.rec", [np.full((10, 10, 3), 100, np.uint8)] * 16)
    out = batches(grey, (3, 8, 8), 16, random_l=30, seed=5)
    shift = out[:, :, 0, 0] - 100
    assert np.all(out == out[:, :, :1, :1]) and np.all(shift == shift[:, :1])
    assert np.all(np.abs(shift) <= 30) and np.ptp(shift) >= 5
    # hue jitter keeps lightness (max + min of the channels) within rounding, and changes colours
    colour = write_images(tmp_path / "c.rec", [np.full((10, 10, 3), (200, 60, 60), np.uint8)] * 16)
    out = batches(colour, (3, 8, 8), 16, random_h=40, seed=5)[:, :, 0, 0]
    assert np.all(np.abs(out.max(1) + out.min(1) - 260) <= 2) and np.ptp(out[:, 1] + out[:, 2]) > 10


def test_random_rotation_shear_and_scale(tmp_path):
    path = write_images(tmp_path / "c.rec", [np.full((21, 21, 3), 100, np.uint8)] * 16)
    for kwargs in (dict(max_rotate_angle=45), dict(max_shear_ratio=0.5)):
        out = batches(path, (3, 21, 21), 16, fill_value=0, seed=6, **kwargs)
        # the centre stays; corners take the fill value for some images only
        assert np.all(out[:, :, 10, 10] == 100), kwargs
        # the fill shows at the borders, by an amount that varies with the draws
        filled = (out[:, 0] == 0).sum(axis=(1, 2))
        assert filled.max() >= 10 and np.ptp(filled) >= 10, (kwargs, filled)
        np.testing.assert_array_equal(out, batches(path, (3, 21, 21), 16, fill_value=0, seed=6, **kwargs))
        assert not np.array_equal(out, batches(path, (3, 21, 21), 16, fill_value=0, seed=7, **kwargs))
    # a random scale shrinks the image (the warp's output is scaled too), then
    # the crop enlarges it back: the same size, blurred by a per-image amount
    path = write_images(tmp_path / "t.rec", textured(n=8, h=21, w=21))
    plain = batches(path, (3, 21, 21), 8)
    scaled = batches(path, (3, 21, 21), 8, min_random_scale=0.5, max_random_scale=0.9, seed=6)
    change = np.abs(scaled - plain).mean(axis=(1, 2, 3))
    assert np.all(change > 5) and np.ptp(scaled.std(axis=(1, 2, 3))) > 1, change


def test_random_resized_crop_areas(tmp_path):
    y, x = np.mgrid[0:32, 0:32]
    coded = np.stack([x * 8, y * 8, np.zeros_like(x)], axis=2).astype(np.uint8)
    path = write_images(tmp_path / "x.rec", [coded] * 16)
    out = batches(path, (3, 8, 8), 16, random_resized_crop=True, min_random_area=0.25, max_random_area=0.25,
                  inter_method=0, seed=8)
    # a quarter of the area, square: 16 x 16 pixels, at random places
    spans = (out[:, 0].max(axis=(1, 2)) - out[:, 0].min(axis=(1, 2))) / 8 + 2
    assert np.all((spans >= 15) & (spans <= 17)), spans
    assert np.ptp(out[:, 0].min(axis=(1, 2))) > 0 and np.ptp(out[:, 1].min(axis=(1, 2))) > 0
    # aspect ratios from [3/4, 4/3] and areas from [0.08, 1]: every crop fits in the image
    out = batches(path, (3, 8, 8), 16, random_resized_crop=True, min_random_area=0.08, min_aspect_ratio=0.75,
                  max_aspect_ratio=4 / 3, inter_method=0, seed=8)
    assert np.ptp((out[:, 0].max(axis=(1, 2)) - out[:, 0].min(axis=(1, 2)))) > 40


def test_random_contrast_and_illumination(tmp_path):
    path = write_images(tmp_path / "c.rec", [np.full((8, 8, 3), 150, np.uint8)] * 16)
    out = batches(path, (3, 8, 8), 16, mean_r=100, mean_g=100, mean_b=100, max_random_contrast=0.2,
                  max_random_illumination=5, scale=0.5, seed=9)
    # (150 - 100) · 0.5 · (1 ± 0.2) ± 5 · 0.5, one draw per image
    assert np.all(out == out[:, :1, :1, :1]) and np.all((out >= 17.5) & (out <= 32.5))
    assert np.ptp(out[:, 0, 0, 0]) > 3


def test_augmented_runs_do_not_depend_on_threads(tmp_path):
    path = write_images(tmp_path / "t.rec", textured(n=10, h=30, w=26))
    kwargs = dict(random_resized_crop=True, min_random_area=0.3, max_aspect_ratio=0.25, rand_mirror=True,
                  brightness=0.4, contrast=0.4, saturation=0.4, pca_noise=0.1, random_h=10, max_rotate_angle=20,
                  max_shear_ratio=0.1, shuffle=True, seed=11)
    one = batches(path, (3, 16, 16), 4, preprocess_threads=1, **kwargs)
    np.testing.assert_array_equal(one, batches(path, (3, 16, 16), 4, preprocess_threads=3, **kwargs))
    assert not np.array_equal(one, batches(path, (3, 16, 16), 4, preprocess_threads=1, **dict(kwargs, seed=12)))


def test_typed_iterators_are_image_record_iters_of_their_dtype():
    expected = np.load(FIXTURES / "aug_batches.npz")
    for make, name in [(mx.io.ImageRecordUInt8Iter, "uint8"), (mx.io.ImageRecordInt8Iter, "int8")]:
        kwargs = dict(AUG_CASES[name][0])
        del kwargs["dtype"]
        it = make(str(FIXTURES / "aug.rec"), batch_size=4, **kwargs)
        data = np.concatenate([b.data[0].asnumpy() for b in it])
        np.testing.assert_array_equal(data, expected[f"{name}_data"])
    assert mx.io.ImageRecordIter_v1 is mx.io.ImageRecordIter
