"""``python -m oxnet.tools.im2rec``: image lists from folders (the same
lines, shuffle and splits as MXNet's tool) and RecordIO files from lists,
read back as datasets; broken images skipped."""

import numpy as np

import oxnet as mx
from oxnet.gluon.data import vision
from oxnet.tools import im2rec


def make_folder(root):
    rng = np.random.default_rng(0)
    imgs = {}
    for cls, n in (("birds", 3), ("cats", 2)):
        (root / cls).mkdir(parents=True)
        for k in range(n):
            img = rng.integers(0, 256, (10 + k, 14, 3), dtype=np.uint8)
            payload = mx.recordio.unpack(mx.recordio.pack_img((0, 0, 0, 0), img[:, :, ::-1], img_fmt=".png"))[1]
            (root / cls / f"{k}.png").write_bytes(payload)
            imgs[f"{cls}/{k}.png"] = img
    (root / "cats" / "readme.txt").write_text("not listed")
    return imgs


def test_lists_records_and_datasets(tmp_path, capsys):
    imgs = make_folder(tmp_path / "images")
    prefix = str(tmp_path / "data")
    assert im2rec.main(["--list", "--recursive", "--no-shuffle", prefix, str(tmp_path / "images")]) == 0
    lines = (tmp_path / "data.lst").read_text().splitlines()
    assert lines == ["0\t0.000000\tbirds/0.png", "1\t0.000000\tbirds/1.png", "2\t0.000000\tbirds/2.png",
                     "3\t1.000000\tcats/0.png", "4\t1.000000\tcats/1.png"]
    assert "birds 0" in capsys.readouterr().out
    assert im2rec.main([prefix, str(tmp_path / "images"), "--encoding", ".png", "--num-thread", "2"]) == 0
    ds = vision.ImageRecordDataset(str(tmp_path / "data.rec"))
    assert len(ds) == 5
    for k, line in enumerate(lines):
        img, label = ds[k]
        _, lab, path = line.split("\t")
        assert label == float(lab)
        np.testing.assert_array_equal(img.asnumpy(), imgs[path])
    # resized (shorter side 6) and centre-cropped, as JPEG
    im2rec.main([prefix, str(tmp_path / "images"), "--resize", "6", "--center-crop", "--quality", "90"])
    img, _ = vision.ImageRecordDataset(str(tmp_path / "data.rec"))[4]
    assert img.shape == (6, 6, 3)


def test_shuffled_splits_and_broken_images(tmp_path, capsys):
    make_folder(tmp_path / "images")
    prefix = str(tmp_path / "split")
    im2rec.main(["--list", "--recursive", "--train-ratio", "0.6", "--test-ratio", "0.2", prefix,
                 str(tmp_path / "images")])
    train = (tmp_path / "split_train.lst").read_text().splitlines()
    test = (tmp_path / "split_test.lst").read_text().splitlines()
    val = (tmp_path / "split_val.lst").read_text().splitlines()
    assert (len(train), len(test), len(val)) == (3, 1, 1)
    # MXNet's tool shuffles with random.seed(100) before splitting
    import random
    order = list(range(5))
    random.seed(100)
    random.shuffle(order)
    assert [int(x.split("\t")[0]) for x in test + train + val] == order
    (tmp_path / "images" / "cats" / "1.png").write_bytes(b"broken")
    (tmp_path / "broken.lst").write_text("0\t0\tbirds/0.png\n1\t1\tcats/1.png\nbad line\n")
    im2rec.main([str(tmp_path / "broken"), str(tmp_path / "images")])
    out = capsys.readouterr().out
    assert "cats/1.png" in out and "three parts" in out
    assert len(mx.recordio.MXIndexedRecordIO(str(tmp_path / "broken.idx"), str(tmp_path / "broken.rec"), "r").keys) == 1
