"""``mx.recordio``: MXNet 1.9.1's RecordIO files read (tests/fixtures/image,
written by scripts/make_image_fixtures.py), the same records written
byte for byte, oxnet's files read by MXNet itself (skipped without the side
environment .venv-mxnet), image records, pickling, and errors."""

import pathlib
import pickle
import subprocess

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "image"
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"
MAGIC = (0xCED7230A).to_bytes(4, "little")


@pytest.fixture(scope="module")
def values():
    return np.load(FIXTURES / "values.npz")


def mxnet_reader():
    return mx.recordio.MXIndexedRecordIO(str(FIXTURES / "mxnet.idx"), str(FIXTURES / "mxnet.rec"), "r")


def test_mxnets_file_reads_with_headers_labels_and_payloads():
    rec = mxnet_reader()
    assert rec.keys == [0, 1, 2, 3, 4]
    header, payload = mx.recordio.unpack(rec.read_idx(0))
    assert (header.flag, header.label, header.id, header.id2, payload) == (0, 3.0, 7, 0, b"hello record")
    header, payload = mx.recordio.unpack(rec.read_idx(1))
    assert header.flag == 3 and payload == b"labels"
    np.testing.assert_array_equal(header.label, np.array([1.0, 2.5, -3.0], dtype=np.float32))
    # a record holding the magic number at aligned offsets (split into parts on disk)
    assert rec.read_idx(4) == b"abcd" + MAGIC + b"xyz" + MAGIC + b"!"
    # in order from the start, then None at the end
    rec.reset()
    records = [rec.read() for _ in range(5)]
    assert rec.read() is None
    assert records[0] == rec.read_idx(0)


def test_image_records_decode_as_mxnet_decodes_them(values):
    rec = mxnet_reader()
    header, img = mx.recordio.unpack_img(rec.read_idx(2))
    assert header.label == 1.0 and header.id == 9
    np.testing.assert_array_equal(img, values["unpack_png"])  # PNG: exact, BGR as OpenCV's
    np.testing.assert_array_equal(img[:, :, ::-1], values["rgb"])
    _, img = mx.recordio.unpack_img(rec.read_idx(3))
    assert np.abs(img.astype(int) - values["unpack_jpg"]).max() <= 3  # JPEG decoders round differently
    _, grey = mx.recordio.unpack_img(rec.read_idx(2), iscolor=0)
    assert grey.shape == (24, 31)


def test_the_same_records_write_the_same_bytes(tmp_path):
    rec = mxnet_reader()
    records = [rec.read_idx(k) for k in rec.keys]
    out = mx.recordio.MXIndexedRecordIO(str(tmp_path / "x.idx"), str(tmp_path / "x.rec"), "w")
    for key, record in zip(rec.keys, records):
        out.write_idx(key, record)
    out.close()
    assert (tmp_path / "x.rec").read_bytes() == (FIXTURES / "mxnet.rec").read_bytes()
    assert (tmp_path / "x.idx").read_text() == (FIXTURES / "mxnet.idx").read_text()
    # and pack builds the records MXNet built
    assert mx.recordio.pack(mx.recordio.IRHeader(0, 3.0, 7, 0), b"hello record") == records[0]
    assert mx.recordio.pack(mx.recordio.IRHeader(0, [1.0, 2.5, -3.0], 8, 0), b"labels") == records[1]


def test_pack_img_round_trips_png_exactly(tmp_path, values):
    bgr = values["rgb"][:, :, ::-1]
    record = mx.recordio.pack_img((0, [4.0, 5.0], 3, 0), bgr, img_fmt=".png")
    header, img = mx.recordio.unpack_img(record)
    np.testing.assert_array_equal(header.label, [4.0, 5.0])
    np.testing.assert_array_equal(img, bgr)
    header, img = mx.recordio.unpack_img(mx.recordio.pack_img((0, 1.0, 3, 0), bgr, quality=95))
    assert np.abs(img.astype(int) - bgr).max() <= 12


