"""Writes tests/fixtures/image/detection/ with MXNet 1.9.1's
``mx.image.detection``: a few small PNG images with box labels, stored
three ways (``det.rec`` with its index ``det.idx``; ``det.lst`` naming the
files under ``images/``), and ``expected.npz``: the batches MXNet's
``ImageDetIter`` gives for them (no random augmentation, and seeded
random crops, pads and flips, whose draws come from Python's ``random``),
and the outputs of the detection augmenters on one image with seeds.

(``scripts/make_detection_fixtures.py`` is the detection *operators'*
fixture script; this one is for the image iterator.)

Run from the repository root with the MXNet side environment (and OpenCV,
which MXNet's ``recordio.pack_img`` imports)::

    .venv-mxnet/bin/python scripts/make_image_detection_fixtures.py
"""

import json
import pathlib
import random

import cv2
import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "image" / "detection"

# (height, width) of each image, and its objects [cls, xmin, ymin, xmax, ymax, difficult]
SIZES = [(20, 28), (24, 18), (16, 16), (30, 22), (18, 26)]
OBJECTS = [
    [[0, 0.1, 0.2, 0.5, 0.6, 0], [3, 0.4, 0.3, 0.95, 0.9, 1]],
    [[1, 0.25, 0.25, 0.75, 0.75, 0]],
    # the second box is inverted (xmax < xmin): ImageDetIter drops it
    [[2, 0.0, 0.0, 1.0, 0.5, 0], [5, 0.8, 0.1, 0.2, 0.4, 0], [4, 0.1, 0.55, 0.45, 0.95, 1]],
    [[0, 0.05, 0.05, 0.3, 0.4, 0], [1, 0.35, 0.1, 0.6, 0.5, 0], [2, 0.6, 0.5, 0.9, 0.95, 0],
     [7, 0.2, 0.6, 0.5, 0.9, 1]],
    [[6, 0.3, 0.1, 0.7, 0.8, 0]],
]
HEADER = [4, 6, 1.0, 2.0]  # header width 4: two extra header values


