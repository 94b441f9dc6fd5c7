"""Helpers for text data (``mx.contrib.text.utils``)."""

import collections
import re

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(source_str, token_delim=" ", seq_delim="\n", to_lower=False,
                          counter_to_update=None):
    """Count the tokens of a string.

    The string is cut at every match of ``token_delim`` or ``seq_delim``,
    both regular expressions (escape special characters: ``'\\*'``); empty
    pieces are dropped.

    Parameters
    ----------
    source_str : str
        The text to count.
    token_delim : str, default ' '
        Regular expression between tokens.
    seq_delim : str, default '\\n'
        Regular expression between sequences.
    to_lower : bool, default False
        Whether tokens are lower-cased before they are counted.
    counter_to_update : collections.Counter or None, default None
        A counter to add the counts to (it is updated in place and
        returned); None makes a new one.

    Returns
    -------
    collections.Counter
        The token counts.

    Examples
    --------
    >>> count_tokens_from_str(' Life is great ! \\n life is good . \\n', to_lower=True)
    Counter({'life': 2, 'is': 2, 'great': 1, '!': 1, 'good': 1, '.': 1})
    """
    if not isinstance(source_str, str):
        raise TypeError("count_tokens_from_str: `source_str` must be a str, got "
                        f"{type(source_str).__name__}")
    for name, delim in (("token_delim", token_delim), ("seq_delim", seq_delim)):
        if not isinstance(delim, str):
            raise TypeError(f"count_tokens_from_str: `{name}` must be a str (a regular "
                            f"expression), got {type(delim).__name__}")
    if counter_to_update is not None and not hasattr(counter_to_update, "update"):
        raise TypeError("count_tokens_from_str: `counter_to_update` must be a "
                        f"collections.Counter or None, got {type(counter_to_update).__name__}")
    try:
        pieces = re.split(token_delim + "|" + seq_delim, source_str)
    except re.error as err:
        raise ValueError("count_tokens_from_str: `token_delim` or `seq_delim` is not a valid "
                         f"regular expression: {err}") from None
    tokens = [piece for piece in pieces if piece]
    if to_lower:
        tokens = [token.lower() for token in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
