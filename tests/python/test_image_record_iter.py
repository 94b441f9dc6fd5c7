"""``mx.io.ImageRecordIter``: batches, labels, pads and parts against MXNet
1.9.1's ``ImageRecordIter`` on the same file (the side environment
.venv-mxnet; skipped without it); seeded randomness independent of the
number of threads; shuffling; errors."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]
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
    tol = 1.01 * kwargs.get("scale", 1.0) / min(kwargs.get(k, 1.0) for k in ("std_r", "std_g", "std_b"))
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
    with pytest.raises(NotImplementedError, match="max_rotate_angle"):
        mx.io.ImageRecordIter(path, (3, 8, 8), 2, max_rotate_angle=10)
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
