"""Writes MXNet 1.9.1's ``mx.io.ImageDetRecordIter`` batches for the
detection fixtures (``tests/fixtures/image/detection/det.rec`` and
``det.lst``, made by ``scripts/make_image_detection_fixtures.py``) into
``tests/fixtures/image/detection/det_record_iter.npz``, with the cases'
arguments in ``det_record_iter.json``.

Every case is deterministic: resize modes and interpolations, the shorter
side resized first, mirroring with ``rand_mirror_prob=1``, label padding,
image lists, normalisation, grey images, parts, and random crops and pads
whose draws cannot change the result (constraints no crop meets, a padding
scale below MXNet's 1.05 threshold). Random settings are tested by their
invariants in ``tests/python/test_image_det_record_iter.py``.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_det_record_fixtures.py
"""

import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "image" / "detection"

# name -> (keyword arguments besides path_imgrec; paths relative to OUT)
CASES = {
    "force": dict(data_shape=(3, 16, 16), batch_size=2),
    "force_cubic_resize": dict(data_shape=(3, 14, 18), batch_size=2, resize=12, inter_method=2),
    "force_nearest": dict(data_shape=(3, 24, 20), batch_size=3, inter_method=0),
    "force_area": dict(data_shape=(3, 9, 11), batch_size=3, inter_method=3),
    "shrink": dict(data_shape=(3, 16, 16), batch_size=2, resize_mode="shrink", mean_r=10.0, std_g=2.0,
                   scale=0.5),
    "shrink_large": dict(data_shape=(3, 40, 40), batch_size=5, resize_mode="shrink"),
    "fit": dict(data_shape=(3, 32, 40), batch_size=2, resize_mode="fit", inter_method=1),
    "mirror": dict(data_shape=(3, 16, 16), batch_size=2, rand_mirror_prob=1.0),
    "label_pad": dict(data_shape=(3, 16, 16), batch_size=4, label_pad_width=40, label_pad_value=-7.0),
    "imglist": dict(data_shape=(3, 16, 16), batch_size=2, path_imglist="det.lst"),
    "grey": dict(data_shape=(1, 16, 16), batch_size=2, mean_r=100.0, std_r=50.0),
    "normalise": dict(data_shape=(3, 12, 12), batch_size=5, mean_r=123.0, mean_g=117.0, mean_b=104.0,
                      std_r=58.0, std_g=57.0, std_b=57.5, scale=2.0),
    "failed_crop_and_pad": dict(data_shape=(3, 16, 16), batch_size=2, rand_crop_prob=1.0,
                                min_crop_overlaps=(1.0,), max_crop_trials=(10,), rand_pad_prob=1.0,
                                max_pad_scale=1.04),
    "part": dict(data_shape=(3, 16, 16), batch_size=2, num_parts=2, part_index=1),
    "no_round_batch": dict(data_shape=(3, 16, 16), batch_size=2, round_batch=False),
}


def run(kwargs):
    """[(data, label, pad)] of one epoch, and the provided label shape."""
    kwargs = dict(kwargs)
    if "path_imglist" in kwargs:
        kwargs["path_imglist"] = str(OUT / kwargs["path_imglist"])
    it = mx.io.ImageDetRecordIter(path_imgrec=str(OUT / "det.rec"), preprocess_threads=1, verbose=False,
                                  **kwargs)
    batches = [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
    return batches, it.provide_label[0].shape


def main():
    values, cases = {}, {}
    for name, kwargs in CASES.items():
        batches, label_shape = run(kwargs)
        cases[name] = dict(kwargs=kwargs, batches=len(batches), label_shape=list(label_shape))
        for b, (data, label, pad) in enumerate(batches):
            values[f"{name}/b{b}/data"] = data
            values[f"{name}/b{b}/label"] = label
            values[f"{name}/b{b}/pad"] = np.array(pad)
    np.savez_compressed(OUT / "det_record_iter.npz", **values)
    (OUT / "det_record_iter.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
