"""``mx.notebook``: training callbacks for Jupyter notebooks (MXNet 1.x's
``mxnet.notebook``). :mod:`.callback` holds ``PandasLogger`` (metrics into
pandas DataFrames) and the live bokeh charts ``LiveLearningCurve`` and
``LiveTimeSeries``. pandas and bokeh are imported when a callback that
needs them is created, so ``import oxnet.notebook`` works without them."""

from . import callback

__all__ = ["callback"]
