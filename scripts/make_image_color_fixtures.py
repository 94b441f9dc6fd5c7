#!/usr/bin/env python3
"""Writes tests/fixtures/image/color.npz with the real MXNet 1.9.1: the
colour operators of ``mx.nd.image`` with their draws pinned
(``min_factor == max_factor``), on a random 5x4x3 image as uint8
(``u8``) and float32 (``f32``), and on a 5x4x1 grey one (``grey``):
``brightness``, ``contrast``, ``hue`` (factor 1.3, 0.6, 0.2) and
``adjust_lighting`` (alpha 0.3, -0.2, 0.1). MXNet's saturation is left
out: its grey level keeps only 0.114 B (see crates/ops/src/image/color.rs).

Usage (from the repository root): .venv-mxnet/bin/python scripts/make_image_color_fixtures.py
"""

import pathlib

import mxnet as mx
import numpy as np


def cases(x):
    img = mx.nd.image
    return {
        "brightness": img.random_brightness(x, min_factor=1.3, max_factor=1.3),
        "contrast": img.random_contrast(x, min_factor=0.6, max_factor=0.6),
        "hue": img.random_hue(x, min_factor=0.2, max_factor=0.2),
        "lighting": img.adjust_lighting(x, alpha=(0.3, -0.2, 0.1)),
    }


def main():
    rng = np.random.RandomState(11)
    rgb = rng.randint(0, 256, (5, 4, 3)).astype(np.uint8)
    grey = rng.randint(0, 256, (5, 4, 1)).astype(np.uint8)
    out = {"rgb": rgb, "grey_in": grey}
    for tag, x in [("u8", mx.nd.array(rgb, dtype="uint8")), ("f32", mx.nd.array(rgb, dtype="float32"))]:
        for name, y in cases(x).items():
            out[f"{tag}_{name}"] = y.asnumpy()
    g = mx.nd.array(grey, dtype="float32")
    out["grey_brightness"] = mx.nd.image.random_brightness(g, min_factor=0.5, max_factor=0.5).asnumpy()
    out["grey_contrast"] = mx.nd.image.random_contrast(g, min_factor=0.6, max_factor=0.6).asnumpy()
    path = pathlib.Path(__file__).resolve().parents[1] / "tests/fixtures/image/color.npz"
    np.savez(path, **out)


if __name__ == "__main__":
    main()
