"""``mx.io.MNISTIter`` and ``mx.io.CSVIter`` against MXNet 1.9.1's on the
same files (the side environment .venv-mxnet; skipped without it):
batches, labels and pads over several epochs; and errors."""

import json
import pathlib
import struct
import subprocess

import numpy as np
import pytest

import oxnet as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"

RUN = """
import json, sys
import {engine} as mx
cases = json.loads(sys.argv[1])
out = []
for kind, kwargs in cases:
    it = getattr(mx.io, kind)(**kwargs)
    epochs = []
    for _ in range(3):
        epochs.append([[b.pad, b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist()] for b in it])
        it.reset()
    out.append(epochs)
print(json.dumps(out))
"""


def run(engine, python, cases):
    for _ in range(3):
        result = subprocess.run([python, "-c", RUN.format(engine=engine), json.dumps(cases)], capture_output=True,
                                text=True, timeout=300, cwd=str(ROOT))
        # MXNet 1.9.1's own iterators crash now and then (a double free at
        # exit of its C++ reader); a run killed by a signal is tried again
        if engine == "oxnet" or result.returncode >= 0:
            break
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def write_files(folder):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (10, 4, 5), dtype=np.uint8)
    labels = rng.integers(0, 10, 10, dtype=np.uint8)
    (folder / "img").write_bytes(struct.pack(">IIII", 2051, 10, 4, 5) + images.tobytes())
    (folder / "lab").write_bytes(struct.pack(">II", 2049, 10) + labels.tobytes())
    np.savetxt(folder / "data.csv", rng.uniform(-1, 1, (7, 6)), delimiter=",", fmt="%.6f")
    np.savetxt(folder / "label.csv", rng.integers(0, 3, (7, 2)), delimiter=",", fmt="%d")
    return images, labels


def test_the_iterators_match_mxnet(tmp_path):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    write_files(tmp_path)
    img, lab, data, label = (str(tmp_path / n) for n in ("img", "lab", "data.csv", "label.csv"))
    cases = [
        ["MNISTIter", dict(image=img, label=lab, batch_size=3, shuffle=False, silent=True)],
        ["MNISTIter", dict(image=img, label=lab, batch_size=2, shuffle=False, flat=True, num_parts=2, part_index=1,
                           silent=True)],
        ["CSVIter", dict(data_csv=data, data_shape=(2, 3), batch_size=3)],
        ["CSVIter", dict(data_csv=data, data_shape=(6,), label_csv=label, label_shape=(2,), batch_size=4)],
    ]
    ours = run("oxnet", str(ROOT / ".venv" / "bin" / "python"), cases)
    theirs = run("mxnet", str(MXNET_PYTHON), cases)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        for epoch, (ea, eb) in enumerate(zip(a, b)):
            assert len(ea) == len(eb), (k, epoch)
            for (pa, da, la), (pb, db, lb) in zip(ea, eb):
                assert pa == pb, (k, epoch)
                np.testing.assert_allclose(da, db, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(la, lb)


def test_by_hand_and_errors(tmp_path):
    images, labels = write_files(tmp_path)
    it = mx.io.MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"), batch_size=4, shuffle=True,
                         seed=3, silent=True)
    batches = list(it)
    assert len(batches) == 2  # the last, partial batch is dropped
    seen = np.concatenate([b.label[0].asnumpy() for b in batches])
    assert sorted(seen.tolist()) != [] and batches[0].data[0].shape == (4, 1, 4, 5)
    assert np.all(np.isin(seen, labels))
    np.testing.assert_allclose(mx.io.MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lab"),
                                               batch_size=10, shuffle=False, silent=True).next().data[0].asnumpy(),
                               images[:, None].astype(np.float32) / 256)
    csv = mx.io.CSVIter(data_csv=str(tmp_path / "data.csv"), data_shape=(6,), batch_size=4, round_batch=False)
    last = list(csv)[-1]
    assert last.pad == 1 and not last.data[0].asnumpy()[3].any()
    with pytest.raises(ValueError, match="needs 5"):
        mx.io.CSVIter(data_csv=str(tmp_path / "data.csv"), data_shape=(5,), batch_size=2)
    with pytest.raises(OSError, match="nothing"):
        mx.io.MNISTIter(image=str(tmp_path / "nothing"), label=str(tmp_path / "lab"))
    with pytest.raises(ValueError, match="not an IDX image file"):
        mx.io.MNISTIter(image=str(tmp_path / "lab"), label=str(tmp_path / "lab"))


def test_libsvm_iter_says_it_is_not_provided():
    with pytest.raises(mx.MXNetError, match="LibSVMIter is not provided.*sparse"):
        mx.io.LibSVMIter(data_libsvm="train.libsvm", data_shape=(10,), batch_size=2)


@pytest.mark.parametrize("dtype,entry", [("int32", 200000001), ("int64", 2147483648), ("float32", 1)])
def test_csv_values_keep_their_dtype_and_the_current_batch_is_served(tmp_path, dtype, entry):
    # MXNet's native iterators keep the batch next() gave: getdata/getlabel are
    # its arrays (one NDArray each), getpad its padding
    data, label = tmp_path / "d.csv", tmp_path / "l.csv"
    data.write_text("".join(",".join([str(entry)] * 4) + "\n" for _ in range(5)))
    label.write_text("".join(f"{i}\n" for i in range(5)))
    it = mx.io.CSVIter(data_csv=str(data), data_shape=(2, 2), label_csv=str(label), batch_size=2, dtype=dtype)
    with pytest.raises(mx.MXNetError, match="no current batch"):
        it.getdata()
    pads = []
    for batch in it:
        assert it.getdata() is batch.data[0] and it.getlabel() is batch.label[0]
        assert it.getdata().dtype == np.dtype(dtype)
        np.testing.assert_array_equal(it.getdata().asnumpy(), np.full((2, 2, 2), entry, dtype=dtype))
        pads.append(it.getpad())
    assert pads == [0, 0, 1]
