"""Normalization layers: ``BatchNorm`` (and ``BatchNormReLU``), each one
built-in operator. :mod:`.basic_layers` re-exports them, where MXNet
defines them.

``BatchNorm`` keeps four parameters: ``gamma`` and ``beta`` (learned) and
``running_mean`` and ``running_var`` (``grad_req='null'``; the operator
updates them as ``running = running * momentum + batch * (1 - momentum)``
when a training-mode pass is differentiated, and uses them in inference
mode). With ``in_channels=0`` their length is inferred from the input.
"""

import numpy as np

from ..block import HybridBlock

__all__ = ["BatchNorm", "BatchNormReLU"]


def _kwargs_repr(kwargs):
    """``k=repr(v)`` for each operator attribute, comma-separated."""
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


class _BatchNorm(HybridBlock):
    """What :class:`BatchNorm` and :class:`BatchNormReLU` share;
    ``fuse_relu`` applies a ReLU to the normalized output."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 fuse_relu=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels
        shape = (in_channels,)
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=shape,
                                     init=gamma_initializer, allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=shape,
                                    init=beta_initializer, allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=shape,
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=shape,
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype):
        """Casts the parameters; float16 is kept as float32, as MXNet does
        (the statistics need the precision)."""
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        out = F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)
        if self.fuse_relu:
            out = F.relu(out)
        return out

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        return f"{self.__class__.__name__}({_kwargs_repr(self._kwargs)}, in_channels={in_channels or None})"


class BatchNorm(_BatchNorm):
    """Batch normalization (Ioffe & Szegedy, 2015) over axis ``axis`` (the
    channels): ``gamma * (x - mean) / sqrt(var + epsilon) + beta``, with
    the batch's statistics in training and the running ones in inference
    (or always, with ``use_global_stats``).

    ``BatchNorm(axis=1, momentum=0.9, epsilon=1e-5, center=True,
    scale=True, use_global_stats=False, beta_initializer='zeros',
    gamma_initializer='ones', running_mean_initializer='zeros',
    running_variance_initializer='ones', in_channels=0)``: ``center=False``
    leaves ``beta`` at its initial value, ``scale=False`` fixes ``gamma``
    at 1 (neither then gets a gradient).
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=False, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)


class BatchNormReLU(_BatchNorm):
    """:class:`BatchNorm` followed by a ReLU (MXNet fuses the two on
    oneDNN; oxnet runs them one after the other). Same arguments."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=True, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
