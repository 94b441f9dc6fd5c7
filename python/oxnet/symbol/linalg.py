"""``mx.sym.linalg``: every registry operator named ``_linalg_NAME`` as
``NAME``, as in MXNet; e.g. ``mx.sym.linalg.potrf`` is
``mx.sym._linalg_potrf``. Filled in by ``oxnet.symbol._ops.refresh``."""
