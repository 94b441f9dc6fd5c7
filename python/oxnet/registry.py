"""``mx.registry``: per-base-class registries of named subclasses, the
machinery behind ``mx.optimizer.register``/``create`` style factories.

    register = mx.registry.get_register_func(MyBase, "thing")
    create = mx.registry.get_create_func(MyBase, "thing")

    @register
    class Fancy(MyBase): ...

    create("fancy", arg=1)          # names are case-insensitive
    create('["fancy", {"arg": 1}]')  # or JSON: [name, kwargs] / {"thing": name, ...}
"""

import json
import warnings

from .base import MXNetError, string_types

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY = {}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the ``{name: class}`` registry of ``base_class``."""
    return dict(_table(base_class))


def get_register_func(base_class, nickname):
    """A decorator ``register(klass, name=None)`` that records a subclass of
    ``base_class`` under ``name`` (its lower-cased class name by default);
    registering a name again warns and replaces it."""
    registry = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise MXNetError(f"register: can only register subclasses of {base_class.__name__} as a {nickname}, "
                             f"got {klass!r}")
        name = (klass.__name__ if name is None else name).lower()
        old = registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered with name {name} is "
                          f"overriding existing {nickname} {old.__module__}.{old.__name__}", UserWarning,
                          stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = f"Registers a {nickname} class with the {nickname} factory."
    return register


def get_alias_func(base_class, nickname):
    """A decorator factory ``alias(*names)`` registering a class under
    several names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def decorate(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return decorate

    return alias


def get_create_func(base_class, nickname):
    """A factory ``create(name_or_instance, *args, **kwargs)``: an instance
    of ``base_class`` comes back as it is; a name (case-insensitive), a dict
    (``{nickname: name, **kwargs}``) or JSON text (``'["name", {...}]'`` or
    ``'{"nickname": "name", ...}'``) builds the registered class."""
    registry = _table(base_class)

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise MXNetError(f"create: give the {nickname} name as the first argument or as {nickname}=")
        if isinstance(name, base_class):
            if args or kwargs:
                raise MXNetError(f"create: {nickname} is already an instance; extra arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, string_types):
            raise MXNetError(f"create: the {nickname} must be a name, a dict or an instance, got "
                             f"{type(name).__name__}")
        if name.startswith("[") or name.startswith("{"):
            if args or kwargs:
                raise MXNetError(f"create: a JSON {nickname} description takes no other arguments")
            spec = json.loads(name)
            if isinstance(spec, list):
                return create(spec[0], **spec[1])
            return create(**spec)
        key = name.lower()
        if key not in registry:
            raise MXNetError(f"{name} is not registered. Please register with {nickname}.register first "
                             f"(registered: {', '.join(sorted(registry)) or 'none'})")
        return registry[key](*args, **kwargs)

    create.__doc__ = f"Creates a {nickname} from a name, a dict, JSON text or an instance."
    return create
