"""Token indexing (``mx.contrib.text.vocab``)."""

import collections
import numbers

from ...base import MXNetError
from . import _constants as C

__all__ = ["Vocabulary"]


class _TextAssertionError(MXNetError, AssertionError):
    """A bad argument to the text API. MXNet asserts here; oxnet's error is
    both an MXNetError and an AssertionError, so code catching either works."""


def _check(condition, message):
    if not condition:
        raise _TextAssertionError(message)


class Vocabulary:
    """An index of text tokens: the unknown token (always index 0), then the
    reserved tokens in their order, then the keys of ``counter`` from the most
    to the least frequent (ties in the keys' sort order).

    Parameters
    ----------
    counter : collections.Counter or None, default None
        Token frequencies. Its keys are indexed subject to ``most_freq_count``
        and ``min_freq``. Keys, ``unknown_token`` and the reserved tokens must
        be hashable values of one type (str, int, tuple, ...).
    most_freq_count : int or None, default None
        At most this many keys of ``counter`` are indexed (the reserved
        tokens do not count); None: no limit.
    min_freq : int, default 1
        Keys of ``counter`` less frequent than this are not indexed; must be
        positive.
    unknown_token : hashable, default '<unk>'
        What every token outside the vocabulary maps to.
    reserved_tokens : list or None, default None
        Tokens always indexed (padding, sentence marks, ...); no duplicates,
        and not ``unknown_token``.

    Errors on bad arguments are MXNetErrors that are also AssertionErrors, as
    MXNet asserts.

    Examples
    --------
    >>> v = Vocabulary(collections.Counter(['a', 'b', 'b']), reserved_tokens=['<pad>'])
    >>> v.idx_to_token
    ['<unk>', '<pad>', 'b', 'a']
    >>> v.to_indices(['a', 'zzz'])
    [3, 0]
    """

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token="<unk>",
                 reserved_tokens=None):
        _check(isinstance(min_freq, numbers.Real) and min_freq > 0,
               f"Vocabulary: `min_freq` must be set to a positive value, got {min_freq!r}.")
        _check(most_freq_count is None
               or (isinstance(most_freq_count, numbers.Integral) and most_freq_count >= 0),
               "Vocabulary: `most_freq_count` must be None or a non-negative int, got "
               f"{most_freq_count!r}.")
        if reserved_tokens is not None:
            _check(isinstance(reserved_tokens, (list, tuple)),
                   "Vocabulary: `reserved_tokens` must be a list or None, got "
                   f"{type(reserved_tokens).__name__}.")
            reserved_set = set(reserved_tokens)
            _check(unknown_token not in reserved_set,
                   f"Vocabulary: `reserved_tokens` cannot contain `unknown_token` {unknown_token!r}.")
            _check(len(reserved_set) == len(reserved_tokens),
                   "Vocabulary: `reserved_tokens` cannot contain duplicate reserved tokens.")
        self._index_unknown_and_reserved_tokens(unknown_token, reserved_tokens)
        if counter is not None:
            self._index_counter_keys(counter, unknown_token, reserved_tokens, most_freq_count,
                                     min_freq)

    def _index_unknown_and_reserved_tokens(self, unknown_token, reserved_tokens):
        """Index the unknown token (at 0) and the reserved tokens after it."""
        self._unknown_token = unknown_token
        self._idx_to_token = [unknown_token]
        if reserved_tokens is None:
            self._reserved_tokens = None
        else:
            self._reserved_tokens = list(reserved_tokens)
            self._idx_to_token.extend(reserved_tokens)
        self._token_to_idx = {token: idx for idx, token in enumerate(self._idx_to_token)}

    def _index_counter_keys(self, counter, unknown_token, reserved_tokens, most_freq_count,
                            min_freq):
        """Index the keys of ``counter`` by decreasing frequency, ties in key
        order, within ``most_freq_count`` and ``min_freq``."""
        _check(isinstance(counter, collections.Counter),
               "Vocabulary: `counter` must be an instance of collections.Counter, got "
               f"{type(counter).__name__}.")
        special = set(reserved_tokens) if reserved_tokens is not None else set()
        special.add(unknown_token)
        try:
            by_key = sorted(counter.items(), key=lambda item: item[0])
        except TypeError:
            raise TypeError("Vocabulary: the keys of `counter` must be of one sortable type "
                            "(str, int, tuple, ...)") from None
        ranked = sorted(by_key, key=lambda item: item[1], reverse=True)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        for token, freq in ranked:
            if freq < min_freq or len(self._idx_to_token) >= cap:
                break
            if token in special:
                continue
            self._token_to_idx[token] = len(self._idx_to_token)
            self._idx_to_token.append(token)

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        """dict: each indexed token to its index."""
        return self._token_to_idx

    @property
    def idx_to_token(self):
        """list: the indexed tokens, position = index."""
        return self._idx_to_token

    @property
    def unknown_token(self):
        """The representation of every unknown token (index 0)."""
        return self._unknown_token

    @property
    def reserved_tokens(self):
        """list or None: the reserved tokens (indices 1, 2, ...)."""
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token, or the list of indices of a list of tokens;
        unknown tokens give 0. Only a ``list`` is taken as several tokens (a
        tuple is one hashable token)."""
        single = not isinstance(tokens, list)
        if single:
            tokens = [tokens]
        lookup = self._token_to_idx
        indices = [lookup.get(token, C.UNKNOWN_IDX) for token in tokens]
        return indices[0] if single else indices

    def to_tokens(self, indices):
        """The token at an index, or the list of tokens at a list of indices.

        Raises ValueError for an index that is not an int or is outside
        ``[0, len(self))``.
        """
        single = not isinstance(indices, list)
        if single:
            indices = [indices]
        size = len(self._idx_to_token)
        tokens = []
        for idx in indices:
            if isinstance(idx, bool) or not isinstance(idx, numbers.Integral) \
                    or not 0 <= idx < size:
                raise ValueError(f"Token index {idx!r} in the provided `indices` is invalid: "
                                 f"indices must be ints in [0, {size}).")
            tokens.append(self._idx_to_token[int(idx)])
        return tokens[0] if single else tokens
