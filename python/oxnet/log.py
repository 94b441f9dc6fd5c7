"""``mx.log``: loggers with MXNet's compact, coloured line format
(``I1128 22:01:04 1234 path/to/file.py:func:12] message``)."""

import logging
import warnings

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

__all__ = ["get_logger", "getLogger", "CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET"]

_LABELS = {CRITICAL: "C", ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D"}


class _Formatter(logging.Formatter):
    """One letter for the level, the time, process, file, function and line,
    coloured by severity (red from WARNING, green for INFO, blue below)."""

    def __init__(self):
        super().__init__(datefmt="%m%d %H:%M:%S")

    @staticmethod
    def _colour(level):
        if level >= logging.WARNING:
            return "\x1b[31m"
        return "\x1b[32m" if level >= logging.INFO else "\x1b[34m"

    def format(self, record):
        self._style._fmt = (self._colour(record.levelno) + _LABELS.get(record.levelno, "U")
                            + "%(asctime)s %(process)d %(pathname)s:%(funcName)s:%(lineno)d]\x1b[0m %(message)s")
        return super().format(record)


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """The logger ``name`` at ``level``, writing to ``filename`` (opened
    with ``filemode``, default ``'a'``) or to standard error in MXNet's
    format. As in MXNet, a named logger is set up once (asking again returns
    it unchanged) and the root logger (``name=None``) is returned as it is."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", False):
        logger._init_done = True
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")  # plain lines: no colour codes in files
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(_Formatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(name=None, filename=None, filemode=None, level=WARNING):  # noqa: N802  (MXNet's name)
    """Deprecated name of :func:`get_logger`."""
    warnings.warn("getLogger is deprecated, Use get_logger instead.", DeprecationWarning, stacklevel=2)
    return get_logger(name, filename, filemode, level)
