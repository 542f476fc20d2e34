"""The compiled / pure-Python variant: ``TERNMQ_PURE_PYTHON`` and ``ternmq.compiled()``.

Nothing is built here: a fake "compiled" module (a file with an extension suffix that is not a
loadable library) beside a ``.py`` shows which of the two an import picks. Under
``make test-compiled`` (the mypyc wheel installed) the last tests check the real extensions.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import ternmq
from ternmq import _variant

EXT = importlib.machinery.EXTENSION_SUFFIXES[0]
PYTHON = sys.executable


def _fake_pair(where: pathlib.Path, name: str) -> None:
    """``name.py`` (pure) and ``name<EXT>`` (a "compiled" module that cannot load) side by side."""
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.py").write_text("VARIANT = 'pure'\n")
    (where / f"{name}{EXT}").write_bytes(b"not a shared library")


def _run(code: str, *, pure: bool) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter importing this ternmq, with or without the variable."""
    env = {k: v for k, v in os.environ.items() if k != _variant.PURE_PYTHON_ENV}
    if pure:
        env[_variant.PURE_PYTHON_ENV] = "1"
    src = str(pathlib.Path(ternmq.__file__).resolve().parent.parent)
    if "site-packages" not in src:  # the development tree: import it, not an installed copy
        env["PYTHONPATH"] = src
    return subprocess.run(
        [PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_finder_resolves_a_ternmq_module_to_its_source(tmp_path: pathlib.Path) -> None:
    _fake_pair(tmp_path, "hot")
    # The normal path finder prefers the extension; the source-only finder the .py.
    normal = importlib.machinery.PathFinder.find_spec("ternmq.hot", [str(tmp_path)])
    assert normal is not None and str(normal.origin).endswith(EXT)
    spec = _variant.SourceOnlyFinder().find_spec("ternmq.hot", [str(tmp_path)])
    assert spec is not None and spec.loader is not None
    assert spec.origin == str(tmp_path / "hot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.VARIANT == "pure"


def test_finder_leaves_other_modules_and_missing_sources_alone(tmp_path: pathlib.Path) -> None:
    _fake_pair(tmp_path, "hot")
    finder = _variant.SourceOnlyFinder()
    assert finder.find_spec("other.hot", [str(tmp_path)]) is None  # not ternmq
    assert finder.find_spec("ternmq", None) is None  # top level: the normal finders
    (tmp_path / "only_ext").mkdir()
    (tmp_path / "only_ext" / f"mod{EXT}").write_bytes(b"x")
    assert finder.find_spec("ternmq.mod", [str(tmp_path / "only_ext")]) is None


@pytest.mark.parametrize(
    ("value", "pure"), [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)]
)
def test_the_variable_chooses_pure_python(value: str | None, pure: bool) -> None:
    environ = {} if value is None else {_variant.PURE_PYTHON_ENV: value}
    assert _variant.pure_python_requested(environ) is pure


def test_install_only_under_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not _is_ours(f)])
    monkeypatch.delenv(_variant.PURE_PYTHON_ENV, raising=False)
    assert _variant.install() is False
    assert not any(_is_ours(f) for f in sys.meta_path)
    monkeypatch.setenv(_variant.PURE_PYTHON_ENV, "1")
    assert _variant.install() is True
    assert _variant.install() is True  # once, however often it is called
    assert [_is_ours(f) for f in sys.meta_path].count(True) == 1
    assert _is_ours(sys.meta_path[0])


def _is_ours(finder: object) -> bool:
    return isinstance(finder, _variant.SourceOnlyFinder)


def test_importing_ternmq_installs_the_finder_first(tmp_path: pathlib.Path) -> None:
    """End to end in a fresh interpreter: a ternmq module with both forms on the package's
    path imports from the .py under the variable, and tries the extension without it."""
    _fake_pair(tmp_path, "hot")
    code = (
        "import sys, ternmq\n"
        f"ternmq.__path__.insert(0, {str(tmp_path)!r})\n"
        "try:\n"
        "    import ternmq.hot as m\n"
        "    print(m.VARIANT, m.__file__)\n"
        "except ImportError as exc:\n"
        "    print('extension', exc)\n"
        "print(ternmq.compiled())\n"
    )
    pure = _run(code, pure=True)
    assert pure.returncode == 0, pure.stderr
    assert pure.stdout.splitlines() == [f"pure {tmp_path / 'hot.py'}", "[]"]
    normal = _run(code, pure=False)
    assert normal.returncode == 0, normal.stderr
    assert normal.stdout.startswith("extension")


def test_extension_modules_names_each_compiled_module(tmp_path: pathlib.Path) -> None:
    _fake_pair(tmp_path / "broker", "engine")
    _fake_pair(tmp_path, "codec")
    (tmp_path / "broker" / "_queue.py").write_text("")
    assert _variant.extension_modules(tmp_path, "ternmq") == [
        "ternmq.broker.engine",
        "ternmq.codec",
    ]


def test_compiled_is_empty_under_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_variant.PURE_PYTHON_ENV, "1")
    assert ternmq.compiled() == []
    assert _variant.describe() == "pure Python (TERNMQ_PURE_PYTHON set)"


def test_version_names_the_variant() -> None:
    out = _run("from ternmq.cli import main; main(['--version'])", pure=True)
    assert "pure Python (TERNMQ_PURE_PYTHON set)" in out.stdout, out.stderr


# ------------------------------------------------ the compiled install (make test-compiled)
needs_compiled = pytest.mark.skipif(
    not ternmq.compiled(), reason="not a compiled install (make test-compiled builds one)"
)


@needs_compiled
def test_compiled_install_runs_the_extensions() -> None:
    import ternmq.broker.engine as engine

    assert "ternmq.broker.engine" in ternmq.compiled()
    assert str(engine.__file__).endswith(EXT)
    assert _variant.describe().startswith("compiled (mypyc): ")


@needs_compiled
def test_compiled_install_falls_back_to_the_sources() -> None:
    code = (
        "import ternmq, ternmq.broker.engine as e, ternmq.broker._queue as q\n"
        "print(e.__file__); print(q.__file__); print(ternmq.compiled())\n"
    )
    out = _run(code, pure=True)
    assert out.returncode == 0, out.stderr
    engine_file, queue_file, listed = out.stdout.splitlines()
    assert engine_file.endswith("engine.py") and queue_file.endswith("_queue.py")
    assert listed == "[]"
