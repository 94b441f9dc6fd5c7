"""``SyncBatchNorm``: batch normalization whose batch statistics are those
of the whole batch over every rank of a data-parallel job.

Each rank sums its part of the batch (per channel: the count, the sum and
the sum of squares), one all-reduce gives the global sums, and every rank
normalizes with the global mean and variance; backward all-reduces the
two per-channel sums the input gradient needs. Forward and backward
therefore equal one ``BatchNorm`` over the concatenated batch, and the
running statistics (updated in training as ``running * momentum + batch *
(1 - momentum)``, the variance biased, as MXNet's) stay equal on every
rank. ``gamma`` and ``beta`` get each rank's own gradient; the trainer sums
them over ranks as it does for every parameter.

oxnet synchronizes over ranks (processes) on :mod:`oxnet.distributed`;
MXNet 1.x synchronized the devices of one process (``num_devices``). With
one device per rank, as Horovod and ``dist_sync`` jobs run, the two agree;
a process that splits its batch over several contexts syncs each context
with the same-numbered one on the other ranks. Started without a launcher
(one rank), it is ``BatchNorm``.

The operator is ``Custom`` with ``op_type='oxnet_sync_batch_norm'``
(numpy kernels on host copies), so the block also runs in hybridized
graphs. The registry operator ``_contrib_SyncBatchNorm``
(``mx.nd.contrib.SyncBatchNorm``, and graphs MXNet saved with it) is
MXNet's one-process form: ``BatchNorm`` with ``ndev=1``, no exchange
between ranks.
"""

import numpy as np

from .... import distributed
from .... import operator as op
from ...nn.norm_layers import _BatchNorm

__all__ = ["SyncBatchNorm", "OP_TYPE"]

#: the Custom op_type of the operator
OP_TYPE = "oxnet_sync_batch_norm"


def _flag(value):
    return str(value).lower() in ("1", "true")


def _allreduce_numpy(buf):
    """Sums a float64 numpy buffer over every rank, in place."""
    from .... import ndarray as nd  # pylint: disable=import-outside-toplevel
    world = distributed.world()
    if world.size == 1:
        return buf
    arr = nd.array(buf, dtype="float64")
    world.allreduce_([arr])
    return arr.asnumpy()


def _channels_last_flat(x):
    """``x`` (N, C, ...) as float64 (N, C, L)."""
    return x.astype(np.float64).reshape(x.shape[0], x.shape[1], -1)


