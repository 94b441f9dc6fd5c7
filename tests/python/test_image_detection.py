"""``mx.image.detection``: ``ImageDetIter`` batches and the detection
augmenters against MXNet 1.9.1's outputs (tests/fixtures/image/detection,
written by scripts/make_image_detection_fixtures.py), the invariants of the
random augmenters, and the errors for bad labels and arguments."""

import json
import pathlib
import random

import numpy as np
import pytest

import oxnet as mx

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "image" / "detection"
EXPECTED = np.load(FIXTURES / "expected.npz")
CASES = json.loads((FIXTURES / "cases.json").read_text())
# the images and labels of the fixtures (as in the fixture script)
HEADER = [4, 6, 1.0, 2.0]
ROOT = str(FIXTURES / "images")


def source(name):
    """The ImageDetIter arguments reading the fixtures' images one way."""
    if name == "rec_idx":
        return dict(path_imgrec=str(FIXTURES / "det.rec"), path_imgidx=str(FIXTURES / "det.idx"))
    if name == "rec":
        return dict(path_imgrec=str(FIXTURES / "det.rec"))
    return dict(path_imglist=str(FIXTURES / "det.lst"), path_root=ROOT)


def lst_labels():
    """{file name: flat label} from det.lst."""
    out = {}
    for line in (FIXTURES / "det.lst").read_text().splitlines():
        fields = line.split("\t")
        out[fields[-1]] = [float(v) for v in fields[1:-1]]
    return out


def check_epochs(key, it, count):
    """``count`` epochs of ``it`` match MXNet's batches stored under ``key``:
    the same number of batches, pads, labels (to 1e-6) and images (PNG
    decodes and OpenCV's resizes bit for bit, then float32 jitters: to 1e-4)."""
    for e in range(count):
        batches = list(it)
        it.reset()
        assert len(batches) == int(EXPECTED[f"{key}/batches/e{e}"]), f"epoch {e}"
        for b, batch in enumerate(batches):
            where = f"{key} epoch {e} batch {b}"
            assert batch.pad == int(EXPECTED[f"{key}/e{e}/b{b}/pad"]), where
            label = batch.label[0].asnumpy()
            np.testing.assert_allclose(label, EXPECTED[f"{key}/e{e}/b{b}/label"], rtol=0, atol=1e-6, err_msg=where)
            data = batch.data[0].asnumpy()
            np.testing.assert_allclose(data, EXPECTED[f"{key}/e{e}/b{b}/data"], rtol=0, atol=1e-4, err_msg=where)


