"""Writes tests/fixtures/resize/mxnet_resize.npz with MXNet 1.9.1 (whose
wheel links OpenCV 3.4.2): random uint8 images resized by
``mx.image.imresize`` with every interpolation (0 nearest, 1 bilinear,
2 bicubic, 3 area, 4 Lanczos) to random sizes (enlarging, shrinking,
whole and odd factors, one-pixel sides, 1, 3 and 4 channels, rows wide
enough for OpenCV's SSE loops and their tails), and random images warped
by ``ImageRecordIter``'s ``cv::warpAffine`` (fixed ``rotate``, scale and
aspect ratio; ``inter_method`` 1 to 4; a random ``fill_value``), which
tests/python/test_resize_exact.py compares with oxnet's bit for bit.

Arrays: ``resize_meta`` (case, interp, new height, new width) with
``resize_{case}_src`` (height, width, channels) and ``resize_{case}_out``;
``warp_meta`` (case, angle, inter_method, fill_value), ``warp_scale``
(scale, aspect ratio, float32) with ``warp_{case}_src`` and
``warp_{case}_out`` (height, width, channels, RGB).

Run from the repository root with the MXNet side environment (and OpenCV,
which MXNet's ``recordio.pack_img`` imports)::

    .venv-mxnet/bin/python -m pip install "opencv-python-headless<4.9"
    .venv-mxnet/bin/python scripts/make_resize_fixture.py

For the larger checks of the Rust crate (its ignored tests ``mxnet_dump``
and ``warp_dump``), ``--dump-resize FILE N`` and ``--dump-warp FILE N``
write N random cases per interpolation (larger sizes too) as raw records
instead::

    .venv-mxnet/bin/python scripts/make_resize_fixture.py --dump-resize /tmp/r.bin 1000
    OXNET_RESIZE_CASES=/tmp/r.bin cargo test --release -p oxnet-io -- --ignored mxnet_dump
    .venv-mxnet/bin/python scripts/make_resize_fixture.py --dump-warp /tmp/w.bin 300
    OXNET_WARP_CASES=/tmp/w.bin cargo test --release -p oxnet-io -- --ignored warp_dump
"""

import pathlib
import struct
import sys
import tempfile

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "resize"
RESIZES_PER_INTERP = 40
WARPS_PER_INTERP = 10


def image(rng, h, w, c):
    """Noise, black and white, or a smooth pattern (which compresses)."""
    kind = rng.integers(0, 3)
    if kind == 0:
        return rng.integers(0, 256, (h, w, c), dtype=np.uint8)
    if kind == 1:
        return (rng.integers(0, 2, (h, w, c)) * 255).astype(np.uint8)
    y, x = np.mgrid[0:h, 0:w]
    pattern = (y * int(rng.integers(1, 9)) + x * int(rng.integers(1, 9)))[:, :, None] + np.arange(c) * 40
    return (pattern % 256).astype(np.uint8)


def sizes(rng, k):
    """(h, w, new h, new w) of the k-th case of an interpolation."""
    kind = k % 8
    if kind == 0:  # whole shrink factors (OpenCV's fast area path; 2 x 2 turns bilinear into area)
        fy, fx = (int(v) for v in rng.integers(1, 5, 2))
        nh, nw = (int(v) for v in rng.integers(1, 12, 2))
        return nh * fy, nw * fx, nh, nw
    if kind == 1:  # whole enlarge factors
        fy, fx = (int(v) for v in rng.integers(1, 5, 2))
        h, w = (int(v) for v in rng.integers(1, 10, 2))
        return h, w, h * fy, w * fx
    if kind == 2:  # one-pixel sides
        h, w, nh, nw = (int(v) for v in rng.integers(1, 16, 4))
        side = k // 8 % 4
        return (1 if side == 0 else h), (1 if side == 1 else w), (1 if side == 2 else nh), (1 if side == 3 else nw)
    if kind == 3:  # wide rows: the SSE loops of the vertical pass and their tails
        return int(rng.integers(2, 8)), int(rng.integers(8, 40)), int(rng.integers(2, 8)), int(rng.integers(16, 72))
    h, w, nh, nw = (int(v) for v in rng.integers(1, 28, 4))
    return h, w, nh, nw


