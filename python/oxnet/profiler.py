"""The profiler (``mx.profiler``), as in MXNet 1.9.1: record what the engine
runs, write it as a Chrome trace (open it in chrome://tracing or
https://ui.perfetto.dev), and read aggregate statistics::

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename='trace.json')
    mx.profiler.set_state('run')
    ...                                   # train
    mx.profiler.set_state('stop')
    mx.profiler.dump()                    # writes trace.json
    print(mx.profiler.dumps())            # the table of operators and their times

Recorded: one event per operator call (built-ins, Rust custom operators,
extension-library operators), per node of a graph run by an executor or a
hybridized block (``profile_symbolic``), per backward kernel
(``_backward_<op>``); a Python custom operator's own code as
``<op_type>::pure_python`` in the ``Custom Operator`` domain and the
operators it calls as ``<op_type>::<op>``; memory in use as the counter
``Memory: cpu/0`` (``profile_memory``); calls into the engine from Python
(``profile_api``); and the ``Task``, ``Frame``, ``Event``, ``Counter`` and
``Marker`` objects below. The recording is in Rust, per thread; while the
profiler is stopped or paused it costs one atomic load per call.

Where oxnet differs from MXNet (see docs/profiler.md): the aggregate
statistics are always kept (``aggregate_stats`` costs nothing, so ``dumps``
works without it); each ``dump`` writes a complete, valid JSON file; a
counter's ``Avg`` is the mean of its values and its ``Total`` its last value.

``MXNET_PROFILER_AUTOSTART=1`` in the environment starts the profiler (with
the default configuration) when oxnet is imported and writes the trace
when the process exits, as in MXNet.
"""

import atexit
import contextlib
import os
import threading
import warnings

from . import _oxnet
from .base import MXNetError

__all__ = [
    "set_config", "set_state", "get_state", "dump", "dumps", "clear", "pause", "resume", "scope",
    "Domain", "Task", "Frame", "Event", "Counter", "Marker",
    "profiler_set_config", "profiler_set_state", "dump_profile", "set_kvstore_handle",
]

_BOOL_KEYS = ("profile_all", "profile_symbolic", "profile_imperative", "profile_memory",
              "profile_api", "continuous_dump", "aggregate_stats")
_DEFAULTS = dict(profile_all=False, profile_symbolic=True, profile_imperative=True,
                 profile_memory=True, profile_api=True, filename="profile.json",
                 continuous_dump=True, dump_period=1.0, aggregate_stats=False,
                 profile_process="worker")
_state = {"ran": False}


def _as_bool(key, value):
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise MXNetError(f"profiler.set_config: `{key}` must be a boolean, got {value!r}")
    return bool(value)


def _check_process(fn, profile_process):
    if profile_process == "server":
        raise MXNetError(f"profiler.{fn}: profile_process='server' needs a distributed kvstore server, "
                         "which oxnet does not run; profile the worker")
    if profile_process != "worker":
        raise MXNetError(f"profiler.{fn}: profile_process must be 'worker' or 'server', not {profile_process!r}")


def set_kvstore_handle(handle):
    """Accepted for compatibility: oxnet has no kvstore server to profile."""
    del handle


def set_config(**kwargs):
    """Sets the profiler's configuration (keyword arguments only).

    ``filename`` (the trace file, default ``profile.json``),
    ``profile_all``, ``profile_symbolic``, ``profile_imperative``,
    ``profile_memory``, ``profile_api`` (what to record; all but
    ``profile_all`` default to True, as in MXNet), ``continuous_dump``
    (dumps keep the events, so the file grows with each), ``dump_period``
    (accepted; oxnet dumps when asked), ``aggregate_stats``,
    ``profile_process`` (``'worker'``). Values may be given as strings, as
    MXNet accepts them. An unknown keyword is an error."""
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError(f"profiler.set_config: unknown argument(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(_DEFAULTS))}")
    cfg = dict(_DEFAULTS)
    cfg.update(kwargs)
    _check_process("set_config", cfg["profile_process"])
    flags = {k: _as_bool(k, cfg[k]) for k in _BOOL_KEYS}
    every = flags["profile_all"]
    try:
        period = float(cfg["dump_period"])
    except (TypeError, ValueError):
        raise MXNetError(f"profiler.set_config: `dump_period` must be a number, got {cfg['dump_period']!r}") from None
    if flags["continuous_dump"] and period <= 0:
        raise MXNetError("profiler.set_config: `dump_period` must be positive")
    _oxnet.profiler_set_config(
        every or flags["profile_imperative"], every or flags["profile_symbolic"],
        every or flags["profile_memory"], every or flags["profile_api"],
        flags["aggregate_stats"], str(cfg["filename"]), flags["continuous_dump"])


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated form of :func:`set_config`: ``mode`` 'symbolic' or 'all'."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use profiler.set_config() instead")
    if mode not in ("symbolic", "all", "imperative", "memory", "api"):
        raise MXNetError(f"profiler.profiler_set_config: unknown mode {mode!r}")
    set_config(**{"profile_" + mode: True, "filename": filename})


def set_state(state="stop", profile_process="worker"):
    """Runs (``'run'``) or stops (``'stop'``) the profiler."""
    _check_process("set_state", profile_process)
    if state not in ("run", "stop"):
        raise MXNetError(f"profiler.set_state: state must be 'run' or 'stop', not {state!r}")
    if state == "run":
        _state["ran"] = True
    _oxnet.profiler_set_state(state == "run")


