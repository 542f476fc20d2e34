"""The console's files as shipped: every asset the page loads is in the package and in its
package data, nothing is fetched from elsewhere, and no text from the broker is parsed as
HTML."""

from __future__ import annotations

import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "ternmq"
CONSOLE = PACKAGE / "server" / "console"
FILES = ("index.html", "console.js", "console.css")


def test_every_asset_of_the_page_is_a_file_of_the_console() -> None:
    html = (CONSOLE / "index.html").read_text(encoding="utf-8")
    assets = re.findall(r'(?:src|href)="(/console/[^"]+)"', html)
    assert sorted(assets) == ["/console/console.css", "/console/console.js"]
    for asset in assets:
        assert (CONSOLE / asset.removeprefix("/console/")).is_file(), asset


def test_the_console_files_are_package_data() -> None:
    """A wheel built from pyproject.toml carries the console (setuptools globs relative to
    the package directory)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ternmq"]
    shipped = {p.relative_to(PACKAGE).as_posix() for pat in patterns for p in PACKAGE.glob(pat)}
    for name in FILES:
        assert f"server/console/{name}" in shipped, (name, patterns)


def test_nothing_is_loaded_from_another_site() -> None:
    """The console works without internet access: no URL in it but the SVG namespace."""
    for name in FILES:
        text = (CONSOLE / name).read_text(encoding="utf-8")
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"')]*", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, (name, urls)
        assert "@import" not in text, name


def test_broker_text_is_never_parsed_as_html() -> None:
    """Message bodies, properties and names are hostile input: the script builds the page
    with DOM calls and textContent only."""
    script = (CONSOLE / "console.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "new Function" not in script
