"""``mx.nd._internal``: every registry operator whose name starts with an
underscore (``_plus``, ``_mul_scalar``, ``_identity_with_attr_like_rhs``,
...), as MXNet keeps them there. Filled in by ``oxnet.ndarray._ops.refresh``;
the same functions are also in ``mx.nd`` itself."""
