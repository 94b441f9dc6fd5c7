"""The DataIter face of oxnet's Rust record pipelines (``ImageRecordIter``,
``ImageDetRecordIter``): batches come ready from ``self._pipeline``."""

from .base import BatchSourceIter, DataBatch


class PipelineIter(BatchSourceIter):
    """Serves the batches of a Rust pipeline (``self._pipeline``, with
    ``next() -> (data, label, pad) | None`` and ``reset()``); a subclass
    makes the pipeline and sets ``provide_data`` / ``provide_label``."""

    _pipeline = None

    def reset(self):
        """Starts the next epoch (reshuffled with ``shuffle``)."""
        self._pipeline.reset()

    def _make_batch(self):
        got = self._pipeline.next()
        if got is None:
            raise StopIteration
        data, label, pad = got
        return DataBatch(data=[data], label=[label], pad=pad, provide_data=self.provide_data,
                         provide_label=self.provide_label)
