"""Writes tests/fixtures/image/ with MXNet 1.9.1: a RecordIO file and its
index (``mxnet.rec``, ``mxnet.idx``) holding plain records, a label array,
PNG and JPEG image records and a record with the magic number inside, and
``values.npz``: the test image and what MXNet's ``mx.image`` and
``mx.recordio`` make of it (decodes, resizes with every interpolation,
``resize_short``, borders); and for ``mx.io.ImageRecordIter``'s
augmentations ``aug.rec`` (PNG images of several sizes), ``aug.lst`` (an
image list with two labels each), ``aug_mean.nd`` (the mean image MXNet
computes and saves for ``mean_img``) and ``aug_batches.npz``: MXNet's
batches for each case of ``AUG_CASES`` (the deterministic settings of the
augmenter: fixed rotations, scales and aspect ratios, size limits,
padding, fixed crop sizes, output types, image lists and mean images).

Run from the repository root with the MXNet side environment (and OpenCV,
which MXNet's ``recordio.pack_img`` imports)::

    .venv-mxnet/bin/python -m pip install "opencv-python-headless<4.9"
    .venv-mxnet/bin/python scripts/make_image_fixtures.py
"""

import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "image"
MAGIC = (0xCED7230A).to_bytes(4, "little")


def test_image(h=24, w=31):
    """A smooth RGB pattern (JPEG keeps it closely)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / 5.0)
    g = 128 + 90 * np.cos(y / 4.0)
    b = 60 + 3 * x + 2 * y
    return np.clip(np.stack([r, g, b], axis=2), 0, 255).astype(np.uint8)


# ImageRecordIter settings whose results MXNet fixes (no random draw); each
# runs on aug.rec with batch_size 4 (7 images: the second batch is padded)
AUG_CASES = {
    "rotate": dict(data_shape=(3, 16, 16), rotate=30, fill_value=40),
    "rotate_grey": dict(data_shape=(1, 16, 16), rotate=90, fill_value=200),
    "rotate_cubic": dict(data_shape=(3, 16, 16), rotate=20, inter_method=2),
    "scale_aspect": dict(data_shape=(3, 16, 16), rotate=45, max_random_scale=0.7, min_random_scale=0.7,
                         max_aspect_ratio=1.5, min_aspect_ratio=1.5, fill_value=0),
    "img_size": dict(data_shape=(3, 16, 16), rotate=10, max_img_size=20, min_img_size=18, mirror=True),
    "pad": dict(data_shape=(3, 30, 30), pad=4, fill_value=7),
    "resize_rotate_pad": dict(data_shape=(3, 20, 20), resize=20, rotate=15, pad=2, fill_value=99,
                              mean_r=120, std_r=50, scale=0.5),
    "crop_size": dict(data_shape=(3, 16, 16), min_crop_size=20, max_crop_size=20),
    "uint8": dict(data_shape=(3, 16, 16), dtype="uint8", mirror=True, mean_r=100, scale=3),
    "int8": dict(data_shape=(3, 16, 16), dtype="int8", mean_r=100, mean_g=120.6, mean_b=90),
    "imglist": dict(data_shape=(3, 16, 16), label_width=2, path_imglist="aug.lst"),
    "mean_img": dict(data_shape=(3, 16, 16), mean_img="aug_mean.nd", std_g=2.0),
}


def aug_image(rng, h, w):
    """A pattern with smooth parts and sharp edges (interpolation shows)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    f = rng.uniform(2, 6, 3)
    img = rng.uniform(60, 190, 3) + 60 * np.stack([np.sin(x / f[0]), np.cos(y / f[1]), np.sin((x - y) / f[2])], 2)
    img[(x // 5 + y // 7) % 2 == 0] += 40
    return np.clip(img, 0, 255).astype(np.uint8)


def augment_fixtures():
    """aug.rec, aug.lst, aug_mean.nd and MXNet's batches of AUG_CASES."""
    rng = np.random.default_rng(5)
    rec = mx.recordio.MXRecordIO(str(OUT / "aug.rec"), "w")
    lines = []
    for k in range(7):
        h, w = int(rng.integers(24, 41)), int(rng.integers(24, 41))
        rec.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, float(k), 100 + k, 0), aug_image(rng, h, w),
                                       img_fmt=".png"))
        lines.append(f"{100 + k}\t{k * 1.5}\t{-k}\timg{k}.png\n")
    rec.close()
    (OUT / "aug.lst").write_text("".join(lines))
    mean_file = OUT / "aug_mean.nd"
    if mean_file.exists():
        mean_file.unlink()  # MXNet computes and saves it in the "mean_img" case
    batches = {}
    for name, case in AUG_CASES.items():
        kwargs = dict(case)
        for key in ("path_imglist", "mean_img"):
            if key in kwargs:
                kwargs[key] = str(OUT / kwargs[key])
        it = mx.io.ImageRecordIter(path_imgrec=str(OUT / "aug.rec"), batch_size=4, preprocess_threads=1, **kwargs)
        got = list(it)
        batches[f"{name}_data"] = np.concatenate([b.data[0].asnumpy() for b in got])
        batches[f"{name}_label"] = np.concatenate([b.label[0].asnumpy() for b in got])
        batches[f"{name}_pad"] = np.array([b.pad for b in got])
    np.savez_compressed(OUT / "aug_batches.npz", **batches)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rgb = test_image()
    bgr = rgb[:, :, ::-1].copy()
    rec = mx.recordio.MXIndexedRecordIO(str(OUT / "mxnet.idx"), str(OUT / "mxnet.rec"), "w")
    records = [
        mx.recordio.pack(mx.recordio.IRHeader(0, 3.0, 7, 0), b"hello record"),
        mx.recordio.pack(mx.recordio.IRHeader(0, [1.0, 2.5, -3.0], 8, 0), b"labels"),
        mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 9, 0), bgr, img_fmt=".png"),
        mx.recordio.pack_img(mx.recordio.IRHeader(0, 2.0, 10, 0), bgr, quality=90, img_fmt=".jpg"),
        b"abcd" + MAGIC + b"xyz" + MAGIC + b"!",
    ]
    for key, record in enumerate(records):
        rec.write_idx(key, record)
    rec.close()

    values = {"rgb": rgb}
    reader = mx.recordio.MXIndexedRecordIO(str(OUT / "mxnet.idx"), str(OUT / "mxnet.rec"), "r")
    for key, name in ((2, "png"), (3, "jpg")):
        _, img = mx.recordio.unpack_img(reader.read_idx(key))
        values[f"unpack_{name}"] = img
        _, payload = mx.recordio.unpack(reader.read_idx(key))
        values[f"imdecode_{name}"] = mx.image.imdecode(payload).asnumpy()
        values[f"imdecode_{name}_grey"] = mx.image.imdecode(payload, flag=0).asnumpy()
        values[f"imdecode_{name}_bgr"] = mx.image.imdecode(payload, to_rgb=0).asnumpy()
    reader.close()
    src = mx.nd.array(rgb, dtype="uint8")
    for interp in range(5):
        for w, h in ((17, 11), (50, 40), (31, 12)):
            values[f"resize_{interp}_{w}x{h}"] = mx.image.imresize(src, w, h, interp=interp).asnumpy()
    values["resize_short_16"] = mx.image.resize_short(src, 16).asnumpy()
    for kind in range(5):
        values[f"border_{kind}"] = mx.image.copyMakeBorder(src, 2, 3, 4, 1, type=kind, value=9).asnumpy()
    np.savez_compressed(OUT / "values.npz", **values)
    augment_fixtures()
    print("wrote", OUT)


if __name__ == "__main__":
    main()
