"""The public API of ternmq.selector: entry points, cache, safety of generated code."""

from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

import ternmq.selector as selector_pkg
from ternmq.errors import InvalidSelectorException, InvalidSelectorRuntimeException, to_runtime
from ternmq.selector import (
    CACHE_SIZE,
    Selector,
    SelectorTarget,
    compile_selector,
    evaluate,
    is_blank,
    parse,
)

from ._support import Msg

PACKAGE_DIR = pathlib.Path(selector_pkg.__file__).parent


def test_compile_selector_returns_selector() -> None:
    """SEL-01, SEL-62: compile_selector gives a Selector with text, ast, source, matches."""
    sel = compile_selector("color = 'blue'")
    assert isinstance(sel, Selector)
    assert sel.text == "color = 'blue'"
    assert sel.ast == parse("color = 'blue'")
    assert "def matches(message)" in sel.source
    assert sel.matches(Msg({"color": "blue"})) is True
    assert sel.matches.__doc__ and "Never raises" in sel.matches.__doc__
    assert repr(sel) == "Selector(\"color = 'blue'\")"


def test_compile_selector_rejects_non_strings() -> None:
    """A selector is a str or None; anything else is a TypeError, not a JMS error."""
    for bad in (b"a = 1", 1, ["a = 1"]):
        with pytest.raises(TypeError):
            compile_selector(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            parse(bad)  # type: ignore[arg-type]


def test_is_blank() -> None:
    """SEL-04, SEL-11: blank means only the five whitespace characters."""
    assert is_blank(None) and is_blank("") and is_blank(" \t\n\r\x0c")
    assert not is_blank("\xa0") and not is_blank("\x0b") and not is_blank("a")


def test_cache_is_bounded_and_keyed_by_text() -> None:
    """compile_selector caches by exact text in an LRU of CACHE_SIZE entries."""
    first = compile_selector("cache_probe = 0")
    assert compile_selector("cache_probe = 0") is first
    for i in range(CACHE_SIZE + 1):
        compile_selector(f"cache_fill_{i} = {i}")
    again = compile_selector("cache_probe = 0")
    assert again is not first and again is not None
    assert again.text == "cache_probe = 0"


def test_invalid_selector_exception_carries_data_and_converts() -> None:
    """SEL-07: the exception has selector and position, and keeps them as a runtime twin."""
    with pytest.raises(InvalidSelectorException) as info:
        compile_selector("a = = 1")
    exc = info.value
    assert (exc.selector, exc.position) == ("a = = 1", 4)
    rt = to_runtime(exc)
    assert isinstance(rt, InvalidSelectorRuntimeException)
    assert (rt.selector, rt.position) == ("a = = 1", 4)


def test_evaluate_without_message_needs_constant_selector() -> None:
    """evaluate(ast, None) works for constant selectors and raises TypeError otherwise."""
    assert evaluate(parse("1 + 1 = 2"), None) is True
    with pytest.raises(TypeError):
        evaluate(parse("a = 1"), None)


def test_target_protocol_is_structural() -> None:
    """SelectorTarget is a typing.Protocol the stub satisfies structurally."""
    assert getattr(SelectorTarget, "_is_protocol", False)
    target: SelectorTarget = Msg()
    assert target.jms_priority == 4


# -- generated code safety ----------------------------------------------------------------------

NASTY = [
    "'",
    "\\",
    "\\'",
    "''",
    "'''",
    '"""',
    "\n",
    "\r\n",
    "\x00",
    "{x}",
    "%s",
    "' or True or '",
    "'); import os; os.system('echo pwned'); ('",
    "\\x41",
    "\\N{BULLET}",
    "\ud800",
    "😀",
]


@pytest.mark.parametrize("text", NASTY)
def test_string_literals_are_never_spliced(text: str) -> None:
    """String literals reach the generated code only through repr()."""

    def quote(t: str) -> str:
        return "'" + t.replace("'", "''") + "'"

    pattern = "".join("!" + c if c in "!%_" else c for c in text)
    for sel_text in (
        f"s = {quote(text)}",
        f"s IN ({quote(text)}, 'zz')",
        f"s LIKE {quote(pattern)} ESCAPE '!'",
        f"s LIKE {quote(pattern + '%')} ESCAPE '!' AND s LIKE {quote('%' + pattern)} ESCAPE '!'",
    ):
        sel = compile_selector(sel_text)
        assert sel is not None
        assert sel.matches(Msg({"s": text})) is True, sel.source
        assert sel.matches(Msg({"s": "x" + text + "x"})) is False, sel.source


@pytest.mark.parametrize(
    "name", ["a\x00b", "a\x7fb", "é\u0301", "$", "x" * 300, "a\u200db", "ǅ", "_"]
)
def test_identifier_names_are_never_spliced(name: str) -> None:
    """Identifier names reach the generated code only through repr()."""
    sel = compile_selector(f"{name} = 1 AND {name} + 1 = 2")
    assert sel is not None
    assert sel.matches(Msg({name: 1}))


def test_generated_code_has_no_builtins() -> None:
    """The generated function sees only a handful of builtins (no __import__, eval)."""
    sel = compile_selector("a = 1")
    assert sel is not None
    fn_globals = sel.matches.__globals__
    assert fn_globals["__builtins__"] == {}
    assert "__import__" not in fn_globals and "eval" not in fn_globals


# -- package hygiene ------------------------------------------------------------------------------

FORBIDDEN = {"threading", "socket", "asyncio", "time", "logging", "multiprocessing"}


@pytest.mark.parametrize("path", sorted(PACKAGE_DIR.glob("*.py")), ids=lambda p: p.name)
def test_pure_package_imports(path: pathlib.Path) -> None:
    """The selector package is pure: no threading, socket, asyncio, time or logging."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
        else:
            continue
        for mod in mods:
            assert mod.split(".")[0] not in FORBIDDEN, (path.name, mod)


def test_public_callables_document_what_they_raise() -> None:
    """Every public function and constructor says what it raises."""
    for name in ("compile_selector", "parse", "evaluate", "is_blank"):
        doc = inspect.getdoc(getattr(selector_pkg, name)) or ""
        assert "raise" in doc.lower(), name
    assert "Raises" in (inspect.getdoc(Selector.__init__) or "")
    for name in selector_pkg.__all__:
        obj = getattr(selector_pkg, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), name