class _SyncBatchNormOp(op.CustomOp):
    """The kernels. Backward keeps nothing from forward: it sums the
    count, the input's sums and the two gradient sums it needs in one
    all-reduce (so several forward passes before one backward are fine)."""

    def __init__(self, eps, momentum, fix_gamma, use_global_stats):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.fix_gamma, self.use_global_stats = fix_gamma, use_global_stats
        self._batch_stats = True  # whether the last forward normalized with the batch's statistics

    def _gamma(self, in_data, channels):
        return np.ones(channels) if self.fix_gamma else in_data[1].asnumpy().astype(np.float64)

    def forward(self, is_train, req, in_data, out_data, aux):
        flat = _channels_last_flat(in_data[0].asnumpy())
        channels = flat.shape[1]
        self._batch_stats = bool(is_train) and not self.use_global_stats
        if self._batch_stats:
            total = _allreduce_numpy(np.concatenate([[flat.shape[0] * flat.shape[2]], flat.sum(axis=(0, 2)),
                                                     np.square(flat).sum(axis=(0, 2))]))
            count = total[0]
            mean = total[1:1 + channels] / count
            var = np.maximum(total[1 + channels:] / count - np.square(mean), 0.0)
            m = self.momentum
            aux[0][:] = aux[0].asnumpy() * m + mean.astype(np.float32) * (1 - m)
            aux[1][:] = aux[1].asnumpy() * m + var.astype(np.float32) * (1 - m)
        else:
            mean = aux[0].asnumpy().astype(np.float64)
            var = aux[1].asnumpy().astype(np.float64)
        inv_std = 1.0 / np.sqrt(var + self.eps)
        gamma = self._gamma(in_data, channels)
        beta = in_data[2].asnumpy().astype(np.float64)
        y = (flat - mean[None, :, None]) * (gamma * inv_std)[None, :, None] + beta[None, :, None]
        self.assign(out_data[0], req[0], y.reshape(in_data[0].shape).astype(np.float32))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        flat = _channels_last_flat(in_data[0].asnumpy())
        channels = flat.shape[1]
        dy = out_grad[0].asnumpy().astype(np.float64).reshape(flat.shape)
        gamma = self._gamma(in_data, channels)
        sum_dy, sum_dy_x = dy.sum(axis=(0, 2)), (dy * flat).sum(axis=(0, 2))
        if self._batch_stats:
            total = _allreduce_numpy(np.concatenate([[flat.shape[0] * flat.shape[2]], flat.sum(axis=(0, 2)),
                                                     np.square(flat).sum(axis=(0, 2)), sum_dy, sum_dy_x]))
            count = total[0]
            s1, s2, g_dy, g_dy_x = (total[1 + k * channels:1 + (k + 1) * channels] for k in range(4))
            mean = s1 / count
            var = np.maximum(s2 / count - np.square(mean), 0.0)
        else:
            mean = aux[0].asnumpy().astype(np.float64)
            var = aux[1].asnumpy().astype(np.float64)
        inv_std = 1.0 / np.sqrt(var + self.eps)
        # this rank's sum of dy * xhat (gamma's gradient) and, with batch statistics, the global one
        local_dy_xhat = inv_std * (sum_dy_x - mean * sum_dy)
        if self._batch_stats:
            g_dy_xhat = inv_std * (g_dy_x - mean * g_dy)
            xhat = (flat - mean[None, :, None]) * inv_std[None, :, None]
            dx = (gamma * inv_std)[None, :, None] * (
                dy - (g_dy / count)[None, :, None] - xhat * (g_dy_xhat / count)[None, :, None])
        else:
            dx = dy * (gamma * inv_std)[None, :, None]
        self.assign(in_grad[0], req[0], dx.reshape(in_data[0].shape).astype(np.float32))
        dgamma = np.zeros(channels) if self.fix_gamma else local_dy_xhat
        self.assign(in_grad[1], req[1], dgamma.astype(np.float32))
        self.assign(in_grad[2], req[2], sum_dy.astype(np.float32))


@op.register(OP_TYPE)
class _SyncBatchNormProp(op.CustomOpProp):
    def __init__(self, eps="0.001", momentum="0.9", fix_gamma="True", use_global_stats="False", ndev="1",
                 key=""):
        super().__init__(need_top_grad=True)
        self.eps, self.momentum = float(eps), float(momentum)
        self.fix_gamma, self.use_global_stats = _flag(fix_gamma), _flag(use_global_stats)
        del ndev, key  # MXNet's devices of one process; oxnet syncs ranks (see the module)

    def list_arguments(self):
        return ["data", "gamma", "beta"]

    def list_outputs(self):
        return ["output"]

    def list_auxiliary_states(self):
        return ["moving_mean", "moving_var"]

    def infer_shape(self, in_shape):
        data = in_shape[0]
        if len(data) < 2:
            raise ValueError(f"SyncBatchNorm: the data needs a channel axis 1, got shape {tuple(data)}")
        channel = [data[1]]
        return [data, channel, channel], [data], [channel, channel]

    def infer_type(self, in_type):
        return [np.float32] * 3, [np.float32], [np.float32] * 2

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _SyncBatchNormOp(self.eps, self.momentum, self.fix_gamma, self.use_global_stats)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the whole batch of every rank (see the
    module). ``SyncBatchNorm(in_channels=0, num_devices=None, momentum=0.9,
    epsilon=1e-5, center=True, scale=True, use_global_stats=False,
    beta_initializer='zeros', gamma_initializer='ones',
    running_mean_initializer='zeros', running_variance_initializer='ones')``,
    MXNet's arguments; the channels are axis 1 and the data float32.
    ``num_devices`` is accepted (oxnet synchronizes ranks, not devices)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=False, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
        self._num_devices = num_devices

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.Custom(x, gamma, beta, running_mean, running_var, op_type=OP_TYPE, name="fwd",
                        eps=self._kwargs["eps"], momentum=self._kwargs["momentum"],
                        fix_gamma=self._kwargs["fix_gamma"], use_global_stats=self._kwargs["use_global_stats"])
