"""Data helpers for language models: turning tokenized sentences into
integer ids, and an iterator that groups sentences into length buckets."""

import bisect
import logging
import random

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key='\n', start_label=0,
                     unknown_token=None):
    """Maps the tokens of ``sentences`` to integer ids.

    Parameters
    ----------
    sentences : list of list of str
        Tokenized sentences.
    vocab : dict of str to int, optional
        An existing vocabulary. Without one, a new one is built (holding
        ``{invalid_key: invalid_label}`` and every token seen, numbered from
        ``start_label`` upwards, skipping ``invalid_label``).
    invalid_label : int
        The id of ``invalid_key`` (default -1).
    invalid_key : str
        The token of ``invalid_label`` (default ``'\\n'``, the end of a sentence).
    start_label : int
        The lowest id given to a new token.
    unknown_token : str, optional
        With a given ``vocab``: the token that tokens missing from it are
        encoded as (added to ``vocab`` with a new id if it is not in it).
        Without it, a missing token is an error.

    Returns
    -------
    encoded : list of list of int
    vocab : dict of str to int
        The vocabulary used (the given one, updated in place, or the new one).
    """
    building = vocab is None
    if building:
        vocab = {invalid_key: invalid_label}
    used = set(vocab.values())
    next_id = [start_label]

    def new_id():
        while next_id[0] in used or next_id[0] == invalid_label:
            next_id[0] += 1
        used.add(next_id[0])
        return next_id[0]

    encoded = []
    for sentence in sentences:
        ids = []
        for token in sentence:
            if token not in vocab:
                if building:
                    vocab[token] = new_id()
                elif unknown_token is not None:
                    if unknown_token not in vocab:
                        vocab[unknown_token] = new_id()
                    token = unknown_token
                else:
                    raise AssertionError("Unknown token %s" % token)
            ids.append(vocab[token])
        encoded.append(ids)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences for a language model, grouped by length.

    Each sentence is padded with ``invalid_label`` to the smallest bucket
    length that holds it (sentences longer than every bucket are dropped);
    a batch holds ``batch_size`` sentences of one bucket, and its label is
    the data shifted one step to the left (the next token), ending with
    ``invalid_label``. ``bucket_key`` of a batch is its bucket's length;
    incomplete batches at the end of a bucket are left out. ``reset()``
    shuffles the batches and the sentences in each bucket.

    Parameters
    ----------
    sentences : list of list of int
        Encoded sentences (see :func:`encode_sentences`).
    batch_size : int
        Sentences per batch.
    buckets : list of int, optional
        Bucket lengths; by default every sentence length that at least
        ``batch_size`` sentences have.
    invalid_label : int
        The padding id (default -1).
    data_name, label_name : str
        Names in ``provide_data``/``provide_label`` (``'data'``, ``'softmax_label'``).
    dtype : str
        Data type of the batches (default ``'float32'``).
    layout : str
        ``'NT'`` (default): batches of shape (batch_size, length);
        ``'TN'``: (length, batch_size).
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name='data',
                 label_name='softmax_label', dtype='float32', layout='NT'):
        super(BucketSentenceIter, self).__init__(batch_size)
        self.major_axis = layout.find('N')
        if self.major_axis not in (0, 1) or sorted(layout) != ['N', 'T']:
            raise ValueError("Invalid layout %s: must be NT (batch major) or TN (time major)" % layout)
        if not buckets:
            counts = np.bincount([len(s) for s in sentences]) if len(sentences) else []
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)

        filled = [[] for _ in buckets]
        discarded = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                discarded += 1
                continue
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            filled[b].append(row)
        if discarded:
            logging.warning("BucketSentenceIter: discarded %d sentences longer than the largest bucket.",
                            discarded)
        kept = [b for b, rows in enumerate(filled) if rows]
        if not kept:
            raise ValueError("BucketSentenceIter: no sentence fits in any bucket (buckets: %s)" % (buckets,))
        self.buckets = [buckets[b] for b in kept]
        self.data = [np.asarray(filled[b], dtype=dtype) for b in kept]

        self.batch_size = batch_size
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.default_bucket_key = max(self.buckets)
        self.nddata = []
        self.ndlabel = []

        shape = ((batch_size, self.default_bucket_key) if self.major_axis == 0
                 else (self.default_bucket_key, batch_size))
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]

        self.idx = [(b, start) for b, rows in enumerate(self.data)
                    for start in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Starts again, with the batches and the sentences of each bucket shuffled."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata = []
        self.ndlabel = []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next batch; raises ``StopIteration`` after the last."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        b, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[b][start:start + self.batch_size]
        label = self.ndlabel[b][start:start + self.batch_size]
        if self.major_axis == 1:
            data = data.T
            label = label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[b],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