@pytest.mark.parametrize("name", sorted(CASES))
def test_iterator_matches_mxnet(name):
    case = CASES[name]
    if "seed" in case:
        random.seed(case["seed"])
        np.random.seed(case["seed"])
    kwargs = dict(case["kwargs"])
    # JSON turned the (low, high) tuples into lists, which would mean one cropper per value
    for key in ("aspect_ratio_range", "area_range", "pad_val"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    it = mx.image.ImageDetIter(case["batch_size"], tuple(case["data_shape"]), **source(case["source"]), **kwargs)
    assert it.label_shape == tuple(EXPECTED[f"{name}/label_shape"])
    assert it.provide_label[0][1] == tuple(EXPECTED[f"{name}/provide_label"])
    assert it.provide_label[0][0] == "label" and it.provide_data[0][0] == "data"
    check_epochs(name, it, case["epochs"])


def test_label_padding_and_invalid_boxes():
    # image 2 has an inverted box: dropped; rows past the objects are -1
    it = mx.image.ImageDetIter(5, (3, 8, 8), **source("rec_idx"))
    assert it.label_shape == (4, 6)
    label = it.next().label[0].asnumpy()
    np.testing.assert_allclose(label[2, :2], [[2, 0, 0, 1, 0.5, 0], [4, 0.1, 0.55, 0.45, 0.95, 1]], atol=1e-7)
    assert (label[2, 2:] == -1).all()
    assert (label[1, 1:] == -1).all() and label[1, 0, 0] == 1
    assert (label[3, :, 0] == [0, 1, 2, 7]).all()


def test_imglist_reshape_matches_mxnet():
    labels = lst_labels()
    imglist = [labels[f"img{k}.png"] + [f"img{k}.png"] for k in range(5)]
    augs = [mx.image.DetBorrowAug(mx.image.ForceResizeAug((10, 12), 1)), mx.image.DetBorrowAug(mx.image.CastAug())]
    it = mx.image.ImageDetIter(2, (3, 16, 20), imglist=imglist, path_root=ROOT, aug_list=augs)
    it.reshape(data_shape=(3, 12, 10), label_shape=(6, 6))
    assert it.provide_data[0][1] == tuple(EXPECTED["imglist_reshape/provide_data"])
    assert it.provide_label[0][1] == tuple(EXPECTED["imglist_reshape/provide_label"])
    assert it.data_shape == (3, 12, 10) and it.label_shape == (6, 6)
    check_epochs("imglist_reshape", it, 1)


def test_sync_label_shape_matches_mxnet():
    labels = lst_labels()
    imglist = [labels[f"img{k}.png"] + [f"img{k}.png"] for k in range(5)]
    small = mx.image.ImageDetIter(2, (3, 16, 20), imglist=[imglist[1]], path_root=ROOT)
    assert small.label_shape == tuple(EXPECTED["sync/before"]) == (1, 6)
    big = mx.image.ImageDetIter(2, (3, 16, 20), imglist=imglist, path_root=ROOT)
    assert big.sync_label_shape(small) is small
    assert small.label_shape == tuple(EXPECTED["sync/after"]) == (4, 6)
    assert big.label_shape == (4, 6)
    check_epochs("sync", small, 1)


# ---- augmenters against MXNet ----

def aug_input():
    img = mx.nd.array(EXPECTED["aug/src"], dtype="uint8")
    return img, EXPECTED["aug/label"].copy()


def test_parse_label_matches_mxnet():
    it = mx.image.ImageDetIter(1, (3, 8, 8), **source("rec_idx"))
    labels = lst_labels()
    parsed = it._parse_label(np.array(labels["img3.png"], dtype=np.float32))
    np.testing.assert_array_equal(parsed, EXPECTED["aug/label"])
    # an NDArray label, with the inverted box removed
    parsed = it._parse_label(mx.nd.array(labels["img2.png"]))
    np.testing.assert_array_equal(parsed, EXPECTED["aug/parse_img2"])
    assert parsed.shape == (2, 6)


def test_flip_matches_mxnet():
    img, label = aug_input()
    out, out_label = mx.image.DetHorizontalFlipAug(1)(img, label)
    np.testing.assert_array_equal(out.asnumpy(), EXPECTED["aug/flip/img"])
    np.testing.assert_array_equal(out_label, EXPECTED["aug/flip/label"])
    # in place, as MXNet's, and flipping twice restores it
    assert out_label is label
    back, back_label = mx.image.DetHorizontalFlipAug(1)(out, out_label.copy())
    np.testing.assert_array_equal(back.asnumpy(), EXPECTED["aug/src"])
    np.testing.assert_allclose(back_label, EXPECTED["aug/label"], atol=1e-7)
    same, same_label = mx.image.DetHorizontalFlipAug(0)(img, EXPECTED["aug/label"].copy())
    np.testing.assert_array_equal(same_label, EXPECTED["aug/label"])


CROPS = {
    "default": lambda: mx.image.DetRandomCropAug(),
    "tight": lambda: mx.image.DetRandomCropAug(min_object_covered=0.6, aspect_ratio_range=(0.5, 2.0),
                                               area_range=(0.2, 0.8), min_eject_coverage=0.5, max_attempts=30),
    "fixed_ratio": lambda: mx.image.DetRandomCropAug(aspect_ratio_range=1.0, area_range=(0.1, 0.5)),
}
PADS = {
    "default": lambda: mx.image.DetRandomPadAug(),
    "wide": lambda: mx.image.DetRandomPadAug(aspect_ratio_range=(1.2, 2.0), area_range=(1.5, 4.0), pad_val=(1, 2, 3)),
    "fixed": lambda: mx.image.DetRandomPadAug(aspect_ratio_range=1.0, area_range=(2.0, 2.0), pad_val=(0, 50, 250)),
}


@pytest.mark.parametrize("group,name", [("crop", n) for n in CROPS] + [("pad", n) for n in PADS])
def test_seeded_crop_and_pad_match_mxnet(group, name):
    aug = (CROPS if group == "crop" else PADS)[name]()
    assert json.loads(aug.dumps()) == json.loads(str(EXPECTED[f"aug/{group}/{name}/dumps"]))
    img, label = aug_input()
    changed = 0
    for seed in range(6):
        random.seed(seed)
        out, out_label = aug(img, label.copy())
        key = f"aug/{group}/{name}/{seed}"
        np.testing.assert_array_equal(out.asnumpy(), EXPECTED[f"{key}/img"], err_msg=key)
        np.testing.assert_allclose(out_label, EXPECTED[f"{key}/label"], rtol=0, atol=1e-6, err_msg=key)
        # the same number of draws from Python's random as MXNet's
        assert random.random() == float(EXPECTED[f"{key}/next_random"]), key
        changed += out.shape != img.shape
    assert changed >= 3  # the seeds do crop/pad


def test_multi_crop_matches_mxnet():
    multi = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.7], area_range=(0.1, 1.0),
                                                  aspect_ratio_range=[(0.5, 1.0), (0.75, 1.33), (1.0, 2.0)],
                                                  skip_prob=0.2)
    assert multi.dumps() == json.loads(str(EXPECTED["aug/multi/dumps"]))
    assert [a.min_object_covered for a in multi.aug_list] == [0.1, 0.3, 0.7]
    img, label = aug_input()
    for seed in range(6):
        random.seed(seed)
        out, out_label = multi(img, label.copy())
        np.testing.assert_array_equal(out.asnumpy(), EXPECTED[f"aug/multi/{seed}/img"])
        np.testing.assert_allclose(out_label, EXPECTED[f"aug/multi/{seed}/label"], rtol=0, atol=1e-6)


