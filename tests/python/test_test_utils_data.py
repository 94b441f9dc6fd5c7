"""mx.test_utils' data-set and model downloaders (MXNet 1.9.1's files, folders
and return values) on small synthetic files served through file:// URLs or
put in place beforehand; nothing here touches the network."""

import bz2
import gzip
import importlib.util
import os
import struct
import zipfile

import numpy as np
import pytest

import oxnet as mx

TU = mx.test_utils


def idx_images(images):
    n, rows, cols = images.shape
    return struct.pack(">IIII", 2051, n, rows, cols) + images.astype(np.uint8).tobytes()


def idx_labels(labels):
    return struct.pack(">II", 2049, len(labels)) + labels.astype(np.uint8).tobytes()


def synthetic_mnist(n, offset):
    """n images of 28x28 with distinct pixel patterns, labels 0..9 repeating."""
    k = np.arange(n * 28 * 28).reshape(n, 28, 28)
    images = ((k * 7 + offset) % 256).astype(np.uint8)
    labels = ((np.arange(n) + offset) % 10).astype(np.uint8)
    return images, labels


TRAIN = synthetic_mnist(6, 3)
TEST = synthetic_mnist(4, 5)
UBYTE = {
    "train-images-idx3-ubyte": idx_images(TRAIN[0]),
    "train-labels-idx1-ubyte": idx_labels(TRAIN[1]),
    "t10k-images-idx3-ubyte": idx_images(TEST[0]),
    "t10k-labels-idx1-ubyte": idx_labels(TEST[1]),
}


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A fresh current folder, and a mirror folder beside it."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (tmp_path / "mirror").mkdir()
    monkeypatch.chdir(cwd)
    return cwd, tmp_path / "mirror"


@pytest.fixture
def no_network(monkeypatch):
    """Any download attempt fails the test."""
    calls = []

    def refuse(url, *args, **kwargs):
        calls.append(url)
        raise AssertionError(f"unexpected download of {url}")

    monkeypatch.setattr(mx.gluon.utils, "download", refuse)
    return calls


