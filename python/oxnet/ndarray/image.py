"""``mx.nd.image``: every registry operator named ``_image_NAME`` as
``NAME``, as in MXNet; e.g. ``mx.nd.image.normalize`` is
``mx.nd._image_normalize``. Filled in by ``oxnet.ndarray._ops.refresh``."""
