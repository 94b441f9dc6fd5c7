"""Text utilities (``mx.contrib.text``): token counting (:mod:`.utils`),
vocabularies (:mod:`.vocab`) and token embeddings (:mod:`.embedding`), as in
MXNet 1.9.1. Pre-trained GloVe and fastText files are read from disk only;
oxnet never downloads them (see docs/text.md)."""

from . import utils
from . import vocab
from . import embedding

__all__ = ["utils", "vocab", "embedding"]