def test_create_det_augmenter_matches_mxnet():
    augs = mx.image.CreateDetAugmenter((3, 20, 20), resize=24, rand_crop=0.5, rand_pad=0.5, rand_gray=0.1,
                                       rand_mirror=True, mean=True, std=True, brightness=0.1, contrast=0.1,
                                       saturation=0.1, pca_noise=0.1, hue=0.1, inter_method=10,
                                       min_object_covered=[0.3, 0.5], area_range=(0.3, 3.0))
    expected = json.loads(str(EXPECTED["aug/create/dumps"]))
    got = json.loads(json.dumps([a.dumps() for a in augs]))
    assert [g[0] for g in got] == [e[0] for e in expected]
    assert got == expected
    plain = mx.image.CreateDetAugmenter((3, 20, 30))
    assert [type(a.augmenter).__name__ for a in plain] == ["ForceResizeAug", "CastAug"]
    assert plain[0].augmenter.size == (30, 20)


# ---- invariants of the random augmenters ----

def random_label(rng, count):
    xy = rng.uniform(0, 1, (count, 2))
    wh = rng.uniform(0.05, 0.5, (count, 2))
    boxes = np.clip(np.hstack([xy - wh / 2, xy + wh / 2]), 0, 1)
    cls = rng.integers(0, 10, (count, 1))
    return np.hstack([cls, boxes]).astype(np.float32)


def to_original_coordinates(out_label, crop):
    """The boxes of ``out_label`` (normalised to the crop (x, y, w, h) of a
    ``width`` × ``height`` image) normalised to the whole image again."""
    x, y, w, h, width, height = crop
    back = out_label.copy()
    back[:, (1, 3)] = back[:, (1, 3)] * (w / width) + x / width
    back[:, (2, 4)] = back[:, (2, 4)] * (h / height) + y / height
    return back


def test_random_crop_invariants():
    rng = np.random.default_rng(0)
    aug = mx.image.DetRandomCropAug(min_object_covered=0.3, aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 1.0),
                                    min_eject_coverage=0.6)
    img = mx.nd.zeros((40, 50, 3), dtype="uint8")
    cropped = 0
    for trial in range(40):
        label = random_label(rng, 4)
        random.seed(trial)
        proposal = aug._random_crop_proposal(label, 40, 50)
        random.seed(trial)
        out, out_label = aug(img, label.copy())
        if not proposal:
            assert out.shape == img.shape
            np.testing.assert_array_equal(out_label, label)
            continue
        cropped += 1
        x, y, w, h, _ = proposal
        assert out.shape == (h, w, 3)
        assert 0.1 * 2000 <= w * h <= 2000
        boxes = out_label[:, 1:5]
        assert (boxes >= 0).all() and (boxes <= 1).all()
        assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
        # every kept object keeps more than min_eject_coverage of its area
        back = to_original_coordinates(out_label, (x, y, w, h, 50, 40))
        for row in back:
            match = [k for k in range(len(label)) if label[k, 0] == row[0]
                     and label[k, 1] <= row[1] + 1e-5 and row[3] <= label[k, 3] + 1e-5
                     and label[k, 2] <= row[2] + 1e-5 and row[4] <= label[k, 4] + 1e-5]
            assert match
            area = lambda r: (r[3] - r[1]) * (r[4] - r[2])  # noqa: E731
            assert max(area(row) / area(label[k]) for k in match) > 0.6 - 1e-5
        # objects dropped: those whose kept fraction is at most min_eject_coverage
        kept = aug._update_labels(label, (x, y, w, h), 40, 50)
        np.testing.assert_array_equal(kept, out_label)
    assert cropped >= 10


