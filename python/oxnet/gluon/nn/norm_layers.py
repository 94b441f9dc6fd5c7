"""Normalization layers: ``BatchNorm`` (and ``BatchNormReLU``),
``InstanceNorm``, ``LayerNorm`` and ``GroupNorm``, each one built-in
operator. :mod:`.basic_layers` re-exports them, where MXNet defines them.

``BatchNorm`` keeps four parameters: ``gamma`` and ``beta`` (learned) and
``running_mean`` and ``running_var`` (``grad_req='null'``; the operator
updates them as ``running = running * momentum + batch * (1 - momentum)``
when a training-mode pass is differentiated, and uses them in inference
mode). With ``in_channels=0`` their length is inferred from the input.
The other three normalize each sample with its own statistics and keep
only ``gamma`` and ``beta``; ``center=False`` / ``scale=False`` leave
``beta`` / ``gamma`` at their initial values (``grad_req='null'``).
"""

import numpy as np

from ..block import HybridBlock

__all__ = ["BatchNorm", "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm"]


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


def _affine_params(block, shape, center, scale, beta_initializer, gamma_initializer):
    """Adds ``gamma`` and ``beta`` of ``shape`` to ``block`` (trained only
    when ``scale`` / ``center``)."""
    block.gamma = block.params.get("gamma", grad_req="write" if scale else "null", shape=shape,
                                   init=gamma_initializer, allow_deferred_init=True)
    block.beta = block.params.get("beta", grad_req="write" if center else "null", shape=shape,
                                  init=beta_initializer, allow_deferred_init=True)


class InstanceNorm(HybridBlock):
    """Instance normalization (Ulyanov et al., 2016): each sample and
    channel (axis ``axis``) normalized over the remaining axes, then
    ``gamma * x + beta`` per channel.

    ``InstanceNorm(axis=1, epsilon=1e-5, center=True, scale=False,
    beta_initializer='zeros', gamma_initializer='ones', in_channels=0)``.
    """

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _affine_params(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        # the operator normalizes per axis-1 channel: move the channel axis there and back
        x = F.swapaxes(x, dim1=1, dim2=self._axis)
        out = F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        return F.swapaxes(out, dim1=1, dim2=self._axis)

    def __repr__(self):
        return f"{self.__class__.__name__}({_kwargs_repr(self._kwargs)}, in_channels={self.gamma.shape[0]})"


class LayerNorm(HybridBlock):
    """Layer normalization (Ba et al., 2016): each sample normalized along
    ``axis`` (default the last), then ``gamma * x + beta`` along that axis.

    ``LayerNorm(axis=-1, epsilon=1e-5, center=True, scale=True,
    beta_initializer='zeros', gamma_initializer='ones', in_channels=0,
    prefix=None, params=None)``.
    """

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _affine_params(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        return f"{self.__class__.__name__}({_kwargs_repr(self._kwargs)}, in_channels={self.gamma.shape[0]})"


class GroupNorm(HybridBlock):
    """Group normalization (Wu & He, 2018): the channels (axis 1) of each
    sample split into ``num_groups`` groups, each normalized over its
    channels and spatial positions; then ``gamma * x + beta`` with one
    ``gamma``/``beta`` per group, as MXNet 1.x defines it.

    ``GroupNorm(num_groups=1, epsilon=1e-5, center=True, scale=True,
    beta_initializer='zeros', gamma_initializer='ones', prefix=None,
    params=None)``.
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _affine_params(self, (num_groups,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self):
        return f"{self.__class__.__name__}({_kwargs_repr(self._kwargs)})"
