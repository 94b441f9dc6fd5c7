"""Classification metrics of ``mx.metric``: Accuracy, TopKAccuracy, and the
binary F1 and MCC and multi-class PCC built on confusion counts.
(Import them from ``oxnet.metric``.)"""

import math

import numpy

from .metric import EvalMetric, alias, check_label_shapes, register, _to_numpy

__all__ = ["Accuracy", "TopKAccuracy", "F1", "MCC", "PCC"]


@register
@alias("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions equal to their labels.

    A prediction with the label's shape holds class indices; one with a
    different shape (one more dimension) holds scores, whose argmax along
    ``axis`` is the predicted class.
    """

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _to_numpy(label), _to_numpy(pred)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            pred = pred.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            check_label_shapes(label, pred)
            self._accumulate(int((pred == label).sum()), pred.size)


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of samples whose label is among the ``top_k`` highest
    scores of their prediction (``preds`` of shape ``(batch, classes)``).
    Its name is ``top_k_accuracy_<k>``.

    A 1-D prediction is taken as class indices and compared with the labels
    (the reference compares arg-partition positions there, which means
    nothing).
    """

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = int(top_k)
        if self.top_k <= 1:
            raise ValueError(f"TopKAccuracy: top_k must be more than 1 (use Accuracy for 1), got {top_k}")
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _to_numpy(label).astype(numpy.int32).ravel()
            pred = _to_numpy(pred).astype(numpy.float32)
            if pred.ndim > 2:
                raise ValueError(f"TopKAccuracy: predictions must have at most 2 dimensions, got {pred.shape}")
            check_label_shapes(label, pred)
            if pred.ndim == 1:
                correct = int((pred.astype(numpy.int32) == label).sum())
            else:
                k = min(pred.shape[1], self.top_k)
                top = numpy.argpartition(pred, -k, axis=1)[:, -k:]
                correct = int((top == label[:, None]).any(axis=1).sum())
            self._accumulate(correct, pred.shape[0])


class _BinaryCounts:
    """True/false positive/negative counts of a binary classifier, local
    (since the last local reset) and global."""

    _KEYS = ("tp", "fp", "fn", "tn")

    def __init__(self):
        self.local = dict.fromkeys(self._KEYS, 0)
        self.total = dict.fromkeys(self._KEYS, 0)

    def add(self, label, pred, metric):
        """Counts one batch: ``pred`` of shape ``(batch, classes)`` (class 1 is
        positive when it has the highest score), ``label`` 0 or 1."""
        pred = _to_numpy(pred)
        label = _to_numpy(label).astype(numpy.int32).ravel()
        if pred.ndim != 2:
            raise ValueError(f"{metric}: predictions must have shape (batch, classes), got {pred.shape}")
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{metric} currently only supports binary classification.")
        predicted = pred.argmax(axis=1) == 1
        actual = label == 1
        batch = {
            "tp": int((predicted & actual).sum()),
            "fp": int((predicted & ~actual).sum()),
            "fn": int((~predicted & actual).sum()),
            "tn": int((~predicted & ~actual).sum()),
        }
        for key, value in batch.items():
            self.local[key] += value
            self.total[key] += value

    def reset_local(self):
        self.local = dict.fromkeys(self._KEYS, 0)

    def reset(self):
        self.reset_local()
        self.total = dict.fromkeys(self._KEYS, 0)

    @staticmethod
    def examples(c):
        """How many samples were counted."""
        return c["tp"] + c["fp"] + c["fn"] + c["tn"]

    @staticmethod
    def fscore(c):
        """F1 = 2PR / (P + R), 0 where undefined."""
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    @staticmethod
    def mcc(c):
        """Matthews correlation; zero factors of the denominator count as 1."""
        if not _BinaryCounts.examples(c):
            return 0.0
        tp, fp, fn, tn = (float(c[k]) for k in _BinaryCounts._KEYS)
        denom = 1.0
        for factor in (tp + fp, tp + fn, tn + fp, tn + fn):
            if factor != 0:
                denom *= factor
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: a score from binary counts, per batch (``'macro'``: the
    mean of the batches' scores) or over all batches (``'micro'``)."""

    _score = None  # staticmethod(counts -> float), set by subclasses

    def __init__(self, name, output_names, label_names, average):
        if average not in ("macro", "micro"):
            raise ValueError(f"{type(self).__name__}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self._counts = _BinaryCounts()
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._counts.add(label, pred, type(self).__name__)
        score = type(self)._score
        local, total = self._counts.local, self._counts.total
        if self.average == "macro":
            self.sum_metric += score(local)
            self.global_sum_metric += score(total)
            self.num_inst += 1
            self.global_num_inst += 1
            self._counts.reset()
        else:
            self.num_inst = _BinaryCounts.examples(local)
            self.global_num_inst = _BinaryCounts.examples(total)
            self.sum_metric = score(local) * self.num_inst
            self.global_sum_metric = score(total) * self.global_num_inst

    def reset(self):
        super().reset()
        self._counts.reset()

    def reset_local(self):
        super().reset_local()
        self._counts.reset_local()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (``preds`` of shape ``(batch, 2)``,
    labels 0/1): ``2 * precision * recall / (precision + recall)``."""

    _score = staticmethod(_BinaryCounts.fscore)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier:
    ``(TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))``, zero factors of
    the denominator replaced by 1."""

    _score = staticmethod(_BinaryCounts.mcc)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class PCC(EvalMetric):
    """Multi-class Matthews correlation (Pearson's on the confusion matrix),
    over all samples since the last reset (local) or ``reset`` (global).
    Predictions are class indices, or scores whose argmax along axis 1 is the
    class. NaN while a row or column total of the matrix covers everything."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, classes):
        pad = classes - self.k
        self.lcm = numpy.pad(self.lcm, ((0, pad), (0, pad)))
        self.gcm = numpy.pad(self.gcm, ((0, pad), (0, pad)))
        self.k = classes

    @staticmethod
    def _score(cmat):
        n = cmat.sum()
        rows, cols = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_rr = numpy.sum(rows * (n - rows))
        cov_cc = numpy.sum(cols * (n - cols))
        if cov_rr == 0 or cov_cc == 0:
            return float("nan")
        cov_rc = numpy.sum(cmat.diagonal() * n - rows * cols)
        return float(cov_rc / math.sqrt(cov_rr * cov_cc))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _to_numpy(label).astype(numpy.int64), _to_numpy(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype(numpy.int64)
            pred, label = pred.ravel(), label.ravel()
            check_label_shapes(label, pred)
            if pred.size and min(pred.min(), label.min()) < 0:
                raise ValueError("PCC: class indices must not be negative")
            top = int(max(pred.max(), label.max())) + 1 if pred.size else 0
            if top > self.k:
                self._grow(top)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._score(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, value):
        pass  # derived from the confusion matrix

    @property
    def global_sum_metric(self):
        return self._score(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, value):
        pass  # derived from the confusion matrix

    def reset(self):
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))
