"""Gluon helpers (``mx.gluon.utils``): splitting a batch over devices,
rescaling gradients by their global norm, checking a file's SHA-1,
downloading a file (``download``, through Python's ``urllib``: http,
https, ftp and file URLs), ``replace_file`` and ``shape_is_known``.
"""

import hashlib
import os
import ssl
import urllib.request
import uuid
import warnings

import numpy as np

from .. import ndarray

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file",
           "shape_is_known"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Cuts ``data`` (an NDArray) into ``num_slice`` pieces along
    ``batch_axis``, for data parallelism (one piece per device).

    With ``even_split`` (the default) the axis length must be a multiple of
    ``num_slice``; otherwise the first ``length % num_slice`` pieces get one
    more element. Always returns a list, even for one piece.
    """
    num_slice = int(num_slice)
    if num_slice <= 0:
        raise ValueError(f"split_data: num_slice must be positive, got {num_slice}")
    shape = data.shape
    if not -len(shape) <= batch_axis < len(shape):
        raise ValueError(f"split_data: batch_axis {batch_axis} is out of range for data of shape {shape}")
    size = shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"split_data: data of shape {shape} cannot be split evenly into {num_slice} slices "
            f"along axis {batch_axis}; use a batch size that is a multiple of {num_slice} or "
            "even_split=False"
        )
    step, extra = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + step + (1 if i < extra else 0))
    if num_slice == 1:
        return [data]
    return [
        ndarray.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1])
        for i in range(num_slice)
    ]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits ``data`` as ``split_data`` does, one piece per context of
    ``ctx_list``, and puts each piece on its context. ``data`` may also be a
    numpy array or a list (copied into an NDArray first)."""
    ctx_list = list(ctx_list)
    if not ctx_list:
        raise ValueError("split_and_load: ctx_list is empty")
    if not isinstance(data, ndarray.NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    pieces = split_data(data, len(ctx_list), batch_axis, even_split)
    return [piece.as_in_context(ctx) for piece, ctx in zip(pieces, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescales ``arrays`` in place so that their global 2-norm (the norm of
    all their elements taken together) is at most ``max_norm``.

    Each array is multiplied by ``min(1, max_norm / (norm + 1e-8))``, computed
    with oxnet operators. Returns the norm before clipping: a float when
    ``check_isfinite`` (which also warns when it is NaN or infinite), else an
    NDArray of shape ``(1,)`` (no value is read back).
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("clip_global_norm: no arrays given")
    ctx = arrays[0].context
    # Sums of squares add up in float32, or float64 when any array is float64.
    acc = "float64" if any(np.dtype(a.dtype) == np.float64 for a in arrays) else "float32"
    squares = []
    for arr in arrays:
        flat = arr.reshape((-1,))
        square = ndarray.dot(flat, flat).reshape((1,)).astype(acc)
        squares.append(square.as_in_context(ctx))
    total = ndarray.sqrt(ndarray.add_n(*squares) if len(squares) > 1 else squares[0])
    if check_isfinite:
        total_value = float(total.asnumpy()[0])
        if not np.isfinite(total_value):
            warnings.warn(
                UserWarning("clip_global_norm: the norm is NaN or infinite; the clipped arrays are undefined"),
                stacklevel=2,
            )
    scale = ndarray.minimum(float(max_norm) / (total + 1e-8), 1.0)
    for arr in arrays:
        arr *= scale.as_in_context(arr.context).astype(arr.dtype)
    if check_isfinite:
        return total_value
    return total


def check_sha1(filename, sha1_hash):
    """True when the SHA-1 digest of the file's content equals ``sha1_hash``
    (hexadecimal)."""
    digest = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest() == sha1_hash


#: Seconds ``download`` waits for the server at each step before it gives
#: the attempt up (a silent network is then an error, not a hang).
DOWNLOAD_TIMEOUT = 60.0


def replace_file(src, dst):
    """Moves ``src`` over ``dst`` in one step (atomic on one file system)."""
    os.replace(src, dst)


def shape_is_known(shape):
    """True when every dimension of ``shape`` is known: not 0 under MXNet
    1.x's shape semantics (-1 under ``mx.np_shape``); an empty shape is
    known only under the NumPy semantics."""
    from ..util import is_np_shape

    if shape is None:
        return False
    unknown = -1 if is_np_shape() else 0
    if len(shape) == 0:
        return unknown == -1
    for dim in shape:
        if dim == unknown:
            return False
        if dim < unknown:
            raise ValueError(f"shape_is_known: dimensions cannot be below {unknown}, got {dim} in {shape}")
    return True


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Downloads ``url`` to ``path`` (a file, or a folder to put the URL's
    file name in; default: that name here) unless the file is there already
    (and matches ``sha1_hash`` when given) or ``overwrite``; retries
    ``retries`` times; returns the file's path. The file appears whole or
    not at all (written aside, then moved in place). A failure after the
    retries raises an error naming the URL and the cause."""
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise ValueError(f"download: cannot name a file after {url!r}; give `path`")
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    if retries < 0:
        raise ValueError(f"download: retries must be at least 0, got {retries}")
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). "
                      "Adding certificate verification is strongly advised.")
    if not (overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    os.makedirs(os.path.dirname(os.path.abspath(fname)), exist_ok=True)
    context = None if verify_ssl else ssl._create_unverified_context()  # pylint: disable=protected-access
    last_error = None
    for attempt in range(retries + 1):
        tmp = f"{fname}.{uuid.uuid4()}"
        try:
            print(f"Downloading {fname} from {url}...")
            with urllib.request.urlopen(url, context=context, timeout=DOWNLOAD_TIMEOUT) as response, \
                    open(tmp, "wb") as out:
                status = getattr(response, "status", None)
                if status is not None and status != 200:
                    raise RuntimeError(f"the server answered {status}")
                for chunk in iter(lambda: response.read(1 << 20), b""):
                    out.write(chunk)
            if sha1_hash and not check_sha1(tmp, sha1_hash):
                raise UserWarning(f"File {fname} is downloaded but the content hash does not match. "
                                  "The repo may be outdated or download may be incomplete. If the "
                                  '"repo_url" is overridden, consider switching to the default repo.')
            replace_file(tmp, fname)
            return fname
        except Exception as e:  # pylint: disable=broad-except
            last_error = e
            if os.path.exists(tmp):
                os.remove(tmp)
            if attempt < retries:
                print(f"download failed due to {e!r}, retrying, {retries - attempt} attempt(s) left")
    raise RuntimeError(f"download: could not fetch {url} after {retries + 1} attempt(s): {last_error}") \
        from last_error
