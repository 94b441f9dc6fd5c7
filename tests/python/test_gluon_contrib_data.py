"""mx.gluon.contrib.data: IntervalSampler and the WikiText datasets read from
small token files written into tmp_path.

Expected values are those MXNet 1.9.1 gives on the same files (with its
SHA-1 check of the real WikiText files switched off); tests whose name starts
with ``test_oxnet_`` cover what oxnet does differently (no downloads, checked
arguments)."""

import collections
import os
import zipfile

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from oxnet.base import MXNetError
from oxnet.contrib import text
from oxnet.gluon.contrib.data import IntervalSampler
from oxnet.gluon.contrib.data.text import WikiText2, WikiText103

TRAIN = " = Title = \n\n The cat sat on the mat . \n The dog\tran . \n"
VALID = " the cat ran away \n"


def _corpus(root, train=TRAIN, valid=VALID):
    os.makedirs(root, exist_ok=True)
    for name, content in (("wiki.train.tokens", train), ("wiki.valid.tokens", valid)):
        with open(os.path.join(root, name), "w", encoding="utf8") as fout:
            fout.write(content)
    return str(root)


# ----------------------------------------------------------------------------
# IntervalSampler
# ----------------------------------------------------------------------------

def test_interval_sampler():
    s = IntervalSampler(13, interval=3)
    assert list(s) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert len(s) == 13
    s = IntervalSampler(13, interval=3, rollover=False)
    assert list(s) == [0, 3, 6, 9, 12]
    assert len(s) == 13  # MXNet reports `length` either way
    assert list(IntervalSampler(7, 7)) == [0, 1, 2, 3, 4, 5, 6]
    assert list(IntervalSampler(7, 7, rollover=False)) == [0]
    assert list(IntervalSampler(5, 1)) == [0, 1, 2, 3, 4]
    assert list(IntervalSampler(6, 4)) == [0, 4, 1, 5, 2, 3]
    assert list(s) == list(s)  # iterable again
    assert isinstance(s, gluon.data.Sampler)
    with pytest.raises(AssertionError):
        IntervalSampler(2, 3)


def test_interval_sampler_in_dataloader():
    data = gluon.data.SimpleDataset(list(range(6)))
    loader = gluon.data.DataLoader(data, batch_size=2, sampler=IntervalSampler(6, 2))
    batches = [b.asnumpy().tolist() for b in loader]
    assert batches == [[0, 2], [4, 1], [3, 5]]


def test_oxnet_interval_sampler_errors():
    with pytest.raises(MXNetError, match="Interval 3 must be smaller than or equal to length 2"):
        IntervalSampler(2, 3)
    with pytest.raises(ValueError, match="interval"):
        IntervalSampler(5, 0)
    with pytest.raises(TypeError, match="length"):
        IntervalSampler(5.0, 1)
    assert mx.gluon.contrib.data.IntervalSampler is IntervalSampler


# ----------------------------------------------------------------------------
# WikiText2 / WikiText103
# ----------------------------------------------------------------------------

VOCAB = ["<unk>", "<eos>", ".", "=", "The", "Title", "cat", "dog\tran", "mat", "on", "sat", "the"]
DATA = [[3, 5, 3, 1], [4, 6, 10, 9], [11, 8, 2, 1], [4, 0, 0, 2]]
LABEL = [[5, 3, 1, 4], [6, 10, 9, 11], [8, 2, 1, 4], [0, 0, 2, 1]]


def test_wikitext2_train(tmp_path):
    root = _corpus(tmp_path / "wt2")
    d = WikiText2(root=root, seq_len=4)
    assert len(d) == 4
    # count_tokens_from_str splits at ' ' and '\n' only: 'dog\tran' is one token of the
    # vocabulary, while the lines are split at any white space (so it is unknown there)
    assert d.vocabulary.idx_to_token == VOCAB
    assert d.vocabulary.reserved_tokens == ["<eos>"]
    assert d.frequencies == collections.Counter(
        {"=": 2, "Title": 1, "The": 2, "cat": 1, "sat": 1, "on": 1, "the": 1, "mat": 1, ".": 2,
         "dog\tran": 1})
    assert d._data.dtype == np.int32 and d._data.shape == (4, 4)
    np.testing.assert_array_equal(d._data.asnumpy(), DATA)
    np.testing.assert_array_equal(d._label.asnumpy(), LABEL)
    x, y = d[1]
    assert x.dtype == np.int32 and x.shape == (4,)
    np.testing.assert_array_equal(x.asnumpy(), DATA[1])
    np.testing.assert_array_equal(y.asnumpy(), LABEL[1])
    x, y = d[-1]
    np.testing.assert_array_equal(x.asnumpy(), DATA[3])
    # 17 data tokens: seq_len 5 keeps 15 in 3 samples
    d5 = WikiText2(root=root, seq_len=5)
    assert len(d5) == 3
    flat = [3, 5, 3, 1, 4, 6, 10, 9, 11, 8, 2, 1, 4, 0, 0, 2, 1]
    np.testing.assert_array_equal(d5._data.asnumpy().ravel(), flat[:15])
    np.testing.assert_array_equal(d5._label.asnumpy().ravel(), flat[1:16])


