"""``mx.sym.contrib``: every registry operator named ``_contrib_NAME``
(built-in or loaded from a library) as ``NAME``, as in MXNet; e.g.
``mx.sym.contrib.CTCLoss`` is ``mx.sym._contrib_CTCLoss``. Filled in by
``oxnet.symbol._ops.refresh``."""
