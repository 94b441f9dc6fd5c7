"""Language-model datasets of ``mx.gluon.contrib.data.text``: WikiText-2 and
WikiText-103, read from MXNet's file layout under ``root``
(``wiki.train.tokens``, ``wiki.valid.tokens``, ``wiki.test.tokens``).

oxnet does not download: when the segment's file is missing and the zip
archive MXNet downloads (``wikitext-2-v1.zip``, ``wikitext-103-v1.zip``) is
in ``root``, its files are extracted there (flat, as MXNet does); otherwise
an MXNetError names the folder and the files expected.
"""

import numbers
import os
import shutil
import zipfile

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError, data_dir
from ....contrib.text import utils as _text_utils
from ....contrib.text import vocab as _text_vocab
from ...data.dataset import Dataset

__all__ = ["WikiText2", "WikiText103"]

#: The token appended to every non-empty line.
EOS_TOKEN = "<eos>"


class _DataFilesMissing(MXNetError, FileNotFoundError):
    """A dataset's files are not under its root (an MXNetError that is also
    a FileNotFoundError)."""


class _UnknownSegment(MXNetError, KeyError):
    """A segment name the dataset lacks (MXNet raises KeyError; this error
    is both)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class _LanguageModelDataset(Dataset):
    """A text corpus read from ``root``: its token counts (``frequencies``)
    and the vocabulary indexing it (given, or built from the counts with
    ``'<eos>'`` reserved)."""

    def __init__(self, root, namespace, vocabulary):
        if vocabulary is not None and not isinstance(vocabulary, _text_vocab.Vocabulary):
            raise TypeError(f"{type(self).__name__}: `vocab` must be a "
                            "mx.contrib.text.vocab.Vocabulary or None, got "
                            f"{type(vocabulary).__name__}")
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"{type(self).__name__}: `root` must be a path (str), got "
                            f"{type(root).__name__}")
        self._vocab = vocabulary
        self._counter = None
        self._namespace = namespace
        self._root = os.path.expanduser(os.fspath(root))
        self._data = None
        self._label = None
        self._get_data()

    @property
    def vocabulary(self):
        """Vocabulary: the token index used for the samples."""
        return self._vocab

    @property
    def frequencies(self):
        """collections.Counter: the token counts of the segment's file."""
        return self._counter

    def _build_vocab(self, content):
        """Count the tokens of ``content`` and, without a given vocabulary,
        index them with ``'<eos>'`` reserved."""
        if not self._counter:
            self._counter = _text_utils.count_tokens_from_str(content)
        if not self._vocab:
            self._vocab = _text_vocab.Vocabulary(counter=self._counter,
                                                 reserved_tokens=[EOS_TOKEN])

    def _get_data(self):
        raise NotImplementedError


class _WikiText(_LanguageModelDataset):
    """A WikiText segment as ``(data, label)`` pairs of ``seq_len`` token
    indices (int32), the label being the data shifted by one token."""

    _archive_name = None
    _segment_files = {"train": "wiki.train.tokens", "validation": "wiki.valid.tokens",
                      "test": "wiki.test.tokens"}

    def __init__(self, root, segment, vocab, seq_len, namespace):
        if segment not in self._segment_files:
            raise _UnknownSegment(f"{type(self).__name__}: unknown `segment` {segment!r}; "
                                  f"expected one of {', '.join(map(repr, self._segment_files))}")
        if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral) \
                or seq_len < 1:
            raise ValueError(f"{type(self).__name__}: `seq_len` must be a positive int, got "
                             f"{seq_len!r}")
        self._segment = segment
        self._seq_len = int(seq_len)
        super().__init__(root, namespace, vocab)

    def _locate(self):
        """The path of the segment's file, extracting the archive if only it
        is present; else an MXNetError naming what is expected."""
        name = self._segment_files[self._segment]
        path = os.path.join(self._root, name)
        if os.path.isfile(path):
            return path
        archive = os.path.join(self._root, self._archive_name)
        if os.path.isfile(archive):
            with zipfile.ZipFile(archive, "r") as zf:
                for member in zf.namelist():
                    base = os.path.basename(member)
                    if base:
                        with zf.open(member) as src, \
                                open(os.path.join(self._root, base), "wb") as dst:
                            shutil.copyfileobj(src, dst)
            if os.path.isfile(path):
                return path
        expected = ", ".join(self._segment_files.values())
        raise _DataFilesMissing(
            f"{type(self).__name__}: {name} (segment {self._segment!r}) not found in "
            f"{self._root}. oxnet does not download datasets (no network access): put MXNet's "
            f"files there ({expected}, or the archive {self._archive_name} holding them), or "
            "pass root=")

    def _read_batch(self, filename):
        """The data and label index arrays (int32) of a token file."""
        with open(filename, "r", encoding="utf8") as fin:
            content = fin.read()
        self._build_vocab(content)
        tokens = []
        for line in content.splitlines():
            words = line.strip().split()
            if words:
                tokens.extend(words)
                tokens.append(EOS_TOKEN)
        indices = np.asarray(self._vocab.to_indices(tokens), dtype=np.int32)
        return indices[:-1], indices[1:]

    def _get_data(self):
        data, label = self._read_batch(self._locate())
        usable = len(data) // self._seq_len * self._seq_len
        shape = (-1, self._seq_len)
        self._data = nd.array(data[:usable].reshape(shape), dtype=np.int32)
        self._label = nd.array(label[:usable].reshape(shape), dtype=np.int32)

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class WikiText2(_WikiText):
    """WikiText-2, the word-level language-modelling corpus of Merity et al.
    (Salesforce research; CC BY-SA).

    Each sample is ``(data, label)``: ``seq_len`` consecutive token indices
    (int32 NDArrays) and the same shifted one token on; every non-empty line
    ends with ``'<eos>'``, and the tokens that do not fill a last sample are
    dropped.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/wikitext-2
        The folder holding ``wiki.train.tokens``, ``wiki.valid.tokens`` and
        ``wiki.test.tokens`` (or ``wikitext-2-v1.zip``). oxnet does not
        download them.
    segment : str, default 'train'
        'train', 'validation' or 'test'.
    vocab : Vocabulary or None, default None
        The index to use; None builds one from the segment's tokens, with
        ``'<eos>'`` reserved.
    seq_len : int, default 35
        The number of tokens per sample.
    """

    _archive_name = "wikitext-2-v1.zip"

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-2"),
                 segment="train", vocab=None, seq_len=35):
        super().__init__(root, segment, vocab, seq_len, "wikitext-2")


class WikiText103(_WikiText):
    """WikiText-103, the larger word-level language-modelling corpus of
    Merity et al. (Salesforce research; CC BY-SA). Samples as in
    :class:`WikiText2`.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/wikitext-103
        The folder holding ``wiki.train.tokens``, ``wiki.valid.tokens`` and
        ``wiki.test.tokens`` (or ``wikitext-103-v1.zip``). oxnet does not
        download them.
    segment : str, default 'train'
        'train', 'validation' or 'test'.
    vocab : Vocabulary or None, default None
        The index to use; None builds one from the segment's tokens, with
        ``'<eos>'`` reserved.
    seq_len : int, default 35
        The number of tokens per sample.
    """

    _archive_name = "wikitext-103-v1.zip"

    def __init__(self, root=os.path.join(data_dir(), "datasets", "wikitext-103"),
                 segment="train", vocab=None, seq_len=35):
        super().__init__(root, segment, vocab, seq_len, "wikitext-103")
