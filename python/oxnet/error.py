"""``mx.error``: MXNet's error classes and their registry. ``register``
records an error class under a name; ``InternalError`` marks a bug in the
engine itself (its message asks for a report)."""

from .base import MXNetError, error_types, register_error

__all__ = ["MXNetError", "register", "InternalError", "error_types"]

register = register_error


@register_error
class InternalError(MXNetError):
    """An error inside the engine, not in the caller's input: its message
    ends with a request to report it."""

    def __init__(self, msg):
        if "oxnet hint:" not in msg:
            msg += "\noxnet hint: You hit an internal error. Please report it with the code that raised it."
        super().__init__(msg)


for _name, _cls in (("ValueError", ValueError), ("TypeError", TypeError), ("AttributeError", AttributeError),
                    ("IndexError", IndexError), ("NotImplementedError", NotImplementedError)):
    register_error(_name, _cls)
