"""Evaluation metrics (``mx.metric``), accumulated batch by batch::

    acc = mx.metric.Accuracy()
    acc.update(labels=[label], preds=[output])   # NDArrays or numpy arrays
    name, value = acc.get()

Each metric keeps a local sum and count (``sum_metric``, ``num_inst``; cleared
by ``reset_local``) and global ones (cleared only by ``reset``). Values are
read back to numpy and computed there, as the reference does. ``create``
builds a metric from its registered name (``'acc'``, ``'ce'``, ``'f1'``...),
a list of names, or a function ``feval(label, pred)``.

The classification metrics (Accuracy, TopKAccuracy, F1, MCC, PCC) live in
``oxnet._metric_classification`` and are re-exported here.
"""

import json
import math
import numbers
import warnings
from collections import OrderedDict

import numpy

__all__ = [
    "EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "PCC",
    "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
    "PearsonCorrelation", "Loss", "Torch", "Caffe", "CustomMetric", "np", "create", "register",
    "alias", "check_label_shapes",
]


def _to_numpy(x):
    """A numpy view of an NDArray (read back) or of any array-like."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return numpy.asarray(x)


def _is_array(x):
    return hasattr(x, "asnumpy") or isinstance(x, numpy.ndarray)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError unless ``labels`` and ``preds`` have the same length
    (or, with ``shape=True``, the same shape). With ``wrap``, a single array
    becomes a one-element list. Returns ``(labels, preds)``."""
    if shape:
        label_shape, pred_shape = tuple(labels.shape), tuple(preds.shape)
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}")
    if wrap:
        if _is_array(labels):
            labels = [labels]
        if _is_array(preds):
            preds = [preds]
    return labels, preds


# ----- registry ------------------------------------------------------------------------

_METRICS = {}


