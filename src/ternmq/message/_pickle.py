"""Pickle with a restricted unpickler for ObjectMessage bodies (catalog BODY-36 … BODY-38).

Unpickling runs code named by the data, so a received body may only name globals from an
allow-list: a fixed set of harmless ``builtins`` (containers, scalars, exception classes;
never ``eval``, ``exec``, ``getattr``, ``open``, ``__import__`` …) plus the modules the
connection factory trusts. A trusted module ``"myapp"`` also trusts its submodules
(``"myapp.models"``). A global is accepted only if the object found there is not a module,
is defined in a trusted module (its ``__module__``), and no part of its dotted name is a
dunder, so a trusted module cannot be used as a path to something it merely imports.
"""

from __future__ import annotations

import builtins
import io
import pickle
import types
from collections.abc import Iterable
from typing import Final

from ternmq.errors import MessageFormatException

__all__ = ["SAFE_BUILTINS", "dumps", "loads"]

#: The ``builtins`` names any ObjectMessage body may use.
SAFE_BUILTINS: Final = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "Ellipsis",
        "float",
        "frozenset",
        "int",
        "list",
        "NotImplemented",
        "object",
        "range",
        "set",
        "slice",
        "str",
        "tuple",
    }
    | {
        name
        for name, obj in vars(builtins).items()
        if isinstance(obj, type) and issubclass(obj, BaseException)
    }
)

_PROTOCOL: Final = 5


def dumps(obj: object) -> bytes:
    """Pickle ``obj`` now (so later changes to it do not reach the message, BODY-36).

    Raises:
        MessageFormatException: ``obj`` cannot be pickled (BODY-37).
    """
    try:
        return pickle.dumps(obj, protocol=_PROTOCOL)
    except Exception as exc:  # PicklingError, TypeError, AttributeError, RecursionError …
        raise MessageFormatException(
            f"cannot serialize a {type(obj).__name__} for an ObjectMessage: {exc}",
            linked_exception=exc,
        ) from exc


def _trusted(module: str, trusted: frozenset[str]) -> bool:
    return any(module == t or module.startswith(t + ".") for t in trusted)


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, trusted: frozenset[str]) -> None:
        super().__init__(io.BytesIO(data))
        self._trusted = trusted

    def find_class(self, module: str, name: str) -> object:
        if module in ("builtins", "__builtin__"):
            if name in SAFE_BUILTINS:
                return getattr(builtins, name)
        elif _trusted(module, self._trusted) and not any(
            part.startswith("__") and part.endswith("__") for part in name.split(".")
        ):
            obj = super().find_class(module, name)
            owner = getattr(obj, "__module__", None)
            if (
                not isinstance(obj, types.ModuleType)
                and isinstance(owner, str)
                and _trusted(owner, self._trusted)
            ):
                return obj
        raise MessageFormatException(
            f"the ObjectMessage body uses {module}.{name}, which is not trusted; add its "
            "module to the connection factory's trusted modules if it is safe"
        )


def loads(data: bytes, trusted_modules: Iterable[str] | None) -> object:
    """Unpickle ``data`` allowing only safe builtins and ``trusted_modules``.

    Raises:
        MessageFormatException: the data names an untrusted global, or is not a pickle this
            process can load (BODY-37, BODY-38).
    """
    trusted = frozenset(trusted_modules or ()) - {"builtins", "__builtin__"}
    try:
        return _RestrictedUnpickler(data, trusted).load()
    except MessageFormatException:
        raise
    except Exception as exc:  # UnpicklingError, EOFError, ImportError, AttributeError …
        raise MessageFormatException(
            f"cannot deserialize the ObjectMessage body: {exc}", linked_exception=exc
        ) from exc
