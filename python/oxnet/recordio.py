"""RecordIO files (``mx.recordio``): MXNet's ``.rec`` format, byte for
byte, read and written in Rust (``oxnet_io::recordio``), and the image
record helpers.

- :class:`MXRecordIO`: records in order (``flag`` ``"r"`` or ``"w"``);
- :class:`MXIndexedRecordIO`: with an ``.idx`` file of ``key<TAB>offset``
  lines, for random access by key;
- :func:`pack` / :func:`unpack`: an :class:`IRHeader` (``flag``, ``label``,
  ``id``, ``id2``) before the payload, a label array after it when
  ``flag`` > 0, as MXNet lays them out;
- :func:`pack_img` / :func:`unpack_img`: the payload an encoded image
  (JPEG or PNG), the array in OpenCV's BGR order as MXNet's are.

Files written here are read by MXNet 1.9.1 and the other way round.
"""

import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from . import _oxnet

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img"]


class MXRecordIO:
    """Reads (``flag="r"``) or writes (``flag="w"``) the records of the
    RecordIO file ``uri`` in order. Opened at creation; ``close`` and
    ``reset`` (back to the start) as MXNet's. It pickles (a reader reopens
    in the other process)."""

    def __init__(self, uri, flag):
        self.uri = str(uri)
        self.flag = flag
        self.handle = None
        self.pid = None
        self.is_open = False
        self.writable = None
        self.open()

    def open(self):
        """Opens the file (a writer truncates it)."""
        if self.flag not in ("r", "w"):
            raise ValueError("Invalid flag %s" % self.flag)
        self.handle = _oxnet.RecordFile(self.uri, self.flag)
        self.writable = self.flag == "w"
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # pylint: disable=broad-except
            pass

    def __getstate__(self):
        """Closes the file and keeps what reopens it."""
        is_open = self.is_open
        self.close()
        state = dict(self.__dict__)
        state["is_open"] = is_open
        state["handle"] = None
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        is_open = state["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self):
        """Closes the file (a writer's records are on disk after it)."""
        if not self.is_open:
            return
        if self.writable:
            self.handle.flush()
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Closes and reopens the file: a reader starts again at the first record."""
        self.close()
        self.open()

    def _require_open(self):
        if not self.is_open:
            raise ValueError(f"the RecordIO file {self.uri!r} is closed")

    def write(self, buf):
        """Appends the record ``buf`` (bytes)."""
        assert self.writable
        self._require_open()
        self._check_pid(allow_reset=False)
        self.handle.write(bytes(buf))

    def read(self):
        """The next record (bytes), or None at the end of the file."""
        assert not self.writable
        self._require_open()
        self._check_pid(allow_reset=True)
        return self.handle.read()


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index ``idx_path`` of ``key<TAB>offset``
    lines: :meth:`read_idx` reads the record of a key, :meth:`write_idx`
    writes a record and indexes it. ``keys`` lists the keys in file order;
    ``key_type`` converts the keys read from the index."""

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = str(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)  # pylint: disable=consider-using-with
        if not self.writable:
            for number, line in enumerate(self.fidx, 1):
                parts = line.strip().split("\t")
                if not parts or parts == [""]:
                    continue
                if len(parts) < 2:
                    raise ValueError(f"{self.idx_path}, line {number}: expected key<TAB>offset, got {line!r}")
                key = self.key_type(parts[0])
                self.idx[key] = int(parts[1])
                self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        super().close()
        self.fidx.close()

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Moves the reader to the record of key ``idx``."""
        assert not self.writable
        self._require_open()
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError(f"{idx!r} is not a key of {self.idx_path}")
        self.handle.seek(self.idx[idx])

    def tell(self):
        """The offset the next record is written at."""
        assert self.writable
        self._require_open()
        return self.handle.tell()

    def read_idx(self, idx):
        """The record of key ``idx``. The seek and the read are one step,
        so threads sharing this reader may read keys concurrently."""
        assert not self.writable
        self._require_open()
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError(f"{idx!r} is not a key of {self.idx_path}")
        return self.handle.read_at(self.idx[idx])

    def write_idx(self, idx, buf):
        """Writes the record ``buf`` under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header of an image record: ``flag`` (the number of
labels stored after the header when there are several, else 0), ``label``
(a number, or an array of labels), ``id`` and ``id2`` (64-bit ids)."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """A record of ``header`` (an :class:`IRHeader` or a tuple of its four
    fields) and the bytes ``s``; a label array goes after the header, its
    length in ``flag``."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """The :class:`IRHeader` and payload of the record ``s``."""
    if len(s) < _IR_SIZE:
        raise ValueError(f"a record of {len(s)} bytes is shorter than its {_IR_SIZE}-byte header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < header.flag * 4:
            raise ValueError(f"the header says {header.flag} labels follow, but the record holds {len(s)} bytes")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s, iscolor=-1):
    """The :class:`IRHeader` and the image (a numpy ``uint8`` array, BGR
    colour as OpenCV's) of an image record; ``iscolor`` 1 colour, 0 grey,
    -1 as stored."""
    header, s = unpack(s)
    img = _oxnet.image_decode(bytes(s), int(iscolor), True)
    arr = img.asnumpy()
    if arr.ndim == 3 and arr.shape[2] == 1 and int(iscolor) <= 0:
        arr = arr[:, :, 0]  # OpenCV gives a grey image two axes
    return header, arr


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """An image record: ``header`` and ``img`` (a ``uint8`` array, BGR
    colour as OpenCV's, or grey) encoded as ``img_fmt`` (``.jpg`` with
    ``quality``, or ``.png``)."""
    from .ndarray import array
    arr = np.ascontiguousarray(img)
    if arr.dtype != np.uint8:
        raise TypeError(f"pack_img takes a uint8 image, got {arr.dtype}")
    buf = _oxnet.image_encode(array(arr, dtype="uint8"), img_fmt, int(quality), True)
    return pack(header, buf)