def test_random_crop_ejects_marginal_objects():
    aug = mx.image.DetRandomCropAug(min_eject_coverage=0.6)
    label = np.array([[0, 0.0, 0.0, 0.5, 0.5], [1, 0.4, 0.0, 0.8, 0.5], [2, 0.1, 0.5, 0.3, 0.8],
                      [3, 0.7, 0.7, 0.9, 0.9]], np.float32)
    # crop the left 60% x top 60%: object 0 fully in, object 1 half in, object 2 a third in, object 3 out
    out = aug._update_labels(label, (0, 0, 60, 60), 100, 100)
    np.testing.assert_allclose(out, [[0, 0, 0, 0.5 / 0.6, 0.5 / 0.6]], rtol=1e-6)
    aug = mx.image.DetRandomCropAug(min_eject_coverage=0.4)
    out = aug._update_labels(label, (0, 0, 60, 60), 100, 100)
    assert out[:, 0].tolist() == [0, 1]
    np.testing.assert_allclose(out[1], [1, 0.4 / 0.6, 0, 1, 0.5 / 0.6], rtol=1e-6)
    aug = mx.image.DetRandomCropAug(min_eject_coverage=0.3)
    out = aug._update_labels(label, (0, 0, 60, 60), 100, 100)
    assert out[:, 0].tolist() == [0, 1, 2]
    np.testing.assert_allclose(out[2], [2, 0.1 / 0.6, 0.5 / 0.6, 0.3 / 0.6, 1], rtol=1e-6)
    assert aug._update_labels(label, (85, 0, 10, 10), 100, 100) is None


def test_random_pad_invariants():
    aug = mx.image.DetRandomPadAug(area_range=(1.0, 4.0), pad_val=(9, 8, 7))
    img = mx.nd.array(np.full((20, 30, 3), 200), dtype="uint8")
    label = np.array([[1, 0.0, 0.0, 1.0, 1.0], [2, 0.2, 0.3, 0.4, 0.9]], np.float32)
    padded = 0
    for seed in range(20):
        random.seed(seed)
        out, out_label = aug(img, label.copy())
        if out.shape == img.shape:
            continue
        padded += 1
        h, w, _ = out.shape
        assert h >= 22 and w >= 32 and h * w <= 4 * 600 + 2 * (h + w)
        arr = out.asnumpy()
        # the whole-image box is where the image lies; outside it, pad_val
        x1, y1 = int(round(out_label[0, 1] * w)), int(round(out_label[0, 2] * h))
        x2, y2 = int(round(out_label[0, 3] * w)), int(round(out_label[0, 4] * h))
        assert (x2 - x1, y2 - y1) == (30, 20)
        assert (arr[y1:y2, x1:x2] == 200).all()
        mask = np.ones((h, w), bool)
        mask[y1:y2, x1:x2] = False
        assert (arr[mask] == [9, 8, 7]).all()
        assert (out_label[:, 1:] >= 0).all() and (out_label[:, 1:] <= 1).all()
        # box sizes shrink by the canvas ratio
        np.testing.assert_allclose(out_label[1, 3] - out_label[1, 1], 0.2 * 30 / w, rtol=1e-5)
    assert padded >= 10
    # a scalar pad value fills every channel
    random.seed(0)
    out, _ = mx.image.DetRandomPadAug(pad_val=5)(img, label.copy())
    assert out.shape != img.shape and out.asnumpy()[0, 0].tolist() in ([5, 5, 5], [200, 200, 200])


