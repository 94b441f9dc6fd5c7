"""``mx.contrib.tensorboard``: write training metrics as TensorBoard
scalars (MXNet 1.x's ``mxnet.contrib.tensorboard``).

The event files are written by a ``SummaryWriter`` from ``mxboard`` (as in
MXNet), or else from ``tensorboardX`` or ``torch.utils.tensorboard``,
whichever is installed first in that order; oxnet itself writes none.
"""

import importlib

from ..base import MXNetError

__all__ = ["LogMetricsCallback"]

# where a SummaryWriter(logdir) with add_scalar(tag, value, global_step=) is found, in order
_WRITERS = ("mxboard", "tensorboardX", "torch.utils.tensorboard")


def _summary_writer_class():
    """The first ``SummaryWriter`` class found in :data:`_WRITERS`."""
    for module_name in _WRITERS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        writer = getattr(module, "SummaryWriter", None)
        if writer is not None:
            return writer
    raise MXNetError("LogMetricsCallback: no TensorBoard writer found; install mxboard (`pip install mxboard`), "
                     "tensorboardX (`pip install tensorboardX`) or PyTorch (torch.utils.tensorboard)")


class LogMetricsCallback:
    """A batch-end or eval-end callback that writes the metric values of
    ``param.eval_metric`` as TensorBoard scalars at step ``param.epoch``
    (the way ``callback.Speedometer`` logs them as text).

    Parameters
    ----------
    logging_dir : str
        The directory of the event files (``tensorboard --logdir=...``).
    prefix : str, optional
        Written before each metric name as ``'<prefix>-<name>'``, e.g. to
        tell training and validation curves apart in one chart.

    Raises
    ------
    MXNetError
        At construction when neither mxboard, tensorboardX nor PyTorch is
        installed.

    Examples
    --------
    >>> batch_end = [mx.contrib.tensorboard.LogMetricsCallback('logs/train')]
    >>> eval_end = [mx.contrib.tensorboard.LogMetricsCallback('logs/eval')]
    >>> mod.fit(train, eval_data=val, batch_end_callback=batch_end, eval_end_callback=eval_end, num_epoch=3)
    """

    def __init__(self, logging_dir, prefix=None):
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"LogMetricsCallback: prefix must be a str or None, got {type(prefix).__name__}")
        self.prefix = prefix
        self.summary_writer = _summary_writer_class()(logging_dir)

    def __call__(self, param):
        """Writes every ``(name, value)`` of ``param.eval_metric.get_name_value()``
        (nothing when ``param.eval_metric`` is None)."""
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = f"{self.prefix}-{name}"
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)