def register(klass, name=None):
    """Registers an ``EvalMetric`` subclass under ``name`` (its class name
    by default), lower-cased, for ``create``."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError(f"metric.register: {klass!r} is not a subclass of EvalMetric")
    key = (name or klass.__name__).lower()
    if key in _METRICS and _METRICS[key] is not klass:
        warnings.warn(f"metric {key!r} is now {klass.__module__}.{klass.__name__}, replacing "
                      f"{_METRICS[key].__module__}.{_METRICS[key].__name__}", UserWarning, stacklevel=2)
    _METRICS[key] = klass
    return klass


def alias(*names):
    """A class decorator registering the class under each of ``names``."""
    def decorate(klass):
        for name in names:
            register(klass, name)
        return klass
    return decorate


def create(metric, *args, **kwargs):
    """A metric from a registered name (with constructor arguments), an
    ``EvalMetric`` (returned as is), a list of these (a
    ``CompositeEvalMetric``), a function ``feval(label, pred)`` (a
    ``CustomMetric``), or a configuration from ``get_config()``."""
    if metric is None and "metric" in kwargs:
        metric = kwargs.pop("metric")
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError("metric.create: extra arguments given with a metric instance")
        return metric
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, dict):
        config = dict(metric)
        return create(config.pop("metric"), *args, **{**config, **kwargs})
    if not isinstance(metric, str):
        raise TypeError(f"metric.create: expected a name, a metric, a list or a function, got {metric!r}")
    if metric.startswith("["):
        name, config = json.loads(metric)
        return create(name, **config)
    if metric.startswith("{"):
        return create(json.loads(metric))
    key = metric.lower()
    if key not in _METRICS:
        raise ValueError(f"metric.create: no metric named {metric!r} (known: {', '.join(sorted(_METRICS))})")
    return _METRICS[key](*args, **kwargs)


# ----- the base class ------------------------------------------------------------------

class EvalMetric:
    """The base of all metrics: subclasses implement ``update(labels, preds)``
    and add to the counters with ``_accumulate``.

    Parameters
    ----------
    name : str
        The name shown with the value.
    output_names, label_names : list of str or None
        Which outputs and labels ``update_dict`` passes on (all by default).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The arguments that rebuild this metric with ``create(**config)``."""
        config = dict(self._kwargs)
        config.update(metric=type(self).__name__, name=self.name,
                      output_names=self.output_names, label_names=self.label_names)
        return config

    def update_dict(self, label, pred):
        """``update`` with dicts name -> array, keeping ``label_names`` and
        ``output_names`` (all when None)."""
        preds = [pred[n] for n in self.output_names] if self.output_names is not None else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names is not None else list(label.values())
        self.update(labels, preds)

    def update(self, labels, preds):
        """Adds one batch: ``labels`` and ``preds`` are lists of arrays (or
        single arrays)."""
        raise NotImplementedError(f"{type(self).__name__} does not define update")

    def _accumulate(self, value, count):
        """Adds ``value`` to the local and global sums, ``count`` to the counts."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Clears the local and the global counters."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clears the local counters only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` over the batches since the last local reset
        (NaN when there were none)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, float(self.sum_metric) / self.num_inst)

    def get_global(self):
        """``(name, value)`` over the batches since the last ``reset``."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, float(self.global_sum_metric) / self.global_num_inst)

    def get_name_value(self):
        """``get()`` as a list of ``(name, value)`` pairs."""
        return _pairs(self.get())

    def get_global_name_value(self):
        """``get_global()`` as a list of ``(name, value)`` pairs."""
        return _pairs(self.get_global())


def _pairs(name_value):
    name, value = name_value
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values))


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` gives their names and
    values as two lists."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Adds a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise IndexError(
                f"CompositeEvalMetric: metric index {index} is out of range (it has {len(self.metrics)})"
            )
        return self.metrics[index]

    def update_dict(self, labels, preds):  # pylint: disable=arguments-renamed
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend([value] if isinstance(value, numbers.Number) else value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


# ----- probabilities -------------------------------------------------------------------

@register
class Perplexity(EvalMetric):
    """``exp(-mean(log p))`` where ``p`` is the probability that ``preds``
    give to each label along ``axis``; labels equal to ``ignore_label`` (None:
    none) are left out."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        if len(labels) != len(preds):
            raise ValueError(f"Perplexity: {len(labels)} labels but {len(preds)} predictions")
        loss, count = 0.0, 0
        for label, pred in zip(labels, preds):
            label, pred = _to_numpy(label).ravel(), _to_numpy(pred)
            axis = self.axis % pred.ndim
            classes = pred.shape[axis]
            if label.size * classes != pred.size:
                raise ValueError(f"Perplexity: shape mismatch: labels {label.shape} vs. predictions {pred.shape}")
            rows = numpy.moveaxis(pred, axis, -1).reshape(-1, classes)
            # Out-of-range labels are clipped, as the reference's `pick` does.
            index = numpy.clip(label.astype(numpy.int64), 0, classes - 1)
            prob = rows[numpy.arange(index.size), index]
            if self.ignore_label is not None:
                ignored = label == self.ignore_label
                count -= int(ignored.sum())
                prob = numpy.where(ignored, numpy.ones_like(prob), prob)
            loss -= float(numpy.log(numpy.maximum(prob, 1e-10)).sum())
            count += prob.size
        self._accumulate(loss, count)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


def _picked_log_loss(label, pred, eps, metric):
    """``(sum(-log(p + eps)), n)`` with ``p`` the probability of each label."""
    label, pred = _to_numpy(label).ravel(), _to_numpy(pred)
    if pred.ndim != 2 or pred.shape[0] != label.shape[0]:
        raise ValueError(f"{metric}: predictions must have shape (batch, classes) with batch = "
                         f"{label.shape[0]} labels, got {pred.shape}")
    prob = pred[numpy.arange(label.shape[0]), label.astype(numpy.int64)]
    return float((-numpy.log(prob + eps)).sum()), label.shape[0]


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean of ``-log(p + eps)``, ``p`` the predicted probability of the label
    (``preds`` of shape ``(batch, classes)``)."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._accumulate(*_picked_log_loss(label, pred, self.eps, "CrossEntropy"))


@register
@alias("nll_loss")
class NegativeLogLikelihood(EvalMetric):
    """Mean negative log-likelihood of the labels: the same value as
    ``CrossEntropy``, under the name ``'nll-loss'``."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._accumulate(*_picked_log_loss(label, pred, self.eps, "NegativeLogLikelihood"))


# ----- regression ----------------------------------------------------------------------

def _columns(label, pred):
    """Label and prediction as numpy, 1-D ones made ``(n, 1)``."""
    label, pred = _to_numpy(label), _to_numpy(pred)
    if label.ndim == 1:
        label = label.reshape(-1, 1)
    if pred.ndim == 1:
        pred = pred.reshape(-1, 1)
    return label, pred


class _PerBatchRegression(EvalMetric):
    """A regression metric that averages one value per batch."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    @staticmethod
    def _batch_value(label, pred):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._accumulate(float(self._batch_value(*_columns(label, pred))), 1)


@register
class MAE(_PerBatchRegression):
    """Mean absolute error, averaged over batches."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label, pred):
        return numpy.abs(label - pred).mean()


@register
class MSE(_PerBatchRegression):
    """Mean squared error, averaged over batches."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label, pred):
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_PerBatchRegression):
    """Root mean squared error of each batch, averaged over batches."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label, pred):
        return numpy.sqrt(((label - pred) ** 2.0).mean())


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of labels and predictions (flattened).

    ``average='macro'`` averages the correlation of each batch; ``'micro'``
    gives the correlation of all values seen since ``reset``.
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def reset(self):
        super().reset()
        # micro: running count, means, sums of squared deviations, co-moment
        self._n = 0
        self._mean_l = self._mean_p = 0.0
        self._ss_l = self._ss_p = self._co = 0.0

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _to_numpy(label).ravel().astype(numpy.float64)
            pred = _to_numpy(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._accumulate(float(numpy.corrcoef(pred, label)[0, 1]), 1)
            else:
                self._merge(label, pred)
                self.num_inst += 1
                self.global_num_inst += 1

    def _merge(self, label, pred):
        """Adds a batch to the running moments (Chan et al.'s pairwise update)."""
        m = label.size
        if m == 0:
            return
        n = self._n + m
        mean_l, mean_p = label.mean(), pred.mean()
        d_l, d_p = mean_l - self._mean_l, mean_p - self._mean_p
        weight = self._n * m / n
        self._ss_l += float(((label - mean_l) ** 2).sum()) + d_l * d_l * weight
        self._ss_p += float(((pred - mean_p) ** 2).sum()) + d_p * d_p * weight
        self._co += float(((label - mean_l) * (pred - mean_p)).sum()) + d_l * d_p * weight
        self._mean_l += d_l * m / n
        self._mean_p += d_p * m / n
        self._n = n

    def _micro_value(self):
        denom = math.sqrt(self._ss_l * self._ss_p)
        return float(self._co / denom) if denom else float("nan")

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, float(self.sum_metric) / self.num_inst)
        return (self.name, self._micro_value())

    def get_global(self):
        # micro: the running moments already cover everything since `reset`
        # (the reference divides a sum it never fills and answers 0 here).
        if self.average == "macro" or self.global_num_inst == 0:
            return super().get_global()
        return (self.name, self._micro_value())


# ----- losses and custom metrics -------------------------------------------------------

@register
class Loss(EvalMetric):
    """The mean of the values in ``preds`` (already losses); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, _, preds):
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            pred = _to_numpy(pred)
            self._accumulate(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """``Loss`` under the name ``'torch'``."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """``Loss`` under the name ``'caffe'``."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric computed by ``feval(label, pred)`` on numpy arrays, one call
    per (label, prediction) pair; it returns a value (counted as one) or a
    tuple ``(sum_metric, num_inst)``.

    With ``allow_extra_outputs``, ``preds`` may hold more arrays than
    ``labels`` (the extras are ignored). Its name defaults to the function's,
    ``custom(<lambda>)`` for a lambda.
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None):
        if name is None:
            name = getattr(feval, "__name__", type(feval).__name__)
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names, has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        elif _is_array(labels) or _is_array(preds):
            labels, preds = ([labels] if _is_array(labels) else labels), ([preds] if _is_array(preds) else preds)
        for pred, label in zip(preds, labels):
            result = self._feval(_to_numpy(label), _to_numpy(pred))
            if isinstance(result, tuple):
                self._accumulate(*result)
            else:
                self._accumulate(result, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):  # pylint: disable=invalid-name
    """A ``CustomMetric`` from a function ``numpy_feval(label, pred)`` of
    numpy arrays returning a number."""
    def feval(label, pred):
        return numpy_feval(label, pred)

    feval.__name__ = getattr(numpy_feval, "__name__", "feval")
    return CustomMetric(feval, name, allow_extra_outputs)


# The classification metrics register themselves when imported.
from ._metric_classification import Accuracy, TopKAccuracy, F1, MCC, PCC  # noqa: E402
