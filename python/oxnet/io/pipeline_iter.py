"""The DataIter face of oxnet's Rust record pipelines (``ImageRecordIter``,
``ImageDetRecordIter``): batches come ready from ``self._pipeline``."""

from .base import DataBatch, DataIter


class PipelineIter(DataIter):
    """Serves the batches of a Rust pipeline (``self._pipeline``, with
    ``next() -> (data, label, pad) | None`` and ``reset()``); a subclass
    makes the pipeline and sets ``provide_data`` / ``provide_label``."""

    _pipeline = None
    _batch = None

    def reset(self):
        """Starts the next epoch (reshuffled with ``shuffle``)."""
        self._pipeline.reset()

    def next(self):
        """The next batch; StopIteration at the end of the epoch."""
        got = self._pipeline.next()
        if got is None:
            raise StopIteration
        data, label, pad = got
        return DataBatch(data=[data], label=[label], pad=pad, provide_data=self.provide_data,
                         provide_label=self.provide_label)

    def iter_next(self):
        try:
            self._batch = self.next()
        except StopIteration:
            self._batch = None
            return False
        return True

    def getdata(self):
        return self._batch.data

    def getlabel(self):
        return self._batch.label

    def getpad(self):
        return self._batch.pad

    def getindex(self):
        return None