def test_mxnet_reads_oxnets_files(tmp_path, values):
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    rgb = values["rgb"]
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "o.idx"), str(tmp_path / "o.rec"), "w")
    rec.write_idx(5, mx.recordio.pack((0, [1.5, -2.0], 11, 12), b"payload" + MAGIC + b"tail"))
    rec.write_idx(6, mx.recordio.pack((0, 0.0, 13, 0), mx.recordio.pack_img((0, 0, 0, 0), rgb[:, :, ::-1],
                                                                             img_fmt=".png")[24:]))
    rec.close()
    script = f"""
import mxnet as mx, numpy as np
r = mx.recordio.MXIndexedRecordIO({str(tmp_path / 'o.idx')!r}, {str(tmp_path / 'o.rec')!r}, 'r')
h, s = mx.recordio.unpack(r.read_idx(5))
assert list(h.label) == [1.5, -2.0] and (h.id, h.id2) == (11, 12), h
assert s == b'payload' + (0xCED7230A).to_bytes(4, 'little') + b'tail', s
img = mx.image.imdecode(mx.recordio.unpack(r.read_idx(6))[1]).asnumpy()
np.save({str(tmp_path / 'img.npy')!r}, img)
print('ok')
"""
    result = subprocess.run([str(MXNET_PYTHON), "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]
    np.testing.assert_array_equal(np.load(tmp_path / "img.npy"), rgb)


def test_readers_pickle_and_reopen(tmp_path):
    path = tmp_path / "p.rec"
    writer = mx.recordio.MXRecordIO(str(path), "w")
    for k in range(3):
        writer.write(b"record %d" % k)
    writer.close()
    reader = mx.recordio.MXRecordIO(str(path), "r")
    assert reader.read() == b"record 0"
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read() == b"record 0"  # reopened at the start
    assert [clone.read(), clone.read(), clone.read()] == [b"record 1", b"record 2", None]


def test_bad_flags_files_and_records_are_errors(tmp_path):
    with pytest.raises(ValueError, match="Invalid flag x"):
        mx.recordio.MXRecordIO(str(tmp_path / "a.rec"), "x")
    with pytest.raises(MXNetError, match="missing.rec"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    corrupt = tmp_path / "corrupt.rec"
    data = bytearray((FIXTURES / "mxnet.rec").read_bytes())
    data[44:48] = b"\xff\xff\xff\xff"  # the second record's magic number
    corrupt.write_bytes(bytes(data))
    reader = mx.recordio.MXRecordIO(str(corrupt), "r")
    with pytest.raises(MXNetError, match=r"corrupt.rec.*offset"):
        while reader.read() is not None:
            pass
    writer = mx.recordio.MXRecordIO(str(tmp_path / "w.rec"), "w")
    with pytest.raises(AssertionError):
        writer.read()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"late")
    with pytest.raises(ValueError, match="shorter than its 24-byte header"):
        mx.recordio.unpack(b"tiny")
    with pytest.raises(KeyError, match="99"):
        mxnet_reader().read_idx(99)
    with pytest.raises(MXNetError, match="cannot decode"):
        mx.recordio.unpack_img(mx.recordio.pack((0, 0.0, 0, 0), b"not an image"))



# Run in a child interpreter: a deadlock between the GIL and the file's lock
# stops every Python thread, the one joining with a timeout included, so
# only a process limit can end it.
SHARED_READER_SCRIPT = r"""
import random, sys, threading
import oxnet as mx

idx, rec, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(7)
records = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 3000))) for _ in range(count)]
reader = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
wrong, errors = [], []

def work(seed):
    picks = random.Random(seed)
    try:
        for _ in range(400):
            key = picks.randrange(count)
            if reader.read_idx(key) != records[key]:
                wrong.append(key)
    except Exception as e:
        errors.append(repr(e))

threads = [threading.Thread(target=work, args=(seed,), daemon=True) for seed in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=60)
alive = sum(t.is_alive() for t in threads)
print("alive", alive, "wrong", len(wrong), "errors", errors, flush=True)
"""


def test_threads_sharing_an_indexed_reader_get_their_records(tmp_path):
    # One reader shared by several threads (a DataLoader with thread_pool=True
    # over an ImageRecordDataset): each read_idx returns exactly its record,
    # and no two threads deadlock (none waits for the file's lock holding the
    # GIL, nor for the GIL holding the lock).
    import random
    import sys

    count = 120
    rng = random.Random(7)
    records = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 3000))) for _ in range(count)]
    idx, rec = str(tmp_path / "t.idx"), str(tmp_path / "t.rec")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for key, record in enumerate(records):
        writer.write_idx(key, record)
    writer.close()
    try:
        result = subprocess.run(
            [sys.executable, "-c", SHARED_READER_SCRIPT, idx, rec, str(count)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("threads reading one record file deadlocked (the child was killed after 120 s)")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["alive", "0", "wrong", "0", "errors", "[]"], result.stdout + result.stderr[-2000:]
