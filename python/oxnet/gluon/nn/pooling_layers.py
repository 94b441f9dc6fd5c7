"""Pooling layers: ``MaxPool1D/2D/3D``, ``AvgPool1D/2D/3D`` and their
global forms, each one ``Pooling`` operator (imported by MXNet's name from
:mod:`.conv_layers` as well).

``strides`` defaults to ``pool_size``; ``ceil_mode=True`` rounds the
output size up (the operator's ``pooling_convention='full'``);
``count_include_pad`` (average pooling) counts padded positions in the
divisor.
"""

from ...base import numeric_types
from ..block import HybridBlock

__all__ = ["MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D",
           "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D"]

# The layouts each number of spatial axes accepts (channel-first first).
_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _window(cls_name, pool_size, layout, ndim):
    """Checks ``layout`` and returns ``pool_size`` as one entry per axis."""
    allowed = _LAYOUTS[ndim]
    if layout not in allowed:
        raise ValueError(f"{cls_name}: only {' and '.join(allowed)} layouts are valid for {ndim}D pooling, "
                         f"got {layout!r}")
    if isinstance(pool_size, numeric_types):
        return (int(pool_size),) * ndim
    if not isinstance(pool_size, (tuple, list)) or len(pool_size) != ndim:
        raise ValueError(f"{cls_name}: pool_size must be a number or a list of {ndim} ints, got {pool_size!r}")
    return pool_size


class _Pooling(HybridBlock):
    """What every pooling layer shares: the ``Pooling`` operator's
    attributes and the ``__repr__``."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        if isinstance(strides, numeric_types):
            strides = (int(strides),) * len(pool_size)
        if isinstance(padding, numeric_types):
            padding = (int(padding),) * len(pool_size)
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": padding, "global_pool": global_pool,
                        "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        kw = self._kwargs
        return (f"{self.__class__.__name__}(size={kw['kernel']}, stride={kw['stride']}, padding={kw['pad']}, "
                f"ceil_mode={kw['pooling_convention'] == 'full'}, global_pool={kw['global_pool']}, "
                f"pool_type={kw['pool_type']}, layout={kw['layout']})")


class MaxPool1D(_Pooling):
    """Max pooling over the width of ``(batch, channels, width)`` data:
    ``MaxPool1D(pool_size=2, strides=None, padding=0, layout='NCW',
    ceil_mode=False)``."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, **kwargs):
        pool_size = _window(self.__class__.__name__, pool_size, layout, 1)
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout, **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over height and width: ``MaxPool2D(pool_size=(2, 2),
    strides=None, padding=0, layout='NCHW', ceil_mode=False)``."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW", ceil_mode=False, **kwargs):
        pool_size = _window(self.__class__.__name__, pool_size, layout, 2)
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout, **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over depth, height and width: ``MaxPool3D(pool_size=(2,
    2, 2), strides=None, padding=0, ceil_mode=False, layout='NCDHW')``."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False, layout="NCDHW", **kwargs):
        pool_size = _window(self.__class__.__name__, pool_size, layout, 3)
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout, **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over the width: ``AvgPool1D(pool_size=2,
    strides=None, padding=0, layout='NCW', ceil_mode=False,
    count_include_pad=True)``."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, count_include_pad=True,
                 **kwargs):
        pool_size = _window(self.__class__.__name__, pool_size, layout, 1)
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout, count_include_pad,
                         **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over height and width: ``AvgPool2D(pool_size=(2,
    2), strides=None, padding=0, ceil_mode=False, layout='NCHW',
    count_include_pad=True)``."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False, layout="NCHW",
                 count_include_pad=True, **kwargs):
        pool_size = _window(self.__class__.__name__, pool_size, layout, 2)
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout, count_include_pad,
                         **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over depth, height and width: ``AvgPool3D(pool_size=
    (2, 2, 2), strides=None, padding=0, ceil_mode=False, layout='NCDHW',
    count_include_pad=True)``."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False, layout="NCDHW",
                 count_include_pad=True, **kwargs):
        pool_size = _window(self.__class__.__name__, pool_size, layout, 3)
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout, count_include_pad,
                         **kwargs)


def _global(ndim, pool_type):
    """The ``_Pooling`` arguments of a global pooling layer: the whole
    spatial extent in one window per channel."""
    return (1,) * ndim, None, 0, True, True, pool_type


class GlobalMaxPool1D(_Pooling):
    """The maximum over the width: ``(N, C, W) → (N, C, 1)``."""

    def __init__(self, layout="NCW", **kwargs):
        _window(self.__class__.__name__, 1, layout, 1)
        super().__init__(*_global(1, "max"), layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """The maximum over height and width: ``(N, C, H, W) → (N, C, 1, 1)``."""

    def __init__(self, layout="NCHW", **kwargs):
        _window(self.__class__.__name__, 1, layout, 2)
        super().__init__(*_global(2, "max"), layout, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """The maximum over depth, height and width: ``(N, C, D, H, W) → (N, C,
    1, 1, 1)``."""

    def __init__(self, layout="NCDHW", **kwargs):
        _window(self.__class__.__name__, 1, layout, 3)
        super().__init__(*_global(3, "max"), layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """The mean over the width: ``(N, C, W) → (N, C, 1)``."""

    def __init__(self, layout="NCW", **kwargs):
        _window(self.__class__.__name__, 1, layout, 1)
        super().__init__(*_global(1, "avg"), layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """The mean over height and width: ``(N, C, H, W) → (N, C, 1, 1)``."""

    def __init__(self, layout="NCHW", **kwargs):
        _window(self.__class__.__name__, 1, layout, 2)
        super().__init__(*_global(2, "avg"), layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """The mean over depth, height and width: ``(N, C, D, H, W) → (N, C, 1,
    1, 1)``."""

    def __init__(self, layout="NCDHW", **kwargs):
        _window(self.__class__.__name__, 1, layout, 3)
        super().__init__(*_global(3, "avg"), layout, **kwargs)