def test_wikitext2_shared_vocab_and_short_segment(tmp_path):
    root = _corpus(tmp_path / "wt2")
    train = WikiText2(root=root, seq_len=4)
    valid = WikiText2(root=root, segment="validation", vocab=train.vocabulary, seq_len=3)
    assert valid.vocabulary is train.vocabulary
    assert valid.frequencies == collections.Counter({"the": 1, "cat": 1, "ran": 1, "away": 1})
    assert len(valid) == 1
    np.testing.assert_array_equal(valid._data.asnumpy(), [[11, 6, 0]])
    np.testing.assert_array_equal(valid._label.asnumpy(), [[6, 0, 0]])
    # fewer tokens than seq_len: no samples
    empty = WikiText103(root=root, segment="validation", seq_len=30)
    assert len(empty) == 0 and empty._data.shape == (0, 30)
    assert empty.vocabulary.idx_to_token == ["<unk>", "<eos>", "away", "cat", "ran", "the"]


def test_wikitext_in_dataloader(tmp_path):
    root = _corpus(tmp_path / "wt103")
    d = WikiText103(root=root, seq_len=4)
    loader = gluon.data.DataLoader(d, batch_size=2, sampler=IntervalSampler(len(d), 2))
    got = [(x.asnumpy().tolist(), y.asnumpy().tolist()) for x, y in loader]
    assert got == [([DATA[0], DATA[2]], [LABEL[0], LABEL[2]]),
                   ([DATA[1], DATA[3]], [LABEL[1], LABEL[3]])]


def test_wikitext_bad_segment(tmp_path):
    root = _corpus(tmp_path / "wt2")
    with pytest.raises(KeyError):
        WikiText2(root=root, segment="bad")


def test_oxnet_wikitext_missing_files(tmp_path):
    root = str(tmp_path / "absent")
    with pytest.raises(MXNetError) as err:
        WikiText2(root=root)
    msg = str(err.value)
    assert root in msg and "wiki.train.tokens" in msg and "wiki.valid.tokens" in msg
    assert "wikitext-2-v1.zip" in msg and "does not download" in msg
    assert isinstance(err.value, FileNotFoundError)
    root = _corpus(tmp_path / "only_train")
    with pytest.raises(MXNetError, match="wiki.test.tokens"):
        WikiText103(root=root, segment="test")
    with pytest.raises(MXNetError, match="wikitext-103-v1.zip"):
        WikiText103(root=root, segment="test")


def test_oxnet_wikitext_archive_is_extracted(tmp_path):
    root = tmp_path / "wt2"
    root.mkdir()
    with zipfile.ZipFile(root / "wikitext-2-v1.zip", "w") as zf:
        zf.writestr("wikitext-2/wiki.train.tokens", TRAIN)
        zf.writestr("wikitext-2/wiki.test.tokens", VALID)
    d = WikiText2(root=str(root), segment="test", seq_len=2)
    assert (root / "wiki.test.tokens").is_file() and (root / "wiki.train.tokens").is_file()
    assert d.vocabulary.idx_to_token == ["<unk>", "<eos>", "away", "cat", "ran", "the"]
    np.testing.assert_array_equal(d._data.asnumpy(), [[5, 3], [4, 2]])
    np.testing.assert_array_equal(d._label.asnumpy(), [[3, 4], [2, 1]])


def test_oxnet_wikitext_argument_errors(tmp_path):
    root = _corpus(tmp_path / "wt2")
    with pytest.raises(MXNetError, match="segment"):
        WikiText2(root=root, segment="valid")
    with pytest.raises(ValueError, match="seq_len"):
        WikiText2(root=root, seq_len=0)
    with pytest.raises(TypeError, match="vocab"):
        WikiText2(root=root, vocab=["a"])
    v = text.vocab.Vocabulary(collections.Counter(["the", "cat"]), reserved_tokens=["<eos>"])
    d = WikiText2(root=root, segment="validation", vocab=v, seq_len=2)
    assert v.idx_to_token == ["<unk>", "<eos>", "cat", "the"]
    np.testing.assert_array_equal(d._data.asnumpy(), [[3, 2], [0, 0]])