def write_zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_get_mnist_from_a_mirror_then_offline(work, monkeypatch):
    cwd, mirror = work
    for name, data in UBYTE.items():
        (mirror / (name + ".gz")).write_bytes(gzip.compress(data))
    monkeypatch.setattr(TU, "_MNIST_URL", mirror.as_uri() + "/")
    got = TU.get_mnist()
    assert sorted(got) == ["test_data", "test_label", "train_data", "train_label"]
    assert got["train_data"].shape == (6, 1, 28, 28) and got["train_data"].dtype == np.float32
    assert got["test_data"].shape == (4, 1, 28, 28)
    assert got["train_label"].dtype == np.int8 and got["test_label"].shape == (4,)
    np.testing.assert_allclose(got["train_data"][:, 0], TRAIN[0] / 255.0, rtol=1e-6)
    np.testing.assert_allclose(got["test_data"][:, 0], TEST[0] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(got["train_label"], [3, 4, 5, 6, 7, 8])
    np.testing.assert_array_equal(got["test_label"], [5, 6, 7, 8])
    # MXNet keeps the downloads in the current folder
    assert sorted(os.listdir(cwd)) == sorted(n + ".gz" for n in UBYTE)
    # the mirror gone and downloads refused: the files in place are used
    for f in mirror.iterdir():
        f.unlink()
    monkeypatch.setattr(mx.gluon.utils, "download", lambda *a, **k: pytest.fail("downloaded"))
    again = TU.get_mnist()
    np.testing.assert_array_equal(again["test_data"], got["test_data"])


def test_missing_files_and_no_network_name_the_url_and_the_files(work, monkeypatch):
    cwd, mirror = work
    url = (mirror / "nowhere").as_uri() + "/"
    monkeypatch.setattr(TU, "_MNIST_URL", url)
    monkeypatch.setattr(TU, "_MNIST_UBYTE_URL", url + "mnist.zip")
    monkeypatch.setattr(TU, "_DATA_RETRIES", 0)
    with pytest.raises(OSError) as err:
        TU.get_mnist()
    assert url + "train-labels-idx1-ubyte.gz" in str(err.value)
    assert "train-labels-idx1-ubyte.gz" in str(err.value)
    with pytest.raises(OSError) as err:
        TU.get_mnist_ubyte()
    msg = str(err.value)
    assert url + "mnist.zip" in msg
    for name in UBYTE:
        assert os.path.join("data", name) in msg
    assert not os.path.exists(os.path.join("data", "mnist.zip"))  # no partial file left


def test_get_mnist_ubyte_and_iterators(work, monkeypatch):
    cwd, mirror = work
    write_zip(mirror / "mnist.zip", UBYTE)
    monkeypatch.setattr(TU, "_MNIST_UBYTE_URL", (mirror / "mnist.zip").as_uri())
    assert TU.get_mnist_ubyte() is None
    for name, data in UBYTE.items():
        assert (cwd / "data" / name).read_bytes() == data
    assert (cwd / "data" / "mnist.zip").exists()

    # MNISTIter shuffles by default (MXNet's too), the validation iterator included: the test
    # labels 5..8 are distinct, so each one says which image must come with it
    train, val = TU.get_mnist_iterator(batch_size=2, input_shape=(1, 28, 28))
    seen = []
    for batch in val:
        assert batch.data[0].shape == (2, 1, 28, 28) and batch.data[0].dtype == np.float32
        for image, label in zip(batch.data[0].asnumpy(), batch.label[0].asnumpy()):
            np.testing.assert_allclose(image[0], TEST[0][int(label) - 5] / 256.0, rtol=1e-6)
            seen.append(int(label))
    assert sorted(seen) == [5, 6, 7, 8]
    labels = [b.label[0].asnumpy() for b in train]
    assert len(labels) == 3
    assert sorted(np.concatenate(labels).tolist()) == [3, 4, 5, 6, 7, 8]  # shuffled, every example once

    train, val = TU.get_mnist_iterator(batch_size=2, input_shape=(784,), num_parts=2, part_index=1)
    batch = val.next()  # the second half of the test set: examples 2 and 3
    assert batch.data[0].shape == (2, 784)
    order = np.argsort(batch.label[0].asnumpy())
    np.testing.assert_array_equal(batch.label[0].asnumpy()[order], [7, 8])
    np.testing.assert_allclose(batch.data[0].asnumpy()[order], TEST[0][2:].reshape(2, 784) / 256.0, rtol=1e-6)
    with pytest.raises(StopIteration):
        val.next()


def test_files_in_place_are_not_fetched(work, no_network):
    cwd, _ = work
    (cwd / "data" / "cifar").mkdir(parents=True)
    for name, data in UBYTE.items():
        (cwd / "data" / name).write_bytes(data)
    for name in ("train.rec", "test.rec", "train.lst", "test.lst"):
        (cwd / "data" / "cifar" / name).write_bytes(b"x")
    (cwd / "data" / "mnist.pkl.gz").write_bytes(b"pkl")
    assert TU.get_mnist_ubyte() is None
    assert TU.get_cifar10() is None
    assert TU.get_mnist_pkl() is None
    _, val = TU.get_mnist_iterator(4, (1, 28, 28))
    assert sorted(val.next().label[0].asnumpy().tolist()) == [5, 6, 7, 8]
    (cwd / "models").mkdir()
    for suffix in ("-symbol.json", "-0000.params"):
        (cwd / "models" / ("imagenet1k-resnet-18" + suffix)).write_text("model")
    assert TU.download_model("imagenet1k-resnet-18", dst_dir="models") == \
        (os.path.join("models", "imagenet1k-resnet-18"), 0)
    (cwd / "z").mkdir()
    (cwd / "z" / "a.zip").write_bytes(b"not even a zip: it is not opened again")
    assert TU.get_zip_data("z", "http://example.invalid/a.zip", "a.zip") is None
    (cwd / "z" / "out.txt").write_text("done")
    assert TU.get_bz2_data("z", "out.txt", "http://example.invalid/out.txt.bz2", "out.txt.bz2") is None
    assert no_network == []
    assert sorted(os.listdir(cwd / "data")) == sorted(list(UBYTE) + ["cifar", "mnist.pkl.gz"])


def test_get_cifar10_and_mnist_pkl(work, monkeypatch):
    cwd, mirror = work
    members = {f"cifar/{n}": f"content of {n}".encode() for n in ("train.rec", "test.rec", "train.lst",
                                                                    "test.lst")}
    write_zip(mirror / "cifar10.zip", members)
    (mirror / "mnist.pkl.gz").write_bytes(gzip.compress(b"pickled"))
    monkeypatch.setattr(TU, "_CIFAR10_URL", (mirror / "cifar10.zip").as_uri())
    monkeypatch.setattr(TU, "_MNIST_PKL_URL", (mirror / "mnist.pkl.gz").as_uri())
    assert TU.get_cifar10() is None
    for name, data in members.items():
        assert (cwd / "data" / name).read_bytes() == data
    assert TU.get_mnist_pkl() is None
    assert gzip.decompress((cwd / "data" / "mnist.pkl.gz").read_bytes()) == b"pickled"
    # an archive without the expected files is reported
    write_zip(mirror / "bad.zip", {"cifar/train.rec": b"1"})
    monkeypatch.setattr(TU, "_CIFAR10_URL", (mirror / "bad.zip").as_uri())
    (cwd / "data" / "cifar" / "test.lst").unlink()
    (cwd / "data" / "cifar10.zip").unlink()
    with pytest.raises(OSError, match="test.lst"):
        TU.get_cifar10()


def test_get_zip_data_and_get_bz2_data(work):
    cwd, mirror = work
    write_zip(mirror / "ml.zip", {"ml/ratings.dat": b"1::2::5\n", "ml/movies.dat": b"2::Film\n"})
    TU.get_zip_data("zdir", (mirror / "ml.zip").as_uri(), "ml.zip")
    assert (cwd / "zdir" / "ml" / "ratings.dat").read_bytes() == b"1::2::5\n"
    assert (cwd / "zdir" / "ml" / "movies.dat").read_bytes() == b"2::Film\n"
    assert (cwd / "zdir" / "ml.zip").exists()  # kept: it marks the data as in place
    # the saved archive takes data_origin_name even when the URL's file is named otherwise
    TU.get_zip_data("other", (mirror / "ml.zip").as_uri(), "renamed.zip")
    assert (cwd / "other" / "renamed.zip").exists() and (cwd / "other" / "ml" / "movies.dat").exists()

    payload = b"".join(b"%d 1:0.5 7:1.25\n" % i for i in range(200))
    (mirror / "kdda.t.bz2").write_bytes(bz2.compress(payload))
    TU.get_bz2_data("bdir", "kdda.t", (mirror / "kdda.t.bz2").as_uri(), "kdda.t.bz2")
    assert (cwd / "bdir" / "kdda.t").read_bytes() == payload
    assert sorted(os.listdir(cwd / "bdir")) == ["kdda.t"]  # the compressed file is removed
    with pytest.raises(OSError, match="nothing.bz2"):
        TU.get_bz2_data("bdir", "x.t", (mirror / "nothing.bz2").as_uri(), "x.t.bz2")


def test_download_model(work, monkeypatch):
    cwd, mirror = work
    (mirror / "m-symbol.json").write_text('{"nodes": []}')
    (mirror / "m.params").write_bytes(b"\x01\x02")
    meta = {"tiny": {"symbol": (mirror / "m-symbol.json").as_uri(), "params": (mirror / "m.params").as_uri()}}
    prefix, epoch = TU.download_model("tiny", dst_dir="zoo", meta_info=meta)
    assert (prefix, epoch) == (os.path.join("zoo", "tiny"), 0)
    assert (cwd / "zoo" / "tiny-symbol.json").read_text() == '{"nodes": []}'
    assert (cwd / "zoo" / "tiny-0000.params").read_bytes() == b"\x01\x02"
    assert TU.download_model("not-a-model", meta_info=meta) == (None, 0)
    # the default table, under MXNet's folder layout, from a mirror of the base URL
    folder = mirror / "imagenet" / "resnet" / "18-layers"
    folder.mkdir(parents=True)
    (folder / "resnet-18-symbol.json").write_text("sym18")
    (folder / "resnet-18-0000.params").write_text("par18")
    monkeypatch.setattr(TU, "_MODEL_BASE_URL", mirror.as_uri() + "/")
    assert TU.download_model("imagenet1k-resnet-18") == (os.path.join("./", "imagenet1k-resnet-18"), 0)
    assert (cwd / "imagenet1k-resnet-18-symbol.json").read_text() == "sym18"
    assert (cwd / "imagenet1k-resnet-18-0000.params").read_text() == "par18"
    assert TU.download_model("resnet-18") == (None, 0)
    monkeypatch.setattr(TU, "_DATA_RETRIES", 0)
    with pytest.raises(OSError, match="resnet-50-symbol.json"):
        TU.download_model("imagenet1k-resnet-50")


def test_get_im2rec_path(tmp_path, monkeypatch):
    monkeypatch.delenv("MXNET_HOME", raising=False)
    path = TU.get_im2rec_path()
    assert os.path.isfile(path)
    assert os.path.samefile(path, importlib.util.find_spec("oxnet.tools.im2rec").origin)
    # a home folder with its own tools/im2rec.py is looked at first, as in MXNet
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "im2rec.py").write_text("# tool\n")
    monkeypatch.setenv("MY_HOME", str(tmp_path))
    assert TU.get_im2rec_path("MY_HOME") == os.path.join(str(tmp_path), "tools", "im2rec.py")
    monkeypatch.setenv("MY_HOME", str(tmp_path / "tools"))  # no tool there: oxnet's own
    assert os.path.samefile(TU.get_im2rec_path("MY_HOME"), path)


def test_im2rec_path_runs_as_a_script():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, mx.test_utils.get_im2rec_path(), "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "--pack-label" in out.stdout
