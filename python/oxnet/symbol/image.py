"""``mx.sym.image``: every registry operator named ``_image_NAME`` as
``NAME``, as in MXNet; e.g. ``mx.sym.image.normalize`` is
``mx.sym._image_normalize``. Filled in by ``oxnet.symbol._ops.refresh``."""
