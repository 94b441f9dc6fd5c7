"""Writes tests/fixtures/image/ with MXNet 1.9.1: a RecordIO file and its
index (``mxnet.rec``, ``mxnet.idx``) holding plain records, a label array,
PNG and JPEG image records and a record with the magic number inside, and
``values.npz``: the test image and what MXNet's ``mx.image`` and
``mx.recordio`` make of it (decodes, resizes with every interpolation,
``resize_short``, borders).

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
    print("wrote", OUT)


if __name__ == "__main__":
    main()
