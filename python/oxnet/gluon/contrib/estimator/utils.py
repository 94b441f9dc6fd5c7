"""Helpers of the Gluon Estimator: metric argument checks and the default
metric a loss suggests."""

from ...loss import SoftmaxCrossEntropyLoss
from ....metric import Accuracy, CompositeEvalMetric, EvalMetric


def _check_metrics(metrics):
    """Normalises a metrics argument to a new list of ``EvalMetric``.

    ``None`` gives ``[]``, one metric gives ``[metric]``, a
    ``CompositeEvalMetric`` gives its (recursively flattened) members; a
    list must hold only ``EvalMetric`` objects, anything else is a
    ValueError.
    """
    if isinstance(metrics, CompositeEvalMetric):
        flat = []
        for member in metrics.metrics:
            flat.extend(_check_metrics(member))
        return flat
    if isinstance(metrics, EvalMetric):
        return [metrics]
    if not metrics:
        return []
    if isinstance(metrics, (str, bytes)) or not all(isinstance(m, EvalMetric) for m in metrics):
        raise ValueError("metrics must be a Metric or a list of Metric, "
                         "refer to mxnet.metric.EvalMetric: {}".format(metrics))
    return list(metrics)


def _check_metric_known(handler, metric, known_metrics):
    """Raises ValueError unless ``metric`` is (by identity) one of
    ``known_metrics``."""
    if not any(metric is known for known in known_metrics):
        raise ValueError(
            "Event handler {} refers to a metric instance {} outside of the known training "
            "and validation metrics. Please use the metrics from estimator.train_metrics and "
            "estimator.val_metrics instead.".format(type(handler).__name__, metric))


def _check_handler_metric_ref(handler, known_metrics):
    """Checks that every metric a handler holds in an attribute whose name
    contains ``metric`` is one of ``known_metrics`` (MXNet 1.9.1 checks
    those attributes only; a ``monitor`` is not checked)."""
    for attribute in dir(handler):
        if "metric" not in attribute:
            continue
        reference = getattr(handler, attribute, None)
        if not reference or callable(reference):
            continue  # unset, or a method (not a metric reference)
        if isinstance(reference, (list, tuple)):
            for metric in reference:
                _check_metric_known(handler, metric, known_metrics)
        else:
            _check_metric_known(handler, reference, known_metrics)


def _suggest_metric_for_loss(loss):
    """The metric added by default for ``loss``: ``Accuracy`` for a
    ``SoftmaxCrossEntropyLoss``, otherwise None."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