def warp_case(rng, interp, k, folder, small=True):
    """One ImageRecordIter warp: (h, w, angle, fill, scale, ratio, source, MXNet's result)."""
    h, w = (int(v) for v in rng.integers(3, 24 if small else 64, 2))
    c = (1, 3)[k % 2]
    angle, fill = int(rng.integers(1, 360)), int(rng.integers(0, 256))
    scale, ratio = np.float32(1), np.float32(1)
    if k % 3 == 2:
        scale, ratio = np.float32(rng.uniform(0.6, 1.5)), np.float32(rng.uniform(0.7, 1.4))
    # OpenCV's size of floats: truncated
    nw, nh = max(1, int(scale * np.float32(w))), max(1, int(scale * np.float32(h)))
    src = image(rng, h, w, c)
    path = str(folder / "warp.rec")
    rec = mx.recordio.MXRecordIO(path, "w")
    rec.write(mx.recordio.pack_img((0, 0.0, 0, 0), src[:, :, ::-1] if c == 3 else src[:, :, 0], img_fmt=".png"))
    rec.close()
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(c, nh, nw), batch_size=1, rotate=angle,
                               inter_method=interp, fill_value=fill, dtype="uint8", preprocess_threads=1,
                               min_random_scale=float(scale), max_random_scale=float(scale),
                               min_aspect_ratio=float(ratio), max_aspect_ratio=float(ratio))
    out = next(iter(it)).data[0].asnumpy()[0].transpose(1, 2, 0).astype(np.uint8)
    del it
    return angle, fill, scale, ratio, src, out


def dump_resizes(path, n):
    """Raw records for the Rust check: six u32 (h, w, c, new h, new w,
    interp), the source bytes, MXNet's result."""
    rng = np.random.default_rng(1)
    with open(path, "wb") as f:
        for k in range(n):
            for interp in range(5):
                if k % 4 == 0:  # larger images
                    h, w, nh, nw = (int(v) for v in rng.integers(1, 400, 4))
                else:
                    h, w, nh, nw = sizes(rng, k)
                c = (1, 3, 3, 4)[k % 4]
                src = image(rng, h, w, c)
                out = mx.image.imresize(mx.nd.array(src, dtype="uint8"), nw, nh, interp=interp).asnumpy()
                f.write(struct.pack("<6I", h, w, c, nh, nw, interp) + src.tobytes() + out.tobytes())


def dump_warps(path, n):
    """Raw records for the Rust check: six u32 (h, w, c, angle, interp,
    fill) and two f32 (scale, ratio), the source bytes, MXNet's result."""
    rng = np.random.default_rng(2)
    with open(path, "wb") as f, tempfile.TemporaryDirectory() as folder:
        for k in range(n):
            for interp in (1, 2, 3, 4):
                angle, fill, scale, ratio, src, out = warp_case(rng, interp, k, pathlib.Path(folder), small=False)
                h, w, c = src.shape
                f.write(struct.pack("<6I2f", h, w, c, angle, interp, fill, scale, ratio))
                f.write(src.tobytes() + np.ascontiguousarray(out).tobytes())


def resizes(rng, arrays):
    meta = []
    for interp in range(5):
        for k in range(RESIZES_PER_INTERP):
            h, w, nh, nw = sizes(rng, k)
            c = (1, 3, 3, 4)[k % 4]
            src = image(rng, h, w, c)
            out = mx.image.imresize(mx.nd.array(src, dtype="uint8"), nw, nh, interp=interp).asnumpy()
            case = len(meta)
            arrays[f"resize_{case}_src"] = src
            arrays[f"resize_{case}_out"] = out.reshape(nh, nw, c)
            meta.append((case, interp, nh, nw))
    arrays["resize_meta"] = np.array(meta, dtype=np.int32)


def warps(rng, arrays, folder):
    meta, scales = [], []
    for interp in (1, 2, 3, 4):
        for k in range(WARPS_PER_INTERP):
            angle, fill, scale, ratio, src, out = warp_case(rng, interp, k, folder)
            case = len(meta)
            arrays[f"warp_{case}_src"] = src
            arrays[f"warp_{case}_out"] = out
            meta.append((case, angle, interp, fill))
            scales.append((scale, ratio))
    arrays["warp_meta"] = np.array(meta, dtype=np.int32)
    arrays["warp_scale"] = np.array(scales, dtype=np.float32)


def main():
    if len(sys.argv) == 4 and sys.argv[1] in ("--dump-resize", "--dump-warp"):
        (dump_resizes if sys.argv[1] == "--dump-resize" else dump_warps)(sys.argv[2], int(sys.argv[3]))
        return
    rng = np.random.default_rng(20240611)
    arrays = {}
    resizes(rng, arrays)
    with tempfile.TemporaryDirectory() as folder:
        warps(rng, arrays, pathlib.Path(folder))
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "mxnet_resize.npz", **arrays)
    print(f"{len(arrays['resize_meta'])} resizes, {len(arrays['warp_meta'])} warps")


if __name__ == "__main__":
    main()
