"""Which variant of ternmq runs: the mypyc-compiled hot modules, or pure Python.

Theory of operation: a release build made with ``TERNMQ_MYPYC=1`` (``setup.py``) installs a
compiled extension beside the ``.py`` source of each hot module; Python's path finder prefers
the extension. ``TERNMQ_PURE_PYTHON=1`` at run time turns that preference around for ternmq's
own modules: ``install()`` puts a finder at the head of ``sys.meta_path`` that resolves every
``ternmq.*`` module to its ``.py`` source (the same ``.py`` a compiled install ships), as
aiokafka's ``AIOKAFKA_NO_EXTENSIONS`` does. This module's import runs ``install()``, and
``ternmq/__init__.py`` imports it before any other ternmq module. Without the variable nothing
is installed and imports are untouched. A module without a ``.py`` source falls through to the
normal finders. ``compiled()`` says which modules run compiled here.
"""

from __future__ import annotations

import importlib.machinery
import os
import pathlib
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

PURE_PYTHON_ENV = "TERNMQ_PURE_PYTHON"
_PACKAGE = "ternmq"


def pure_python_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """True when ``TERNMQ_PURE_PYTHON`` asks for the pure-Python variant (set, and not
    empty or ``0``)."""
    return environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


class SourceOnlyFinder:
    """A meta-path finder that resolves ``ternmq`` submodules to their ``.py`` sources only,
    so that compiled extensions installed beside them are not imported."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        """The spec of ``fullname``'s ``.py`` source, or None (another finder decides) for
        a module outside ternmq or one that has no source on ``path``."""
        if not fullname.startswith(_PACKAGE + ".") or path is None:
            return None
        loaders = [(importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)]
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, *loaders).find_spec(fullname, target)
            if spec is not None and spec.loader is not None:
                return spec
        return None


def install() -> bool:
    """Put ``SourceOnlyFinder`` first on ``sys.meta_path`` when pure Python is requested
    (once); True when it is in place."""
    if not pure_python_requested():
        return False
    if not any(isinstance(f, SourceOnlyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceOnlyFinder())
    return True


def compiled() -> list[str]:
    """The ternmq modules that run compiled (mypyc) in this process, sorted: those installed
    as extensions, unless ``TERNMQ_PURE_PYTHON`` is set. Empty for a pure-Python install
    (the default build, and every editable install)."""
    if pure_python_requested():
        return []
    return extension_modules(pathlib.Path(__file__).resolve().parent, _PACKAGE)


def extension_modules(root: pathlib.Path, package: str) -> list[str]:
    """The dotted names of the extension modules installed under ``root`` (the directory of
    ``package``), sorted."""
    names: set[str] = set()
    for file in root.rglob("*.*"):
        # The first suffix that matches is the longest (``.cpython-311-x86_64-linux-gnu.so``
        # comes before ``.so``).
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if file.name.endswith(suffix):
                parts = file.relative_to(root).with_name(file.name[: -len(suffix)]).parts
                names.add(".".join((package, *parts)))
                break
    return sorted(names)


def describe() -> str:
    """One line for ``ternmq --version``: the variant and its compiled modules."""
    mods = compiled()
    if mods:
        return f"compiled (mypyc): {', '.join(m.removeprefix(_PACKAGE + '.') for m in mods)}"
    reason = f" ({PURE_PYTHON_ENV} set)" if pure_python_requested() else ""
    return f"pure Python{reason}"


install()