def get_state():
    """``'run'`` or ``'stop'``."""
    return "run" if _oxnet.profiler_is_running() else "stop"


def profiler_set_state(state="stop"):
    """Deprecated form of :func:`set_state`."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use profiler.set_state() instead")
    set_state(state)


def dump(finished=True, profile_process="worker"):
    """Writes what was recorded to the trace file (a complete JSON file each
    time). ``finished`` drops the written events afterwards; otherwise, with
    ``continuous_dump``, a later dump writes them again with the newer ones.
    An error before the profiler has ever run, as in MXNet."""
    _check_process("dump", profile_process)
    if not _state["ran"]:
        raise MXNetError("profiler.dump: the profiler hasn't been run; configure it and "
                         "set_state('run') first")
    _oxnet.profiler_dump(bool(finished))


def dump_profile():
    """Deprecated form of ``dump(True)``."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead")
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics of what was recorded (since the last reset):
    per domain (``operator``, ``Custom Operator``, your domains, ``Device
    Storage`` for memory), per name: count, total, min, max and mean time in
    ms (memory in kB). ``format`` 'table' or 'json'; ``sort_by`` 'total',
    'avg', 'min', 'max' or 'count'; ``ascending``; ``reset`` starts the
    statistics afresh afterwards."""
    for arg, value in (("reset", reset), ("ascending", ascending)):
        if value not in (False, True):
            raise MXNetError(f"profiler.dumps: `{arg}` must be False or True, not {value!r}")
    return _oxnet.profiler_dumps(bool(reset), format, sort_by, bool(ascending))


def clear():
    """Forgets every event recorded so far and the statistics (oxnet's
    addition: a long run clears between the windows it profiles, so that
    memory stays bounded)."""
    _oxnet.profiler_clear()


def pause(profile_process="worker"):
    """Pauses recording (the state stays 'run')."""
    _check_process("pause", profile_process)
    _oxnet.profiler_pause(True)


def resume(profile_process="worker"):
    """Resumes recording after :func:`pause`."""
    _check_process("resume", profile_process)
    _oxnet.profiler_pause(False)


class Domain:
    """A named group of tasks, frames, counters and markers (the events'
    category in the trace)."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A :class:`Task` of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A :class:`Frame` of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A :class:`Counter` of this domain."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A :class:`Marker` of this domain."""
        return Marker(self, name)


class _Span:
    """Something timed between ``start()`` and ``stop()`` (also a context manager)."""

    _category = None

    def __init__(self, name):
        self.name = str(name)
        self._starts = threading.local()

    def _domain_name(self):
        return self._category

    def start(self):
        """Starts timing."""
        stack = getattr(self._starts, "stack", None)
        if stack is None:
            stack = self._starts.stack = []
        stack.append(_oxnet.profiler_now())

    def stop(self):
        """Stops timing and records the span (when the profiler runs)."""
        stack = getattr(self._starts, "stack", None)
        if not stack:
            raise MXNetError(f"profiler: {type(self).__name__} {self.name!r} was stopped without being started")
        begin = stack.pop()
        _oxnet.profiler_span(self._domain_name(), self.name, begin, _oxnet.profiler_now())

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __str__(self):
        return self.name


class Task(_Span):
    """A unit of work in ``domain``, timed between ``start()`` and
    ``stop()``; every pass is summed into the same statistics."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = domain

    def _domain_name(self):
        return str(self.domain)


class Frame(_Span):
    """A frame in ``domain`` (category ``<domain>,frame``, as MXNet):
    one pass of a repeated piece of work, such as one training step."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = domain

    def _domain_name(self):
        return f"{self.domain},frame"


class Event(_Span):
    """A span of code with no domain (category ``event``)."""

    _category = "event"


class Counter:
    """A value tracked over time in ``domain`` (a counter track in the trace)."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = str(name)
        self._value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        """Sets the counter."""
        self._value = int(value)
        _oxnet.profiler_counter(str(self.domain), self.name, self._value)

    def increment(self, delta=1):
        """Adds ``delta``."""
        self.set_value(self._value + int(delta))

    def decrement(self, delta=1):
        """Subtracts ``delta``."""
        self.set_value(self._value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant in ``domain`` (category ``<domain>,instant_marker``)."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = str(name)

    def mark(self, scope="process"):
        """Records the instant; ``scope`` 'global', 'process', 'thread',
        'task' or 'marker' (the last two mark the thread)."""
        _oxnet.profiler_marker(f"{self.domain},instant_marker", self.name, scope)


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=False):
    """Times the enclosed block as a span named ``name`` in the ``scope``
    domain (MXNet 2's ``profiler.scope`` names memory allocations; here the
    span shows which operators ran inside it). ``append_mode`` nests the
    name under the enclosing scope's (``outer:inner:``)."""
    stack = _scopes.__dict__.setdefault("stack", [])
    full = (stack[-1] + name) if (append_mode and stack) else name
    stack.append(full)
    begin = _oxnet.profiler_now()
    try:
        yield
    finally:
        stack.pop()
        _oxnet.profiler_span("scope", full, begin, _oxnet.profiler_now())


_scopes = threading.local()


def _autostart():
    """MXNet's ``MXNET_PROFILER_AUTOSTART=1``: run from import, dump at exit."""
    if os.environ.get("MXNET_PROFILER_AUTOSTART", "0").strip() not in ("1", "true", "True"):
        return
    set_config()
    set_state("run")

    def finish():
        set_state("stop")
        dump(True)

    atexit.register(finish)


_autostart()
