#!/usr/bin/env python3
"""Writes tests/fixtures/image/imrotate.npz with the real MXNet 1.9.1:
``mx.image.imrotate`` of a random 3x7x9 float32 image by 30° (``r30``),
-45° zoomed in (``rm45_in``), 60° zoomed out (``r60_out``) and 90°
(``r90``), and of a 2x2x6x5 batch by 15° and -120° zoomed out
(``batch``); the inputs as ``img`` and ``batchin``.

Usage (from the repository root): .venv-mxnet/bin/python scripts/make_imrotate_fixtures.py
"""

import pathlib

import mxnet as mx
import numpy as np

CASES = [("r30", 30.0, {}), ("rm45_in", -45.0, {"zoom_in": True}), ("r60_out", 60.0, {"zoom_out": True}),
         ("r90", 90.0, {})]


def main():
    rng = np.random.RandomState(5)
    img = rng.uniform(0, 1, (3, 7, 9)).astype(np.float32)
    batch = rng.uniform(0, 1, (2, 2, 6, 5)).astype(np.float32)
    out = {name: mx.image.imrotate(mx.nd.array(img), angle, **kw).asnumpy() for name, angle, kw in CASES}
    out["batch"] = mx.image.imrotate(mx.nd.array(batch), mx.nd.array([15.0, -120.0]), zoom_out=True).asnumpy()
    path = pathlib.Path(__file__).resolve().parents[1] / "tests/fixtures/image/imrotate.npz"
    np.savez(path, img=img, batchin=batch, **out)


if __name__ == "__main__":
    main()
