"""Losses (``mx.gluon.loss``): HybridBlocks computing one loss value per
sample (averaged over every axis but ``batch_axis``), with MXNet 1.x's
formulas, a global ``weight`` and an optional ``sample_weight`` input
broadcast against the element-wise loss."""

import numbers

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss", "SoftmaxCrossEntropyLoss",
           "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss", "HingeLoss", "SquaredHingeLoss", "LogisticLoss",
           "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss", "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise MXNetError(f"a loss weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    return x.reshape(y.shape) if F is nd else F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class of losses: ``weight`` scales the loss, ``batch_axis`` is
    the axis that indexes samples."""

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{self.__class__.__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class L2Loss(Loss):
    """``weight/2 * (label - pred)^2``."""

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = _apply_weighting(F, F.square(label - pred), self._weight / 2, sample_weight)
        return self._mean(F, loss)


class L1Loss(Loss):
    """``weight * |label - pred|``."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = _apply_weighting(F, F.abs(label - pred), self._weight, sample_weight)
        return self._mean(F, loss)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``sigmoid(pred)`` (or of ``pred`` itself
    with ``from_sigmoid=True``) against labels in [0, 1]; ``pos_weight``
    weights the positive term."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            positive = F.log(pred + eps) * label
            if pos_weight is not None:
                positive = F.broadcast_mul(positive, pos_weight)
            loss = -(positive + F.log(1.0 - pred + eps) * (1.0 - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred)`` along ``axis``: class indices
    (``sparse_label=True``) or distributions as labels; ``from_logits``
    says ``pred`` already holds log-probabilities."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """``label * (log(label) - pred)`` with ``pred`` log-probabilities
    (``from_logits=True``) or logits (then log-softmaxed along ``axis``)."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class CTCLoss(Loss):
    """Connectionist temporal classification loss (MXNet 1.x's): ``pred``
    holds unnormalized activations in ``layout`` ``'NTC'`` or ``'TNC'``
    whose last class is the blank; ``label`` holds class ids in
    ``label_layout`` ``'NT'`` or ``'TN'``, padded with -1. Optional
    ``pred_lengths`` and ``label_lengths`` (batch,) give each example's
    lengths. The result is each example's negative log-likelihood, (batch,),
    times ``weight`` and ``sample_weight``."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise MXNetError(f"CTCLoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise MXNetError(f"CTCLoss: label_layout must be 'NT' or 'TN', got {label_layout!r}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        loss = F.CTCLoss(pred, label, pred_lengths, label_lengths,
                         use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None,
                         blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smooth L1: ``0.5/rho * err^2`` where ``|err| <= rho``, else ``|err| - rho/2``."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        err = F.abs(label - pred)
        loss = F.where(err > self._rho, err - 0.5 * self._rho, (0.5 / self._rho) * F.square(err))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` with labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = _apply_weighting(F, F.relu(self._margin - pred * label), self._weight, sample_weight)
        return self._mean(F, loss)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label)^2`` with labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``; labels ``'signed'`` (-1/1) or ``'binary'`` (0/1)."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        margin = -pred * label
        loss = F.relu(margin) + F.Activation(-F.abs(margin), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class TripletLoss(Loss):
    """``max(0, |pos - pred|^2 - |neg - pred|^2 + margin)`` per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Negative log-likelihood of ``target`` under a Poisson distribution of
    mean ``exp(pred)`` (``from_logits``) or ``pred``; ``compute_full`` adds
    Stirling's term. Returns the mean over all elements."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            # only where target > 1 (MXNet multiplies by the mask, which gives NaN at 0)
            loss = loss + F.where(target > 1, stirling, F.zeros_like(target))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(x1, x2)`` for label 1, ``max(0, cos(x1, x2) - margin)`` for label -1."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        similar = (1 - cos_sim) * (label == 1)
        dissimilar = F.relu((label == -1) * (cos_sim - self._margin))
        return _apply_weighting(F, similar + dissimilar, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F, x, y, axis=-1):
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F.clip(x_norm * y_norm, 1e-12, float(np.finfo(np.float32).max))


class SDMLLoss(Loss):
    """Smoothed Deep Metric Learning loss (Bonadiman, Kumar and Mittal, 2019)
    of two aligned batches ``x1`` and ``x2`` of shape (batch, dim): row ``i``
    of ``x2`` is the positive sample of row ``i`` of ``x1``, every other row
    a negative one.

    Each row of ``x1`` gets a distribution over the rows of ``x2``, the
    softmax of minus the squared euclidean distances; its loss is the KL
    divergence (averaged over the row, as :class:`KLDivLoss`) from the
    identity smoothed by ``smoothing_parameter``: ``1 - smoothing_parameter``
    on the diagonal, the rest spread evenly. As in MXNet, ``weight`` is not
    applied, and the loss needs the batch size, so it runs imperatively
    only (not inside a hybridized block).
    """

    def __init__(self, smoothing_parameter=0.3, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F, x1, x2):
        if F is not nd:
            raise MXNetError("SDMLLoss needs the batch size: call it on NDArrays, outside a hybridized block")
        if x1.ndim != 2 or x1.shape != x2.shape:
            raise MXNetError(f"SDMLLoss: x1 and x2 must both be (batch, dim); got {x1.shape} and {x2.shape}")
        batch = x1.shape[0]
        diffs = F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))
        distances = F.sum(F.square(diffs), axis=2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        s = self.smoothing_parameter
        off = s / (batch - 1) if batch > 1 else 0.0
        labels = nd.eye(batch, ctx=x1.context, dtype=x1.dtype) * (1 - s - off) + off
        return self.kl_loss(log_probabilities, labels)