def test_seeded_iterator_repeats():
    def run(seed):
        random.seed(seed)
        np.random.seed(seed)
        it = mx.image.ImageDetIter(2, (3, 12, 12), shuffle=True, rand_crop=1, rand_pad=0.5, rand_mirror=True,
                                   pca_noise=0.1, **source("rec_idx"))
        return [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]

    first, again, other = run(11), run(11), run(12)
    for (d1, l1), (d2, l2) in zip(first, again):
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_array_equal(l1, l2)
    assert any(not np.array_equal(l1, l2) for (_, l1), (_, l2) in zip(first, other))
    for _, label in first:
        objects = label[label[:, :, 0] >= 0]
        assert (objects[:, 1:5] >= 0).all() and (objects[:, 1:5] <= 1).all()


def test_random_select_skips_and_chooses():
    flip = mx.image.DetHorizontalFlipAug(1)
    never = mx.image.DetRandomSelectAug([flip], skip_prob=1)
    img, label = aug_input()
    _, out = never(img, label.copy())
    np.testing.assert_array_equal(out, label)
    empty = mx.image.DetRandomSelectAug([])
    assert empty.skip_prob == 1
    always = mx.image.DetRandomSelectAug(flip)
    _, out = always(img, label.copy())
    np.testing.assert_allclose(out[:, 1], 1 - label[:, 3], atol=1e-7)


@pytest.mark.parametrize("thickness", [1, 2, 3])
def test_draw_next_matches_mxnet(thickness):
    np.random.seed(thickness)  # the random box colours
    it = mx.image.ImageDetIter(1, (3, 20, 24), mean=True, std=True, **source("rec_idx"))
    drawn = list(it.draw_next(thickness=thickness, mean=True, std=True))
    assert len(drawn) == int(EXPECTED[f"draw/{thickness}/count"]) == 5
    for k, image in enumerate(drawn):
        expected = EXPECTED[f"draw/{thickness}/{k}"]
        assert image.dtype == np.uint8 and image.shape == expected.shape == (20, 24, 3)
        # the boxes: where MXNet's drawing differs from its image without boxes
        boxes = np.abs(expected.astype(int) - EXPECTED[f"draw/plain/{k}"].astype(int)).max(axis=2) > 1
        assert boxes.sum() > 20
        np.testing.assert_array_equal(image[boxes], expected[boxes], err_msg=f"image {k}")
        assert np.abs(image.astype(int) - expected.astype(int)).max() <= 1


def test_draw_next_fixed_colour():
    it = mx.image.ImageDetIter(1, (3, 20, 20), **source("rec_idx"))
    first = next(it.draw_next(color=(255, 0, 0), thickness=1))
    # image 0's first box [0.1, 0.2, 0.5, 0.6] -> pixels (2, 4)-(10, 12); red is (0, 0, 255) in BGR
    assert first[4, 2:11].tolist() == [[0, 0, 255]] * 9
    assert first[4:13, 10].tolist() == [[0, 0, 255]] * 9
    # above the boxes, the force-resized image in BGR order
    raw = mx.image.imresize(mx.image.imread(str(FIXTURES / "images" / "img0.png")), 20, 20, 2).asnumpy()
    assert np.abs(first[:4].astype(int) - raw[:4, :, ::-1].astype(int)).max() <= 1


# ---- errors ----

def test_bad_labels():
    it = mx.image.ImageDetIter(1, (3, 8, 8), **source("rec_idx"))
    with pytest.raises(RuntimeError, match="Label shape is invalid"):
        it._parse_label(np.array([2, 5, 0, 0.1, 0.1], np.float32))
    with pytest.raises(RuntimeError, match="inconsistent with annotation width 5"):
        it._parse_label(np.array([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 1], np.float32))
    with pytest.raises(RuntimeError, match="no valid label"):
        it._parse_label(np.array([2, 5, 0, 0.5, 0.1, 0.2, 0.5], np.float32))
    with pytest.raises(RuntimeError, match="object width 3"):
        it._parse_label(np.array([2, 3, 0, 0.1, 0.1, 0.5, 0.5, 1, 1], np.float32))
    with pytest.raises(RuntimeError, match="shape"):
        it._check_valid_label(np.zeros((2, 4), np.float32))
    with pytest.raises(RuntimeError, match="Invalid label"):
        it._check_valid_label(np.array([[-1, 0.1, 0.1, 0.5, 0.5]], np.float32))
    # a label that is a single number cannot be a detection label
    with pytest.raises(RuntimeError, match="Label shape is invalid"):
        mx.image.ImageDetIter(1, (3, 8, 8), imglist=[[1.0, "img0.png"]], path_root=ROOT)


