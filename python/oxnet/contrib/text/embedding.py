"""Token embeddings (``mx.contrib.text.embedding``).

A token embedding is a :class:`~oxnet.contrib.text.vocab.Vocabulary` whose
every index also has a vector (``idx_to_vec``, one row per index). Vectors
come from a text file with one token and its numbers per line:
:class:`CustomEmbedding` reads any such file, :class:`GloVe` and
:class:`FastText` read the published files by name from ``embedding_root``,
and :class:`CompositeEmbedding` joins several embeddings over one vocabulary.

oxnet does not download: a named pre-trained file must already be on disk
(``<embedding_root>/<glove|fasttext>/<file>``, or its zip archive there);
otherwise the constructor raises an MXNetError saying where to put it.
"""

import json
import logging
import os
import tarfile
import warnings
import zipfile

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError, data_dir
from . import _constants as C
from . import vocab
from .vocab import _check

__all__ = ["register", "create", "get_pretrained_file_names", "TokenEmbedding", "GloVe",
           "FastText", "CustomEmbedding", "CompositeEmbedding"]

# registered embedding name (lower case) -> class
_REGISTRY = {}


def register(embedding_cls):
    """Register a token embedding class (a subclass of ``_TokenEmbedding``)
    under its lower-cased class name, so that :func:`create` can build it by
    name. Returns the class, so it works as a decorator.

    Examples
    --------
    >>> @register
    ... class MyEmbed(_TokenEmbedding):
    ...     pretrained_file_name_sha1 = {}
    >>> type(create('myembed'))   # doctest: +SKIP
    """
    _check(isinstance(embedding_cls, type) and issubclass(embedding_cls, _TokenEmbedding),
           f"register: can only register a subclass of _TokenEmbedding, got {embedding_cls!r}")
    name = embedding_cls.__name__.lower()
    old = _REGISTRY.get(name)
    if old is not None and old is not embedding_cls:
        warnings.warn(f"New token embedding {embedding_cls.__module__}.{embedding_cls.__name__} "
                      f"registered with name {name} is overriding existing token embedding "
                      f"{old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
    _REGISTRY[name] = embedding_cls
    return embedding_cls


def create(embedding_name, **kwargs):
    """Build a registered token embedding by name (case-insensitive), passing
    ``kwargs`` to its constructor: ``create('glove',
    pretrained_file_name='glove.6B.50d.txt')``. An embedding instance is
    returned as is; a dict or a JSON string (``'["glove", {...}]'`` or
    ``'{"embedding_name": ...}'``) is unpacked first. See
    :func:`get_pretrained_file_names` for the valid names."""
    if isinstance(embedding_name, _TokenEmbedding):
        _check(not kwargs, "create: `embedding_name` is already a token embedding instance; "
                           "additional arguments are invalid")
        return embedding_name
    if isinstance(embedding_name, dict):
        spec = dict(embedding_name)
        spec.update(kwargs)
        return create(**spec)
    _check(isinstance(embedding_name, str),
           f"create: `embedding_name` must be a str, got {type(embedding_name).__name__}")
    if embedding_name.startswith("["):
        _check(not kwargs, "create: a JSON `embedding_name` takes no other arguments")
        name, params = json.loads(embedding_name)
        return create(name, **params)
    if embedding_name.startswith("{"):
        _check(not kwargs, "create: a JSON `embedding_name` takes no other arguments")
        return create(**json.loads(embedding_name))
    name = embedding_name.lower()
    _check(name in _REGISTRY,
           f"{name} is not registered. Please register with token embedding.register first "
           f"(registered: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name](**kwargs)


def get_pretrained_file_names(embedding_name=None):
    """The pre-trained file names a registered embedding knows.

    With a name (``'glove'``, ``'fasttext'``), the list of its file names,
    usable as ``pretrained_file_name``; with None, a dict from every
    registered embedding name to that list. An unknown name raises KeyError.
    The names are those MXNet 1.9.1 lists; oxnet reads such a file only when
    it is already on disk.
    """
    if embedding_name is None:
        return {name: list(getattr(cls, "pretrained_file_name_sha1", {}).keys())
                for name, cls in _REGISTRY.items()}
    key = embedding_name.lower() if isinstance(embedding_name, str) else embedding_name
    if key not in _REGISTRY:
        raise KeyError(f"Cannot find `embedding_name` {embedding_name}. Use "
                       "`get_pretrained_file_names(embedding_name=None).keys()` to get all the "
                       "valid embedding names.")
    return list(getattr(_REGISTRY[key], "pretrained_file_name_sha1", {}).keys())


def _to_numpy_row(value, what):
    """``value`` (an NDArray, numpy array or sequence) as a 1-D float32 array."""
    if isinstance(value, nd.NDArray):
        value = value.asnumpy()
    try:
        return np.asarray(value, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must give an NDArray of numbers: {err}") from None


class _TokenEmbedding(vocab.Vocabulary):
    """The base of token embeddings: a :class:`Vocabulary` plus a vector for
    every index.

    ``idx_to_vec`` is an NDArray of shape ``(len(self), vec_len)`` whose row
    ``i`` is the vector of ``idx_to_token[i]``; row 0 is the vector of every
    unknown token: the file's vector of ``unknown_token`` when the file has
    one, else the value of ``init_unknown_vec``. When a token appears several
    times in a file, its first vector is kept (with a warning).

    Subclasses load vectors with ``_load_embedding(path, elem_delim,
    init_unknown_vec)``; a registered subclass with a class attribute
    ``pretrained_file_name_sha1`` (file name -> SHA-1) finds its files with
    ``_get_pretrained_file(embedding_root, file_name)``, which looks in
    ``<embedding_root>/<class name in lower case>/`` and never downloads.
    Keyword arguments go to :class:`Vocabulary` (``unknown_token``,
    ``reserved_tokens``, ...).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._vec_len = None
        self._idx_to_vec = None

    # ------------------------------------------------------------------
    # Finding pre-trained files
    # ------------------------------------------------------------------

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        """The name of the archive MXNet would download for
        ``pretrained_file_name`` (the file itself by default)."""
        return pretrained_file_name

    @classmethod
    def _get_pretrained_file_url(cls, pretrained_file_name):
        """Where MXNet's repository publishes the file (for messages only:
        oxnet does not download)."""
        repo_url = os.environ.get("MXNET_GLUON_REPO",
                                  "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
        if not repo_url.endswith("/"):
            repo_url += "/"
        return (f"{repo_url}gluon/embeddings/{cls.__name__.lower()}/"
                f"{cls._get_download_file_name(pretrained_file_name)}")

    @classmethod
    def _get_pretrained_file(cls, embedding_root, pretrained_file_name):
        """The path of ``pretrained_file_name`` under
        ``<embedding_root>/<class name in lower case>/``.

        When only its archive (``.zip`` or ``.tar.gz``, as MXNet downloads
        it) is there, it is extracted in place first. When neither is there,
        raises MXNetError: oxnet does not download.
        """
        embedding_dir = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower())
        path = os.path.join(embedding_dir, pretrained_file_name)
        if os.path.isfile(path):
            return path
        archive = os.path.basename(cls._get_download_file_name(pretrained_file_name))
        archive_path = os.path.join(embedding_dir, archive)
        if archive != pretrained_file_name and os.path.isfile(archive_path):
            logging.info("Extracting %s into %s", archive_path, embedding_dir)
            if archive.endswith(".zip"):
                with zipfile.ZipFile(archive_path, "r") as zf:
                    zf.extractall(embedding_dir)
            elif archive.endswith((".tar.gz", ".tgz", ".gz")):
                with tarfile.open(archive_path, "r:gz") as tar:
                    if hasattr(tarfile, "data_filter"):
                        tar.extractall(path=embedding_dir, filter="data")
                    else:
                        tar.extractall(path=embedding_dir)
            if os.path.isfile(path):
                return path
        also = (f" (or its archive {archive!r} in {embedding_dir}, which is then extracted)"
                if archive != pretrained_file_name else "")
        raise MXNetError(
            f"{cls.__name__}: the pre-trained embedding file {pretrained_file_name!r} was not "
            f"found at {path}. oxnet does not download (no network access): put the file "
            f"there{also}, for instance a copy of {cls._get_pretrained_file_url(pretrained_file_name)}"
            ", pass another `embedding_root`, or load any local file with "
            "mx.contrib.text.embedding.CustomEmbedding(pretrained_file_path).")

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name):
        """Raise KeyError unless ``pretrained_file_name`` is one of the class's
        known pre-trained files."""
        known = getattr(cls, "pretrained_file_name_sha1", {})
        if pretrained_file_name not in known:
            name = cls.__name__.lower()
            raise KeyError(f"Cannot find pretrained file {pretrained_file_name} for token "
                           f"embedding {name}. Valid pretrained files for embedding {name}: "
                           f"{', '.join(known.keys())}")

    # ------------------------------------------------------------------
    # Loading
    # ------------------------------------------------------------------

    def _load_embedding(self, pretrained_file_path, elem_delim, init_unknown_vec,
                        encoding="utf8"):
        """Read vectors from a text file of lines ``token<d>v1<d>v2...``.

        Tokens not yet indexed are appended in file order; a token already
        indexed (a reserved token, say) takes the file's vector in its row.
        Lines with a single number after the token are taken as a header and
        skipped (with a warning), as are repeated tokens. Indexed tokens the
        file does not cover, and the unknown token unless the file has it,
        get ``init_unknown_vec(shape=vec_len)``.
        """
        if not isinstance(pretrained_file_path, (str, os.PathLike)):
            raise TypeError("`pretrained_file_path` must be a path (str), got "
                            f"{type(pretrained_file_path).__name__}")
        path = os.path.expanduser(os.fspath(pretrained_file_path))
        if not os.path.isfile(path):
            raise ValueError("`pretrained_file_path` must be a valid path to the pre-trained "
                             f"token embedding file; {path!r} is not a file.")
        if not isinstance(elem_delim, str) or not elem_delim:
            raise ValueError(f"`elem_delim` must be a non-empty str, got {elem_delim!r}")
        if not callable(init_unknown_vec):
            raise TypeError("`init_unknown_vec` must be callable (such as nd.zeros), got "
                            f"{type(init_unknown_vec).__name__}")
        logging.info("Loading pre-trained token embedding vectors from %s", path)

        unknown = self._unknown_token
        preindexed = len(self._idx_to_token)  # unknown + reserved (+ counter keys)
        rows = {}  # index of a pre-indexed token -> its vector
        new_rows = []  # vectors of tokens appended from the file
        seen = set()
        unknown_vec = None
        vec_len = None
        with open(path, "r", encoding=encoding) as fin:
            for line_num, line in enumerate(fin, start=1):
                elems = line.rstrip().split(elem_delim)
                _check(len(elems) > 1,
                       f"At line {line_num} of the pre-trained text embedding file: the data "
                       f"format of the pre-trained token embedding file {path} is unexpected.")
                token = elems[0]
                try:
                    values = [float(x) for x in elems[1:]]
                except ValueError as err:
                    raise ValueError(f"At line {line_num} of the pre-trained token embedding "
                                     f"file {path}: token {token!r} has a value that is not a "
                                     f"number ({err}).") from None
                if token == unknown and unknown_vec is None:
                    unknown_vec = values
                    seen.add(token)
                    continue
                if token in seen:
                    warnings.warn(f"At line {line_num} of the pre-trained token embedding file: "
                                  f"the embedding vector for token {token} has been loaded and a "
                                  "duplicate embedding for the same token is seen and skipped.")
                    continue
                if len(values) == 1:
                    warnings.warn(f"At line {line_num} of the pre-trained text embedding file: "
                                  f"token {token} with 1-dimensional vector {values} is likely a "
                                  "header and is skipped.")
                    continue
                if vec_len is None:
                    vec_len = len(values)
                else:
                    _check(len(values) == vec_len,
                           f"At line {line_num} of the pre-trained token embedding file: the "
                           f"dimension of token {token} is {len(values)} but the dimension of "
                           f"previous tokens is {vec_len}. Dimensions of all the tokens must be "
                           "the same.")
                seen.add(token)
                idx = self._token_to_idx.get(token)
                if idx is not None and idx < preindexed:
                    rows[idx] = values
                else:
                    self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)
                    new_rows.append(values)

        if vec_len is None:
            _check(unknown_vec is not None and len(unknown_vec) > 1,
                   f"The pre-trained token embedding file {path} holds no embedding vectors.")
            vec_len = len(unknown_vec)
        if unknown_vec is not None:
            _check(len(unknown_vec) == vec_len,
                   f"In the pre-trained token embedding file {path}: the vector of the unknown "
                   f"token {unknown} has {len(unknown_vec)} elements but the other vectors have "
                   f"{vec_len}.")

        matrix = np.empty((len(self._idx_to_token), vec_len), dtype=np.float32)
        if new_rows:
            matrix[preindexed:] = np.asarray(new_rows, dtype=np.float32)
        missing = [i for i in range(preindexed) if i not in rows and i != C.UNKNOWN_IDX]
        if unknown_vec is None or missing:
            init = _to_numpy_row(init_unknown_vec(shape=vec_len), "`init_unknown_vec`")
            _check(init.size == vec_len,
                   f"`init_unknown_vec(shape={vec_len})` gave {init.size} values, not {vec_len}.")
        matrix[C.UNKNOWN_IDX] = init if unknown_vec is None else unknown_vec
        for i in missing:
            matrix[i] = init
        for i, values in rows.items():
            matrix[i] = values
        self._vec_len = vec_len
        self._idx_to_vec = nd.array(matrix)

    def _index_tokens_from_vocabulary(self, vocabulary):
        """Take the tokens, unknown token and reserved tokens of ``vocabulary``."""
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = (list(vocabulary.reserved_tokens)
                                 if vocabulary.reserved_tokens is not None else None)

    def _set_idx_to_vec_by_embeddings(self, token_embeddings, vocab_len, vocab_idx_to_token):
        """Set ``idx_to_vec`` to the concatenation, over ``token_embeddings``,
        of each embedding's vectors for ``vocab_idx_to_token`` (row 0: each
        embedding's unknown vector; other rows: its vector of the token,
        which is its unknown vector for a token it does not know)."""
        parts = []
        for embed in token_embeddings:
            table = embed.idx_to_vec.asnumpy()
            lookup = embed.token_to_idx
            indices = [C.UNKNOWN_IDX] + [lookup.get(token, C.UNKNOWN_IDX)
                                         for token in vocab_idx_to_token[1:vocab_len]]
            parts.append(table[np.asarray(indices, dtype=np.int64)])
        matrix = np.concatenate(parts, axis=1) if parts else np.zeros((vocab_len, 0), np.float32)
        self._vec_len = int(matrix.shape[1])
        self._idx_to_vec = nd.array(matrix.astype(np.float32, copy=False))

    def _build_embedding_for_vocabulary(self, vocabulary):
        """Re-index on ``vocabulary``: its tokens, each with this embedding's
        vector (the unknown vector for a token the embedding lacks)."""
        if vocabulary is None:
            return
        _check(isinstance(vocabulary, vocab.Vocabulary),
               "The argument `vocabulary` must be an instance of "
               "mxnet.contrib.text.vocab.Vocabulary.")
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    # ------------------------------------------------------------------
    # Public API
    # ------------------------------------------------------------------

    @property
    def vec_len(self):
        """int: the length of every embedding vector."""
        return self._vec_len

    @property
    def idx_to_vec(self):
        """NDArray of shape ``(len(self), vec_len)``: row ``i`` is the vector
        of the token at index ``i``."""
        return self._idx_to_vec

    def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
        """The vector of a token (1-D NDArray of ``vec_len``), or the vectors
        of a list of tokens (2-D NDArray, one row per token). Unknown tokens
        get row 0. With ``lower_case_backup=True`` a token not found as
        written is looked up in lower case."""
        _check(self._idx_to_vec is not None,
               "The property `idx_to_vec` has not been properly set.")
        single = not isinstance(tokens, list)
        if single:
            tokens = [tokens]
        lookup = self._token_to_idx
        if lower_case_backup:
            indices = [lookup[t] if t in lookup
                       else lookup.get(t.lower() if isinstance(t, str) else t, C.UNKNOWN_IDX)
                       for t in tokens]
        else:
            indices = [lookup.get(t, C.UNKNOWN_IDX) for t in tokens]
        if not indices:
            return nd.zeros((0, self._vec_len), dtype=self._idx_to_vec.dtype)
        table = self._idx_to_vec
        vecs = nd.Embedding(nd.array(indices), table, table.shape[0], table.shape[1])
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens, new_vectors):
        """Overwrite the vectors of ``tokens`` (a token or a list) with
        ``new_vectors``, an NDArray of shape ``(len(tokens), vec_len)`` (a
        single token also takes a 1-D vector). A token must be indexed:
        to change the unknown vector, name ``unknown_token`` itself;
        any other unknown token raises ValueError."""
        _check(self._idx_to_vec is not None,
               "The property `idx_to_vec` has not been properly set.")
        if isinstance(new_vectors, np.ndarray):
            new_vectors = nd.array(new_vectors)
        if not isinstance(tokens, list) or len(tokens) == 1:
            _check(isinstance(new_vectors, nd.NDArray) and len(new_vectors.shape) in (1, 2),
                   "`new_vectors` must be a 1-D or 2-D NDArray if `tokens` is a singleton.")
            if not isinstance(tokens, list):
                tokens = [tokens]
            if len(new_vectors.shape) == 1:
                new_vectors = nd.expand_dims(new_vectors, axis=0)
        else:
            _check(isinstance(new_vectors, nd.NDArray) and len(new_vectors.shape) == 2,
                   "`new_vectors` must be a 2-D NDArray if `tokens` is a list of multiple "
                   "strings.")
        _check(tuple(new_vectors.shape) == (len(tokens), self._vec_len),
               f"The length of new_vectors must be equal to the number of tokens and the width "
               f"of new_vectors must be equal to the dimension of embeddings of the glossary: "
               f"expected shape {(len(tokens), self._vec_len)}, got {tuple(new_vectors.shape)}.")
        indices = []
        for token in tokens:
            if token not in self._token_to_idx:
                raise ValueError(f"Token {token} is unknown. To update the embedding vector for "
                                 "an unknown token, please specify it explicitly as the "
                                 f"`unknown_token` {self._idx_to_token[C.UNKNOWN_IDX]} in "
                                 "`tokens`. This is to avoid unintended updates.")
            indices.append(self._token_to_idx[token])
        if not indices:
            return
        self._idx_to_vec[nd.array(indices)] = new_vectors.astype(self._idx_to_vec.dtype)


#: Public name of the token embedding base class (MXNet calls it ``_TokenEmbedding``).
TokenEmbedding = _TokenEmbedding

_DEFAULT_EMBEDDING_ROOT = os.path.join(data_dir(), "embeddings")


@register
class GloVe(_TokenEmbedding):
    """The GloVe word vectors (Pennington, Socher and Manning, 2014;
    https://nlp.stanford.edu/projects/glove/, PDDL licence).

    Reads ``<embedding_root>/glove/<pretrained_file_name>``; when only the
    archive MXNet downloads (``glove.6B.zip`` for ``glove.6B.50d.txt``, ...)
    is there, it is extracted first. oxnet does not download: when neither
    is present an MXNetError names the path expected.

    Parameters
    ----------
    pretrained_file_name : str, default 'glove.840B.300d.txt'
        One of ``get_pretrained_file_names('glove')``.
    embedding_root : str, default $MXNET_HOME/embeddings (~/.mxnet/embeddings)
        The folder holding ``glove/``.
    init_unknown_vec : callable, default nd.zeros
        Called as ``init_unknown_vec(shape=vec_len)`` for the unknown vector.
    vocabulary : Vocabulary or None, default None
        When given, index exactly its tokens (with their GloVe vectors);
        otherwise every token of the file.
    **kwargs
        Passed to :class:`Vocabulary` (``unknown_token``, ...).
    """

    pretrained_archive_name_sha1 = C.GLOVE_ARCHIVE_SHA1
    pretrained_file_name_sha1 = C.GLOVE_FILE_SHA1

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        corpus = pretrained_file_name.split(".")[1]
        for archive in cls.pretrained_archive_name_sha1:
            if archive.split(".")[1] == corpus:
                return archive
        return pretrained_file_name

    def __init__(self, pretrained_file_name="glove.840B.300d.txt",
                 embedding_root=_DEFAULT_EMBEDDING_ROOT, init_unknown_vec=nd.zeros,
                 vocabulary=None, **kwargs):
        GloVe._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        path = GloVe._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


@register
class FastText(_TokenEmbedding):
    """The fastText word vectors (Bojanowski et al., 2017; https://fasttext.cc/,
    CC BY-SA 3.0).

    Reads ``<embedding_root>/fasttext/<pretrained_file_name>``; when only the
    archive MXNet downloads (``wiki.en.zip`` for ``wiki.en.vec``) is there, it
    is extracted first. oxnet does not download: when neither is present an
    MXNetError names the path expected. The header line of a ``.vec`` file
    (counts) is skipped.

    Parameters
    ----------
    pretrained_file_name : str, default 'wiki.simple.vec'
        One of ``get_pretrained_file_names('fasttext')``.
    embedding_root : str, default $MXNET_HOME/embeddings (~/.mxnet/embeddings)
        The folder holding ``fasttext/``.
    init_unknown_vec : callable, default nd.zeros
        Called as ``init_unknown_vec(shape=vec_len)`` for the unknown vector.
    vocabulary : Vocabulary or None, default None
        When given, index exactly its tokens (with their fastText vectors);
        otherwise every token of the file.
    **kwargs
        Passed to :class:`Vocabulary` (``unknown_token``, ...).
    """

    pretrained_archive_name_sha1 = C.FASTTEXT_ARCHIVE_SHA1
    pretrained_file_name_sha1 = C.FASTTEXT_FILE_SHA1

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        return pretrained_file_name.rsplit(".", 1)[0] + ".zip"

    def __init__(self, pretrained_file_name="wiki.simple.vec",
                 embedding_root=_DEFAULT_EMBEDDING_ROOT, init_unknown_vec=nd.zeros,
                 vocabulary=None, **kwargs):
        FastText._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        path = FastText._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


class CustomEmbedding(_TokenEmbedding):
    """Token vectors from a local text file, one token per line:
    ``token<elem_delim>v1<elem_delim>v2...``.

    Parameters
    ----------
    pretrained_file_path : str
        The file.
    elem_delim : str, default ' '
        What separates the token and the numbers on a line.
    encoding : str, default 'utf8'
        The file's encoding.
    init_unknown_vec : callable, default nd.zeros
        Called as ``init_unknown_vec(shape=vec_len)`` for the unknown vector
        when the file has no line for ``unknown_token``.
    vocabulary : Vocabulary or None, default None
        When given, index exactly its tokens (with the file's vectors);
        otherwise every token of the file.
    **kwargs
        Passed to :class:`Vocabulary` (``unknown_token``, ``reserved_tokens``).

    Examples
    --------
    >>> e = CustomEmbedding('vectors.txt', elem_delim='\\t')   # doctest: +SKIP
    >>> e.get_vecs_by_tokens(['hello', 'world'])              # doctest: +SKIP
    """

    def __init__(self, pretrained_file_path, elem_delim=" ", encoding="utf8",
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """One or several token embeddings over one vocabulary: the tokens of
    ``vocabulary``, each with the concatenation of its vectors in every
    embedding of ``token_embeddings`` (an embedding's unknown vector where it
    lacks the token; row 0 joins the embeddings' unknown vectors).

    Parameters
    ----------
    vocabulary : Vocabulary
        The tokens to index.
    token_embeddings : token embedding or list of them
        The embeddings whose vectors are joined, in order.
    """

    def __init__(self, vocabulary, token_embeddings):
        _check(isinstance(vocabulary, vocab.Vocabulary),
               "The argument `vocabulary` must be an instance of "
               "mxnet.contrib.text.indexer.Vocabulary.")
        if not isinstance(token_embeddings, list):
            token_embeddings = [token_embeddings]
        _check(len(token_embeddings) > 0, "`token_embeddings` must not be empty.")
        for embed in token_embeddings:
            _check(isinstance(embed, _TokenEmbedding) and embed.idx_to_vec is not None,
                   "The argument `token_embeddings` must be an instance or a list of instances "
                   "of `mxnet.contrib.text.embedding.TextEmbedding` whose embedding vectors will "
                   "be loaded or concatenated-then-loaded to map to the indexed tokens.")
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(token_embeddings, len(self), self.idx_to_token)
