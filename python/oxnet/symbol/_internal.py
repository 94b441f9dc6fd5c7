"""``mx.sym._internal``: every registry operator whose name starts with an
underscore, as symbol functions (MXNet keeps them there). Filled in by
``oxnet.symbol._ops.refresh``; the same functions are also in ``mx.sym``."""