def test_bad_shapes():
    it = mx.image.ImageDetIter(2, (3, 8, 8), **source("rec_idx"))
    with pytest.raises(ValueError, match="label_shape should have length 2"):
        it.reshape(label_shape=(4,))
    with pytest.raises(ValueError, match="reduce label count from 4 to 2"):
        it.reshape(label_shape=(2, 6))
    with pytest.raises(ValueError, match="object width inconsistent: 6 vs 5"):
        it.reshape(label_shape=(4, 5))
    with pytest.raises(ValueError, match="data_shape"):
        it.reshape(data_shape=(3, 8))
    with pytest.raises(ValueError, match="3 channels"):
        it.reshape(data_shape=(1, 8, 8))
    labels = lst_labels()
    other = mx.image.ImageDetIter(2, (3, 8, 8), imglist=[[2, 5, 0, 0.1, 0.1, 0.5, 0.5, "img0.png"]],
                                  path_root=ROOT)
    with pytest.raises(ValueError, match="object width mismatch"):
        it.sync_label_shape(other)
    with pytest.raises(TypeError, match="ImageDetIter"):
        it.sync_label_shape(object())
    assert labels  # the list was read


@pytest.mark.parametrize("make,match,error", [
    (lambda: mx.image.DetRandomCropAug(area_range=(0.5, 0.1)), "area_range", ValueError),
    (lambda: mx.image.DetRandomCropAug(area_range=(0.1, 0.0)), "area_range", ValueError),
    (lambda: mx.image.DetRandomCropAug(aspect_ratio_range=(0.0, 1.0)), "aspect_ratio_range", ValueError),
    (lambda: mx.image.DetRandomCropAug(aspect_ratio_range="wide"), "aspect_ratio_range", TypeError),
    (lambda: mx.image.DetRandomCropAug(area_range=(0.1, 0.5, 0.9)), "area_range", ValueError),
    (lambda: mx.image.DetRandomCropAug(min_object_covered=None), "min_object_covered", TypeError),
    (lambda: mx.image.DetRandomPadAug(area_range=(0.5, 1.0)), "area_range", ValueError),
    (lambda: mx.image.DetRandomPadAug(aspect_ratio_range=(2.0, 1.0)), "aspect_ratio_range", ValueError),
    (lambda: mx.image.DetRandomPadAug(pad_val="grey"), "pad_val", TypeError),
    (lambda: mx.image.DetHorizontalFlipAug(None), "p", TypeError),
    (lambda: mx.image.DetRandomSelectAug([mx.image.HorizontalFlipAug(1)]), "aug_list", ValueError),
    (lambda: mx.image.DetRandomSelectAug([], skip_prob="x"), "skip_prob", TypeError),
    (lambda: mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(1)), "augmenter", TypeError),
    (lambda: mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.2], max_attempts=[1, 2, 3]),
     "max_attempts", ValueError),
    (lambda: mx.image.CreateDetAugmenter((3, 8, 8), mean=[1, 2]), "mean", ValueError),
    (lambda: mx.image.CreateDetAugmenter((3, 8, 8), std=np.ones(2)), "std", ValueError),
    (lambda: mx.image.CreateDetAugmenter((8, 8)), "data_shape", ValueError),
    (lambda: mx.image.CreateDetAugmenter((3, 8, 8), rand_pad=0.5, area_range=(0.1, 1.0)), "area_range",
     ValueError),
])
def test_bad_augmenter_arguments(make, match, error):
    with pytest.raises(error, match=match):
        make()


def test_module_surface():
    names = ["ImageDetIter", "CreateDetAugmenter", "CreateMultiRandCropAugmenter", "DetAugmenter", "DetBorrowAug",
             "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomCropAug", "DetRandomPadAug"]
    for name in names:
        assert getattr(mx.image, name) is getattr(mx.image.detection, name) is getattr(mx.image.det, name)
    assert issubclass(mx.image.ImageDetIter, mx.image.ImageIter)
    assert mx.image.DetBorrowAug(mx.image.CastAug()).dumps() == ["detborrowaug", '["castaug", {"type": "float32"}]']
