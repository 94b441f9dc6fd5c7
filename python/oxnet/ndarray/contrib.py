"""``mx.nd.contrib``: every registry operator named ``_contrib_NAME``
(built-in or loaded from a library) as ``NAME``, as in MXNet; e.g.
``mx.nd.contrib.CTCLoss`` is ``mx.nd._contrib_CTCLoss``. Filled in by
``oxnet.ndarray._ops.refresh``."""
