"""mx.gluon.utils: splitting batches over devices, global-norm clipping, SHA-1 checks."""

import hashlib
import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.gluon import utils


def test_split_data_even_and_uneven():
    data = nd.array(np.arange(24, dtype=np.float32).reshape(6, 4))
    parts = utils.split_data(data, 3)
    assert len(parts) == 3
    for i, part in enumerate(parts):
        np.testing.assert_array_equal(part.asnumpy(), data.asnumpy()[2 * i:2 * i + 2])
    uneven = utils.split_data(nd.array(np.arange(7)), 3, even_split=False)
    assert [p.asnumpy().tolist() for p in uneven] == [[0, 1, 2], [3, 4], [5, 6]]
    columns = utils.split_data(data, 2, batch_axis=1)
    np.testing.assert_array_equal(columns[1].asnumpy(), data.asnumpy()[:, 2:])
    assert len(utils.split_data(data, 1)) == 1
    with pytest.raises(ValueError, match="cannot be split evenly into 4 slices"):
        utils.split_data(data, 4)
    with pytest.raises(ValueError, match="batch_axis 2 is out of range"):
        utils.split_data(data, 2, batch_axis=2)


def test_split_and_load_puts_pieces_on_contexts():
    pieces = utils.split_and_load(np.arange(8, dtype=np.float32).reshape(4, 2), [mx.cpu(0), mx.cpu(0)])
    assert [p.asnumpy().tolist() for p in pieces] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    assert all(isinstance(p, nd.NDArray) and p.context == mx.cpu(0) for p in pieces)
    whole = utils.split_and_load(nd.ones((3, 2)), [mx.cpu()])
    assert len(whole) == 1 and whole[0].shape == (3, 2)
    with pytest.raises(ValueError, match="ctx_list is empty"):
        utils.split_and_load(nd.ones((3, 2)), [])


def test_clip_global_norm_rescales_in_place():
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    b_np = np.array([3.0, 4.0], dtype=np.float32)
    a, b = nd.array(a_np), nd.array(b_np)
    norm = np.sqrt((a_np ** 2).sum() + (b_np ** 2).sum())
    total = utils.clip_global_norm([a, b], 1.0)
    assert isinstance(total, float) and total == pytest.approx(norm, rel=1e-6)
    scale = 1.0 / (norm + 1e-8)
    np.testing.assert_allclose(a.asnumpy(), a_np * scale, rtol=1e-6)
    np.testing.assert_allclose(b.asnumpy(), b_np * scale, rtol=1e-6)
    small = nd.array([0.3, 0.4])
    returned = utils.clip_global_norm([small], 1.0, check_isfinite=False)
    assert isinstance(returned, nd.NDArray) and returned.shape == (1,)
    assert returned.asnumpy()[0] == pytest.approx(0.5)
    np.testing.assert_allclose(small.asnumpy(), [0.3, 0.4], rtol=1e-7)  # under the limit: unchanged
    doubles = nd.array([6.0, 8.0], dtype="float64")
    assert utils.clip_global_norm([doubles], 5.0) == pytest.approx(10.0)
    assert doubles.dtype == np.float64
    np.testing.assert_allclose(doubles.asnumpy(), [3.0, 4.0], rtol=1e-8)


def test_clip_global_norm_warns_on_nan_and_rejects_nothing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        total = utils.clip_global_norm([nd.array([np.nan, 1.0])], 1.0)
    assert np.isnan(total)
    assert any("NaN or infinite" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="no arrays"):
        utils.clip_global_norm([], 1.0)


def test_check_sha1(tmp_path):
    path = tmp_path / "blob.bin"
    content = bytes(range(256)) * 5000  # more than one read chunk
    path.write_bytes(content)
    assert utils.check_sha1(str(path), hashlib.sha1(content).hexdigest())
    assert not utils.check_sha1(str(path), "0" * 40)


def test_download_fetches_checks_and_reports(tmp_path):
    import pathlib

    from oxnet.gluon.utils import check_sha1, download

    src = tmp_path / "remote" / "weights.bin"
    src.parent.mkdir()
    src.write_bytes(b"oxnet" * 1000)
    sha1 = hashlib.sha1(src.read_bytes()).hexdigest()
    url = pathlib.Path(src).as_uri()
    dest = tmp_path / "cache"
    dest.mkdir()
    got = download(url, path=str(dest), sha1_hash=sha1)
    assert got == str(dest / "weights.bin") and check_sha1(got, sha1)
    # present and matching: not fetched again (the source may be gone)
    src.unlink()
    assert download(url, path=str(dest), sha1_hash=sha1) == got
    # a missing source is an error naming the URL, after the retries, leaving no partial file
    with pytest.raises(RuntimeError, match="could not fetch .*weights.bin after 2 attempt"):
        download(url, path=str(tmp_path / "other.bin"), retries=1)
    assert not list(tmp_path.glob("other.bin*"))
    # a hash mismatch is reported (MXNet's UserWarning)
    src.write_bytes(b"changed")
    with pytest.raises(RuntimeError, match="hash does not match"):
        download(url, path=str(tmp_path / "third.bin"), sha1_hash=sha1, retries=0)


def test_shape_is_known():
    from oxnet.gluon.utils import shape_is_known

    assert shape_is_known((2, 3)) and not shape_is_known((2, 0)) and not shape_is_known(None)
    assert not shape_is_known(())
    with mx.np_shape(True):
        assert shape_is_known(()) and shape_is_known((2, 0)) and not shape_is_known((2, -1))