def make_image(k, h, w):
    """A smooth RGB pattern, different for each k."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 90 * np.sin(x / (2.0 + k))
    g = 120 + 80 * np.cos(y / (3.0 + k))
    b = 40 + 6 * x + 4 * y + 10 * k
    return np.clip(np.stack([r, g, b], axis=2), 0, 255).astype(np.uint8)


def label_of(k):
    """The flat detection label of image k."""
    return HEADER + [v for obj in OBJECTS[k] for v in obj]


def write_inputs():
    """The images as PNG files, det.lst, and det.rec/det.idx."""
    (OUT / "images").mkdir(parents=True, exist_ok=True)
    rec = mx.recordio.MXIndexedRecordIO(str(OUT / "det.idx"), str(OUT / "det.rec"), "w")
    lines = []
    for k, (h, w) in enumerate(SIZES):
        rgb = make_image(k, h, w)
        name = f"img{k}.png"
        cv2.imwrite(str(OUT / "images" / name), rgb[:, :, ::-1])
        header = mx.recordio.IRHeader(0, label_of(k), k, 0)
        rec.write_idx(k, mx.recordio.pack_img(header, rgb[:, :, ::-1], img_fmt=".png"))
        lines.append("\t".join([str(k)] + [repr(float(v)) for v in label_of(k)] + [name]))
    rec.close()
    (OUT / "det.lst").write_text("\n".join(lines) + "\n")


def epochs(it, count):
    """[(data, label, pad) of every batch] for ``count`` epochs."""
    out = []
    for _ in range(count):
        out.append([(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it])
        it.reset()
    return out


def store(values, key, batches):
    """Stores an epoch list as key/e{epoch}/b{batch}/{data,label,pad}."""
    for e, epoch in enumerate(batches):
        values[f"{key}/batches/e{e}"] = np.array(len(epoch))
        for b, (data, label, pad) in enumerate(epoch):
            values[f"{key}/e{e}/b{b}/data"] = data
            values[f"{key}/e{e}/b{b}/label"] = label
            values[f"{key}/e{e}/b{b}/pad"] = np.array(pad)


def iterator_cases(values):
    """ImageDetIter outputs; the arguments of each case are stored beside them
    (as JSON) for the test to rebuild the same iterator."""
    rec, idx, lst = str(OUT / "det.rec"), str(OUT / "det.idx"), str(OUT / "det.lst")
    root = str(OUT / "images")
    cases = {
        # RecordIO with index, plain force-resize
        "rec_idx_pad": dict(source="rec_idx", batch_size=2, data_shape=(3, 16, 20), kwargs={}, epochs=2),
        # RecordIO in file order, resize of the shorter side, ImageNet normalisation
        "rec_discard": dict(source="rec", batch_size=2, data_shape=(3, 12, 14),
                            kwargs=dict(resize=18, mean=True, std=True, last_batch_handle="discard"), epochs=2),
        # image list on disk, bilinear, carry over
        "lst_roll_over": dict(source="lst", batch_size=3, data_shape=(3, 10, 12),
                              kwargs=dict(inter_method=1, last_batch_handle="roll_over"), epochs=3),
        # seeded random crops, flips and pads (Python's random), nearest-neighbour resizes
        "rec_idx_random": dict(source="rec_idx", batch_size=2, data_shape=(3, 16, 16), seed=7,
                               kwargs=dict(rand_crop=0.8, rand_pad=0.6, rand_mirror=True, inter_method=0,
                                           min_object_covered=[0.1, 0.5], area_range=(0.3, 2.5),
                                           min_eject_coverage=0.4, pad_val=(10, 200, 60)),
                               epochs=3),
        # seeded shuffle and crops from the list, colour and grey jitters
        "lst_shuffle_jitter": dict(source="lst", batch_size=2, data_shape=(3, 14, 14), seed=3,
                                   kwargs=dict(shuffle=True, rand_crop=1, rand_mirror=True, brightness=0.2,
                                               contrast=0.2, saturation=0.2, rand_gray=0.3, inter_method=1,
                                               aspect_ratio_range=(0.5, 2.0)),
                                   epochs=2),
    }
    for name, case in cases.items():
        source = case["source"]
        if source == "rec_idx":
            where = dict(path_imgrec=rec, path_imgidx=idx)
        elif source == "rec":
            where = dict(path_imgrec=rec)
        else:
            where = dict(path_imglist=lst, path_root=root)
        if "seed" in case:
            random.seed(case["seed"])
            np.random.seed(case["seed"])
        it = mx.image.ImageDetIter(case["batch_size"], case["data_shape"], **where, **case["kwargs"])
        values[f"{name}/label_shape"] = np.array(it.label_shape)
        values[f"{name}/provide_label"] = np.array(it.provide_label[0][1])
        store(values, name, epochs(it, case["epochs"]))
    (OUT / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")

    # imglist with its own augmenters (which make the new data shape: reshape
    # does not change the augmenters), reshaped to more objects; sync_label_shape
    imglist = [label_of(k) + [f"img{k}.png"] for k in range(len(SIZES))]
    augs = [mx.image.DetBorrowAug(mx.image.ForceResizeAug((10, 12), 1)), mx.image.DetBorrowAug(mx.image.CastAug())]
    it = mx.image.ImageDetIter(2, (3, 16, 20), imglist=imglist, path_root=root, aug_list=augs)
    it.reshape(data_shape=(3, 12, 10), label_shape=(6, 6))
    values["imglist_reshape/provide_data"] = np.array(it.provide_data[0][1])
    values["imglist_reshape/provide_label"] = np.array(it.provide_label[0][1])
    store(values, "imglist_reshape", epochs(it, 1))
    small = mx.image.ImageDetIter(2, (3, 16, 20), imglist=[label_of(1) + ["img1.png"]], path_root=root)
    values["sync/before"] = np.array(small.label_shape)
    it2 = mx.image.ImageDetIter(2, (3, 16, 20), imglist=imglist, path_root=root)
    small = it2.sync_label_shape(small)
    values["sync/after"] = np.array(small.label_shape)
    store(values, "sync", epochs(small, 1))

    # draw_next: random box colours (numpy's generator), several line widths
    for thickness in (1, 2, 3):
        np.random.seed(thickness)
        it = mx.image.ImageDetIter(1, (3, 20, 24), mean=True, std=True, path_imgrec=rec, path_imgidx=idx)
        drawn = list(it.draw_next(thickness=thickness, mean=True, std=True))
        values[f"draw/{thickness}/count"] = np.array(len(drawn))
        for k, image in enumerate(drawn):
            values[f"draw/{thickness}/{k}"] = image
    it = mx.image.ImageDetIter(1, (3, 20, 24), path_imgrec=rec, path_imgidx=idx)
    for k, image in enumerate(it.draw_next(thickness=0)):
        values[f"draw/plain/{k}"] = image


def augmenter_cases(values):
    """Each detection augmenter on image 3 and its label (parsed), seeded."""
    it = mx.image.ImageDetIter(1, (3, 30, 22), path_imgrec=str(OUT / "det.rec"), path_imgidx=str(OUT / "det.idx"))
    img = mx.image.imdecode(open(OUT / "images" / "img3.png", "rb").read())
    label = it._parse_label(np.array(label_of(3), dtype=np.float32))
    values["aug/src"] = img.asnumpy()
    values["aug/label"] = label
    values["aug/parse_img2"] = it._parse_label(np.array(label_of(2), dtype=np.float32))

    flip = mx.image.DetHorizontalFlipAug(1)
    out, out_label = flip(img, label.copy())
    values["aug/flip/img"], values["aug/flip/label"] = out.asnumpy(), out_label

    crops = {
        "default": mx.image.DetRandomCropAug(),
        "tight": mx.image.DetRandomCropAug(min_object_covered=0.6, aspect_ratio_range=(0.5, 2.0),
                                           area_range=(0.2, 0.8), min_eject_coverage=0.5, max_attempts=30),
        "fixed_ratio": mx.image.DetRandomCropAug(aspect_ratio_range=1.0, area_range=(0.1, 0.5)),
    }
    pads = {
        "default": mx.image.DetRandomPadAug(),
        "wide": mx.image.DetRandomPadAug(aspect_ratio_range=(1.2, 2.0), area_range=(1.5, 4.0),
                                         pad_val=(1, 2, 3)),
        "fixed": mx.image.DetRandomPadAug(aspect_ratio_range=1.0, area_range=(2.0, 2.0), pad_val=(0, 50, 250)),
    }
    for group, augs in (("crop", crops), ("pad", pads)):
        for name, aug in augs.items():
            values[f"aug/{group}/{name}/dumps"] = np.array(aug.dumps())
            for seed in range(6):
                random.seed(seed)
                out, out_label = aug(img, label.copy())
                values[f"aug/{group}/{name}/{seed}/img"] = out.asnumpy()
                values[f"aug/{group}/{name}/{seed}/label"] = out_label
                values[f"aug/{group}/{name}/{seed}/next_random"] = np.array(random.random())

    multi = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.7], area_range=(0.1, 1.0),
                                                  aspect_ratio_range=[(0.5, 1.0), (0.75, 1.33), (1.0, 2.0)],
                                                  skip_prob=0.2)
    values["aug/multi/dumps"] = np.array(json.dumps(multi.dumps()))
    for seed in range(6):
        random.seed(seed)
        out, out_label = multi(img, label.copy())
        values[f"aug/multi/{seed}/img"] = out.asnumpy()
        values[f"aug/multi/{seed}/label"] = out_label

    augs = mx.image.CreateDetAugmenter((3, 20, 20), resize=24, rand_crop=0.5, rand_pad=0.5, rand_gray=0.1,
                                       rand_mirror=True, mean=True, std=True, brightness=0.1, contrast=0.1,
                                       saturation=0.1, pca_noise=0.1, hue=0.1, inter_method=10,
                                       min_object_covered=[0.3, 0.5], area_range=(0.3, 3.0))
    values["aug/create/dumps"] = np.array(json.dumps([a.dumps() for a in augs]))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    write_inputs()
    values = {}
    iterator_cases(values)
    augmenter_cases(values)
    np.savez_compressed(OUT / "expected.npz", **values)
    print(f"wrote {len(values)} arrays to {OUT / 'expected.npz'}")


if __name__ == "__main__":
    main()
