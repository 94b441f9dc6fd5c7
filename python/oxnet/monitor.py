"""``mx.monitor.Monitor``: statistics of the arrays an executor computes,
every ``interval`` batches (MXNet 1.9.1's class).

``install(exe)`` hooks a bound executor (``Module.install_monitor`` does it
for a module): while active, every operator output whose name matches
``pattern`` goes through ``stat_func`` (default: ``norm(x) / sqrt(size)``);
``toc()`` adds the arguments and auxiliary states matching it and returns
``(step, name, text)`` rows; ``toc_print()`` logs them.

::

    mon = mx.monitor.Monitor(100, pattern='.*weight|.*output')
    mod.fit(train, monitor=mon, ...)
"""

import logging
import math
import re

__all__ = ["Monitor"]


def _norm_stat(x):
    from . import ndarray
    return ndarray.norm(x) / math.sqrt(x.size)


class Monitor:
    """Collects ``stat_func`` of matching arrays every ``interval`` steps."""

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.stat_func = stat_func or _norm_stat
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

        def stat_helper(name, array):
            if self.activated and self.re_prog.match(name):
                self.queue.append((self.step, name, self.stat_func(array)))
        self.stat_helper = stat_helper

    def install(self, exe):
        """Hooks the executor ``exe`` (several may be installed)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Starts a batch: collects during it when the step is a multiple of ``interval``."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Ends the batch: the collected ``(step, name, statistic text)`` rows
        (the arguments and auxiliary states added), or [] when inactive."""
        if not self.activated:
            return []
        for exe in self.exes:
            for arrays in (exe.arg_dict, exe.aux_dict):
                for name, array in arrays.items():
                    if array is not None and self.re_prog.match(name):
                        self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda row: row[1])
        rows = []
        for step, name, values in self.queue:
            values = values if isinstance(values, list) else [values]
            text = "".join((str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t" for v in values)
            rows.append((step, name, text))
        self.queue = []
        return rows

    def toc_print(self):
        """Ends the batch and logs its rows."""
        for step, name, text in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))
