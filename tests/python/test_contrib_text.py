"""mx.contrib.text: token counting, Vocabulary and token embeddings.

Expected values are those MXNet 1.9.1 gives on the same inputs (checked by
running the MXNet-compatible tests here under MXNet 1.9.1 itself, its SHA-1
check of pre-trained files switched off); tests whose
name starts with ``test_oxnet_`` cover what oxnet does differently (no
downloads, reserved tokens in a loaded embedding)."""

import collections
import os
import warnings
import zipfile

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.base import MXNetError
from oxnet.contrib import text

Counter = collections.Counter


def _write(path, lines, delim=" "):
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf8") as fout:
        for line in lines:
            fout.write((delim.join(line) if isinstance(line, (list, tuple)) else line) + "\n")
    return path


def _close(a, b):
    np.testing.assert_allclose(a.asnumpy() if hasattr(a, "asnumpy") else a, np.asarray(b),
                               rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------
# utils.count_tokens_from_str
# ----------------------------------------------------------------------------

def test_count_tokens_from_str():
    src = " Life is great ! \n life is good . \n life isn't bad . \n"
    assert text.utils.count_tokens_from_str(src) == Counter(
        {"is": 2, "life": 2, ".": 2, "Life": 1, "great": 1, "!": 1, "good": 1, "isn't": 1,
         "bad": 1})
    assert text.utils.count_tokens_from_str(src, to_lower=True) == Counter(
        {"life": 3, "is": 2, ".": 2, "great": 1, "!": 1, "good": 1, "isn't": 1, "bad": 1})
    # delimiters are regular expressions
    star = "*Life*is*great*!*\n*life*is*good*.*\n"
    assert text.utils.count_tokens_from_str(star, "\\*", "\n", True) == Counter(
        {"is": 2, "life": 2, "!": 1, "great": 1, "good": 1, ".": 1})
    assert text.utils.count_tokens_from_str("a,b;;c,a", ",", ";") == Counter(
        {"a": 2, "b": 1, "c": 1})
    # updating a counter in place returns that very counter
    base = Counter({"life": 2, "zzz": 1})
    out = text.utils.count_tokens_from_str(src, to_lower=True, counter_to_update=base)
    assert out is base
    assert base == Counter({"life": 5, "is": 2, ".": 2, "great": 1, "!": 1, "good": 1,
                            "isn't": 1, "bad": 1, "zzz": 1})
    assert text.utils.count_tokens_from_str("") == Counter()


def test_oxnet_count_tokens_errors():
    with pytest.raises(TypeError, match="source_str"):
        text.utils.count_tokens_from_str(b"a b")
    with pytest.raises(TypeError, match="counter_to_update"):
        text.utils.count_tokens_from_str("a b", counter_to_update=[1])
    with pytest.raises(ValueError, match="regular expression"):
        text.utils.count_tokens_from_str("a b", token_delim="(")


# ----------------------------------------------------------------------------
# vocab.Vocabulary
# ----------------------------------------------------------------------------

COUNTER = Counter(["a", "b", "b", "c", "c", "c", "some_word$"])


@pytest.mark.parametrize("kwargs,expected", [
    (dict(), ["<unk>", "c", "b", "a", "some_word$"]),
    (dict(min_freq=2), ["<unk>", "c", "b"]),
    (dict(min_freq=100), ["<unk>"]),
    (dict(most_freq_count=2), ["<unk>", "c", "b"]),
    (dict(most_freq_count=0), ["<unk>"]),
    (dict(most_freq_count=100), ["<unk>", "c", "b", "a", "some_word$"]),
    (dict(most_freq_count=1, min_freq=2), ["<unk>", "c"]),
    (dict(unknown_token="<unknown>", reserved_tokens=["b"]),
     ["<unknown>", "b", "c", "a", "some_word$"]),
    (dict(min_freq=2, reserved_tokens=["b", "a"]), ["<unk>", "b", "a", "c"]),
    (dict(min_freq=100, reserved_tokens=["b", "c"]), ["<unk>", "b", "c"]),
    (dict(most_freq_count=1, reserved_tokens=["c", "<pad>"]), ["<unk>", "c", "<pad>", "b"]),
    (dict(unknown_token="a"), ["a", "c", "b", "some_word$"]),
])
def test_vocabulary_indexing(kwargs, expected):
    v = text.vocab.Vocabulary(COUNTER, **kwargs)
    assert v.idx_to_token == expected
    assert v.token_to_idx == {t: i for i, t in enumerate(expected)}
    assert len(v) == len(expected)
    assert v.unknown_token == expected[0]
    assert v.reserved_tokens == kwargs.get("reserved_tokens")


def test_vocabulary_ties_and_types():
    # equal counts are ordered by the keys' sort order
    v = text.vocab.Vocabulary(Counter({"z": 2, "b": 2, "y": 1, "a": 1, "m": 3}))
    assert v.idx_to_token == ["<unk>", "m", "b", "z", "a", "y"]
    v = text.vocab.Vocabulary(Counter({"z": 2, "b": 2, "y": 1, "a": 1, "m": 3}), most_freq_count=2)
    assert v.idx_to_token == ["<unk>", "m", "b"]
    # any hashable token type works when used consistently
    v = text.vocab.Vocabulary(Counter([3, 1, 1, 2, 2, 2]), unknown_token=-1, reserved_tokens=[0])
    assert v.idx_to_token == [-1, 0, 2, 1, 3]
    assert v.to_indices([2, 7]) == [2, 0]
    v = text.vocab.Vocabulary(Counter([("a", 1), ("a", 1), ("b", 2)]), unknown_token=("?",))
    assert v.idx_to_token == [("?",), ("a", 1), ("b", 2)]
    assert v.to_indices(("b", 2)) == 2  # a tuple is one token, not a sequence
    # without a counter only the unknown and reserved tokens are indexed
    v = text.vocab.Vocabulary(reserved_tokens=["<pad>", "<bos>"])
    assert v.idx_to_token == ["<unk>", "<pad>", "<bos>"]
    assert v.reserved_tokens == ["<pad>", "<bos>"]


def test_vocabulary_to_indices_and_tokens():
    v = text.vocab.Vocabulary(COUNTER)
    assert v.to_indices("c") == 1
    assert v.to_indices(["c"]) == [1]
    assert v.to_indices(["<unk>", "non-exist"]) == [0, 0]
    assert v.to_indices(["a", "non-exist", "a", "b"]) == [3, 0, 3, 2]
    assert v.to_indices([]) == []
    v = text.vocab.Vocabulary(COUNTER, unknown_token="<unknown>")
    assert v.to_tokens(1) == "c"
    assert v.to_tokens([1]) == ["c"]
    assert v.to_tokens([0, 0]) == ["<unknown>", "<unknown>"]
    assert v.to_tokens([3, 0, 3, 2]) == ["a", "<unknown>", "a", "b"]
    with pytest.raises(ValueError):
        v.to_tokens(100)
    with pytest.raises(ValueError):
        v.to_tokens([1, 5])
    with pytest.raises(ValueError):
        v.to_tokens(1.5)


def test_vocabulary_errors_are_assertions():
    for kwargs in (dict(min_freq=0, reserved_tokens=["b"]),
                   dict(unknown_token="<unknown>", reserved_tokens=["b", "b"]),
                   dict(unknown_token="<unknown>", reserved_tokens=["b", "<unknown>"])):
        with pytest.raises(AssertionError):
            text.vocab.Vocabulary(COUNTER, **kwargs)
    with pytest.raises(AssertionError):
        text.vocab.Vocabulary({"a": 1})


def test_oxnet_vocabulary_errors():
    with pytest.raises(MXNetError, match="min_freq"):
        text.vocab.Vocabulary(COUNTER, min_freq=0)
    with pytest.raises(MXNetError, match="duplicate"):
        text.vocab.Vocabulary(COUNTER, reserved_tokens=["b", "b"])
    with pytest.raises(MXNetError, match="counter"):
        text.vocab.Vocabulary(["a", "b"])
    with pytest.raises(MXNetError, match="most_freq_count"):
        text.vocab.Vocabulary(COUNTER, most_freq_count=-1)
    v = text.vocab.Vocabulary(COUNTER)
    with pytest.raises(ValueError, match="indices"):
        v.to_tokens(-1)  # MXNet silently gives the last token
    with pytest.raises(ValueError):
        v.to_tokens("a")
    assert v.to_tokens(np.int64(2)) == "b"


# ----------------------------------------------------------------------------
# embedding: CustomEmbedding, CompositeEmbedding, update_token_vectors
# ----------------------------------------------------------------------------

def _file_ab(root, name="ab.txt", delim="\t"):
    return _write(os.path.join(root, name), [["a", "0.1", "0.2", "0.3", "0.4", "0.5"],
                                              ["b", "0.6", "0.7", "0.8", "0.9", "1.0"]], delim)


def _file_ac(root, name="ac.txt", delim="\t"):
    return _write(os.path.join(root, name), [["a", "0.01", "0.02", "0.03", "0.04", "0.05"],
                                              ["c", "0.06", "0.07", "0.08", "0.09", "0.1"]], delim)


def test_custom_embedding(tmp_path):
    path = _file_ab(tmp_path)
    e = text.embedding.CustomEmbedding(path, "\t")
    assert len(e) == 3 and e.vec_len == 5
    assert e.idx_to_token == ["<unk>", "a", "b"]
    assert e.token_to_idx == {"<unk>": 0, "a": 1, "b": 2}
    assert e.reserved_tokens is None
    assert e.idx_to_vec.shape == (3, 5) and e.idx_to_vec.dtype == np.float32
    _close(e.idx_to_vec, [[0] * 5, [0.1, 0.2, 0.3, 0.4, 0.5], [0.6, 0.7, 0.8, 0.9, 1.0]])
    _close(e.get_vecs_by_tokens("A"), [0] * 5)
    assert e.get_vecs_by_tokens("A").shape == (5,)
    _close(e.get_vecs_by_tokens("A", lower_case_backup=True), [0.1, 0.2, 0.3, 0.4, 0.5])
    got = e.get_vecs_by_tokens(["b", "zzz", "a"])
    assert got.shape == (3, 5)
    _close(got, [[0.6, 0.7, 0.8, 0.9, 1.0], [0] * 5, [0.1, 0.2, 0.3, 0.4, 0.5]])
    _close(e.get_vecs_by_tokens(["b"]), [[0.6, 0.7, 0.8, 0.9, 1.0]])
    # the embedding is a Vocabulary
    assert isinstance(e, text.vocab.Vocabulary)
    assert e.to_indices(["b", "q"]) == [2, 0] and e.to_tokens(1) == "a"


def test_custom_embedding_unknown_vector(tmp_path):
    path = _write(tmp_path / "abu.txt", [["a", "0.1", "0.2", "0.3"], ["b", "0.4", "0.5", "0.6"],
                                         ["<unk1>", "1.1", "1.2", "1.3"]], " ")
    e = text.embedding.CustomEmbedding(path, init_unknown_vec=nd.ones, unknown_token="<unk>")
    assert e.idx_to_token == ["<unk>", "a", "b", "<unk1>"]
    _close(e.get_vecs_by_tokens("<unk>"), [1, 1, 1])
    _close(e.get_vecs_by_tokens("zzz"), [1, 1, 1])
    # the file's vector of the unknown token is used, and the token is not indexed twice
    e = text.embedding.CustomEmbedding(path, init_unknown_vec=nd.ones, unknown_token="<unk1>")
    assert e.idx_to_token == ["<unk1>", "a", "b"]
    _close(e.idx_to_vec, [[1.1, 1.2, 1.3], [0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    _close(e.get_vecs_by_tokens("zzz"), [1.1, 1.2, 1.3])


def test_custom_embedding_header_and_duplicates(tmp_path):
    path = _write(tmp_path / "dup.vec", ["3 2", "x 1 2", "y 3 4", "x 5 6", "z 7 8"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = text.embedding.CustomEmbedding(path)
    user = [w for w in caught if issubclass(w.category, UserWarning)]
    assert len(user) == 2  # the header line, the second 'x'
    assert e.idx_to_token == ["<unk>", "x", "y", "z"]
    _close(e.idx_to_vec, [[0, 0], [1, 2], [3, 4], [7, 8]])


def test_custom_embedding_with_vocabulary(tmp_path):
    path = _file_ab(tmp_path)
    v = text.vocab.Vocabulary(COUNTER, reserved_tokens=["<pad>"])
    e = text.embedding.CustomEmbedding(path, "\t", init_unknown_vec=nd.ones, vocabulary=v)
    assert e.idx_to_token == ["<unk>", "<pad>", "c", "b", "a", "some_word$"]
    assert e.reserved_tokens == ["<pad>"]
    _close(e.idx_to_vec, [[1] * 5, [1] * 5, [1] * 5, [0.6, 0.7, 0.8, 0.9, 1.0],
                          [0.1, 0.2, 0.3, 0.4, 0.5], [1] * 5])


def test_custom_embedding_bad_files(tmp_path):
    bad = _write(tmp_path / "bad1.txt", [["a", "0.1", "0.2"], ["c"]], "\t")
    with pytest.raises(AssertionError):
        text.embedding.CustomEmbedding(bad, "\t")
    bad = _write(tmp_path / "bad2.txt", [["a", "0.1", "0.2", "0.3"], ["c", "0.6", "0.7"]], "\t")
    with pytest.raises(AssertionError):
        text.embedding.CustomEmbedding(bad, "\t")
    with pytest.raises(ValueError):
        text.embedding.CustomEmbedding(str(tmp_path / "missing.txt"))


def test_oxnet_custom_embedding_errors(tmp_path):
    bad = _write(tmp_path / "bad2.txt", [["a", "0.1", "0.2", "0.3"], ["c", "0.6", "0.7"]], "\t")
    with pytest.raises(MXNetError, match="line 2"):
        text.embedding.CustomEmbedding(bad, "\t")
    nan = _write(tmp_path / "nan.txt", ["a 0.1 x"])
    with pytest.raises(ValueError, match="line 1"):
        text.embedding.CustomEmbedding(nan)
    empty = _write(tmp_path / "hdr.txt", ["10 3"])
    with pytest.raises(MXNetError, match="no embedding vectors"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text.embedding.CustomEmbedding(empty)
    with pytest.raises(ValueError, match="pretrained_file_path"):
        text.embedding.CustomEmbedding(str(tmp_path))


def test_oxnet_custom_embedding_reserved_tokens(tmp_path):
    # MXNet 1.9.1 misaligns rows and indices here (it appends '<pad>' a second
    # time and gives 'x' the vector of 'a'); oxnet keeps every token on its row.
    path = _write(tmp_path / "r.txt", ["a 0.1 0.2", "b 0.3 0.4", "<pad> 5 6"])
    e = text.embedding.CustomEmbedding(path, reserved_tokens=["<pad>", "x"],
                                       init_unknown_vec=nd.ones)
    assert e.idx_to_token == ["<unk>", "<pad>", "x", "a", "b"]
    assert e.token_to_idx == {"<unk>": 0, "<pad>": 1, "x": 2, "a": 3, "b": 4}
    _close(e.idx_to_vec, [[1, 1], [5, 6], [1, 1], [0.1, 0.2], [0.3, 0.4]])


def test_update_token_vectors(tmp_path):
    path = _file_ab(tmp_path)
    v = text.vocab.Vocabulary(COUNTER, reserved_tokens=["<pad>"])
    e = text.embedding.CustomEmbedding(path, "\t", init_unknown_vec=nd.ones, vocabulary=v)
    e.update_token_vectors(["a", "b"], nd.array([[2] * 5, [3] * 5]))
    expected = np.array([[1] * 5, [1] * 5, [1] * 5, [3] * 5, [2] * 5, [1] * 5], dtype=np.float32)
    _close(e.idx_to_vec, expected)
    e.update_token_vectors(["<unk>"], nd.array([0, 0, 0, 0, 0]))
    expected[0] = 0
    _close(e.idx_to_vec, expected)
    e.update_token_vectors("<unk>", nd.array([[10] * 5]))
    expected[0] = 10
    _close(e.idx_to_vec, expected)
    e.update_token_vectors("c", nd.array([7, 8, 9, 10, 11]))
    expected[2] = [7, 8, 9, 10, 11]
    _close(e.idx_to_vec, expected)
    _close(e.get_vecs_by_tokens("c"), [7, 8, 9, 10, 11])
    with pytest.raises(ValueError):
        e.update_token_vectors("unknown$$$", nd.array([0, 0, 0, 0, 0]))
    with pytest.raises(AssertionError):
        e.update_token_vectors("<unk>", nd.array([[0] * 5, [0] * 5]))
    with pytest.raises(AssertionError):
        e.update_token_vectors("<unk>", nd.array([0]))
    with pytest.raises(AssertionError):
        e.update_token_vectors(["a", "b"], nd.array([0, 0, 0, 0, 0]))
    _close(e.idx_to_vec, expected)  # failed updates change nothing


def test_composite_embedding_one(tmp_path):
    e1 = text.embedding.CustomEmbedding(_file_ab(tmp_path), "\t", init_unknown_vec=nd.ones)
    v = text.vocab.Vocabulary(COUNTER, reserved_tokens=["<pad>"])
    ce = text.embedding.CompositeEmbedding(v, e1)
    assert ce.token_to_idx == {"<unk>": 0, "<pad>": 1, "c": 2, "b": 3, "a": 4, "some_word$": 5}
    assert ce.idx_to_token == ["<unk>", "<pad>", "c", "b", "a", "some_word$"]
    assert ce.vec_len == 5 and ce.reserved_tokens == ["<pad>"]
    _close(ce.idx_to_vec, [[1] * 5, [1] * 5, [1] * 5, [0.6, 0.7, 0.8, 0.9, 1],
                           [0.1, 0.2, 0.3, 0.4, 0.5], [1] * 5])
    _close(ce.get_vecs_by_tokens(["A", "b"], lower_case_backup=True),
           [[0.1, 0.2, 0.3, 0.4, 0.5], [0.6, 0.7, 0.8, 0.9, 1]])
    _close(ce.get_vecs_by_tokens(["A", "b"]), [[1] * 5, [0.6, 0.7, 0.8, 0.9, 1]])
    # the composite owns its vectors: updating it leaves the source alone
    ce.update_token_vectors("a", nd.array([9] * 5))
    _close(e1.get_vecs_by_tokens("a"), [0.1, 0.2, 0.3, 0.4, 0.5])


def test_composite_embedding_two(tmp_path):
    e1 = text.embedding.CustomEmbedding(_file_ab(tmp_path), "\t", init_unknown_vec=nd.ones)
    e2 = text.embedding.CustomEmbedding(_file_ac(tmp_path), "\t")
    ce = text.embedding.CompositeEmbedding(text.vocab.Vocabulary(COUNTER), [e1, e2])
    assert ce.idx_to_token == ["<unk>", "c", "b", "a", "some_word$"]
    assert ce.vec_len == 10 and ce.reserved_tokens is None
    _close(ce.idx_to_vec, [[1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
                           [1, 1, 1, 1, 1, 0.06, 0.07, 0.08, 0.09, 0.1],
                           [0.6, 0.7, 0.8, 0.9, 1, 0, 0, 0, 0, 0],
                           [0.1, 0.2, 0.3, 0.4, 0.5, 0.01, 0.02, 0.03, 0.04, 0.05],
                           [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]])
    # row 0 joins each embedding's own unknown vector, whatever the vocabulary's unknown token
    p3 = _write(tmp_path / "f3.txt", [["a", "0.1", "0.2"], ["<unk1>", "1.1", "1.2"]])
    p4 = _write(tmp_path / "f4.txt", [["c", "0.06", "0.07"], ["<unk2>", "0.11", "0.12"]])
    e3 = text.embedding.CustomEmbedding(p3, unknown_token="<unk1>")
    e4 = text.embedding.CustomEmbedding(p4, unknown_token="<unk2>")
    v5 = text.vocab.Vocabulary(Counter(["b", "b", "c", "c", "c", "some_word$"]), unknown_token="a")
    ce5 = text.embedding.CompositeEmbedding(v5, [e3, e4])
    assert ce5.idx_to_token == ["a", "c", "b", "some_word$"]
    _close(ce5.idx_to_vec, [[1.1, 1.2, 0.11, 0.12], [1.1, 1.2, 0.06, 0.07],
                            [1.1, 1.2, 0.11, 0.12], [1.1, 1.2, 0.11, 0.12]])
    with pytest.raises(AssertionError):
        text.embedding.CompositeEmbedding(COUNTER, [e1])
    with pytest.raises(AssertionError):
        text.embedding.CompositeEmbedding(v5, [e1, "glove"])


# ----------------------------------------------------------------------------
# embedding registry, GloVe and FastText from local files
# ----------------------------------------------------------------------------

def test_get_pretrained_file_names():
    names = text.embedding.get_pretrained_file_names("glove")
    assert len(names) == 10
    assert names[0] == "glove.42B.300d.txt" and names[-1] == "glove.twitter.27B.200d.txt"
    assert "glove.6B.50d.txt" in names
    ft = text.embedding.get_pretrained_file_names("fasttext")
    assert len(ft) == 327
    assert ft[:3] == ["crawl-300d-2M.vec", "wiki.aa.vec", "wiki.ab.vec"]
    assert ft[-1] == "wiki.zu.vec" and "wiki.simple.vec" in ft
    reg = text.embedding.get_pretrained_file_names()
    assert reg["glove"] == names and reg["fasttext"] == ft
    with pytest.raises(KeyError):
        text.embedding.get_pretrained_file_names("unknown$$")


def test_register_and_create(tmp_path):
    root = tmp_path / "embeddings"
    _write(root / "mytestembed" / "my.vec", ["hello 1 2 3", "world 4 5 6"])

    @text.embedding.register
    class MyTestEmbed(text.embedding._TokenEmbedding):
        """A test embedding read from a local file."""
        pretrained_file_name_sha1 = {"my.vec": "0" * 40}

        def __init__(self, embedding_root=str(root), init_unknown_vec=nd.zeros, **kwargs):
            MyTestEmbed._check_pretrained_file_names("my.vec")
            super().__init__(**kwargs)
            path = MyTestEmbed._get_pretrained_file(embedding_root, "my.vec")
            self._load_embedding(path, " ", init_unknown_vec)

    assert "mytestembed" in text.embedding.get_pretrained_file_names()
    assert text.embedding.get_pretrained_file_names("mytestembed") == ["my.vec"]
    e = text.embedding.create("MyTestEmbed")
    assert isinstance(e, MyTestEmbed)
    assert e.token_to_idx == {"<unk>": 0, "hello": 1, "world": 2}
    _close(e.idx_to_vec, [[0, 0, 0], [1, 2, 3], [4, 5, 6]])
    e = text.embedding.create("mytestembed", init_unknown_vec=nd.ones, unknown_token="?")
    _close(e.get_vecs_by_tokens(["?", "world"]), [[1, 1, 1], [4, 5, 6]])
    with pytest.raises(AssertionError):
        text.embedding.create("not-an-embedding")
    with pytest.raises(KeyError):
        text.embedding.GloVe(pretrained_file_name="glove.bogus.txt")
    with pytest.raises(AssertionError):
        text.embedding.register(dict)


def test_glove_and_fasttext_from_local_files(tmp_path):
    root = str(tmp_path)
    _write(tmp_path / "glove" / "glove.6B.50d.txt",
           ["the 0.1 0.2 0.3", "cat 0.4 0.5 0.6", "<unk> 9 9 9"])
    g = text.embedding.create("glove", pretrained_file_name="glove.6B.50d.txt",
                              embedding_root=root)
    assert isinstance(g, text.embedding.GloVe)
    assert g.idx_to_token == ["<unk>", "the", "cat"] and g.vec_len == 3
    _close(g.idx_to_vec, [[9, 9, 9], [0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    v = text.vocab.Vocabulary(Counter(["cat", "cat", "dog"]))
    g = text.embedding.GloVe("glove.6B.50d.txt", embedding_root=root, vocabulary=v)
    assert g.idx_to_token == ["<unk>", "cat", "dog"]
    _close(g.idx_to_vec, [[9, 9, 9], [0.4, 0.5, 0.6], [9, 9, 9]])

    _write(tmp_path / "fasttext" / "wiki.simple.vec", ["2 2", "hello 1 2", "world 3 4"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = text.embedding.FastText(embedding_root=root, init_unknown_vec=nd.ones)
    assert f.idx_to_token == ["<unk>", "hello", "world"]
    _close(f.idx_to_vec, [[1, 1], [1, 2], [3, 4]])


def test_oxnet_pretrained_file_missing_names_path(tmp_path):
    root = str(tmp_path / "nothing")
    with pytest.raises(MXNetError) as err:
        text.embedding.GloVe("glove.6B.50d.txt", embedding_root=root)
    msg = str(err.value)
    assert os.path.join(root, "glove", "glove.6B.50d.txt") in msg
    assert "glove.6B.zip" in msg and "does not download" in msg
    with pytest.raises(MXNetError) as err:
        text.embedding.create("fasttext", pretrained_file_name="wiki.en.vec", embedding_root=root)
    msg = str(err.value)
    assert os.path.join(root, "fasttext", "wiki.en.vec") in msg and "wiki.en.zip" in msg
    assert not os.path.exists(root)  # nothing is created


def test_oxnet_pretrained_archive_is_extracted(tmp_path):
    folder = tmp_path / "glove"
    folder.mkdir()
    with zipfile.ZipFile(folder / "glove.twitter.27B.zip", "w") as zf:
        zf.writestr("glove.twitter.27B.25d.txt", "hi 1 2\nyo 3 4\n")
    g = text.embedding.GloVe("glove.twitter.27B.25d.txt", embedding_root=str(tmp_path))
    assert (folder / "glove.twitter.27B.25d.txt").is_file()
    assert g.idx_to_token == ["<unk>", "hi", "yo"]
    _close(g.idx_to_vec, [[0, 0], [1, 2], [3, 4]])


def test_lazy_module_access():
    assert mx.contrib.text.embedding.TokenEmbedding is text.embedding._TokenEmbedding
    assert mx.contrib.text.vocab.Vocabulary is text.vocab.Vocabulary
