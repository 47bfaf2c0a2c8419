"""The floors of ``docs/conventions.md`` ("The floors of the package") hold for the imports.

The page's numbered list names each floor's modules in backticks (paths under ``dganalysis/``; a folder stands for
every module in it; the most specific path wins), floor 1 at the top. Every module of the package must sit on a
floor, and an import (an edge of :func:`tests.project.test_import_graph.import_edges`: deferred and type-hint imports
included) may point only at its own floor or one below, unless the page lists it among its known arrows
(``- `a.py` → `b.py`: why``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.project.test_import_graph import PACKAGE, import_edges, module_files

PAGE = PACKAGE.parent / "docs" / "conventions.md"
_FLOOR = re.compile(r"^(\d+)\. \*\*")
_ARROW = re.compile(r"^- `([^`]+)` → `([^`]+)`")


def floors_section(text: str) -> str:
    start = text.index("## The floors of the package")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def parse_floors(section: str) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """(path → floor number, known up-arrows as path pairs) from the floors section of the page."""
    floors: dict[str, int] = {}
    arrows: set[tuple[str, str]] = set()
    current = None
    for line in section.splitlines():
        if m := _FLOOR.match(line):
            current = int(m.group(1))
        elif not line.startswith("   "):
            current = None
        if current is not None:
            for token in re.findall(r"`([^`]+)`", line):
                if token.endswith((".py", "/")):
                    floors[token.removeprefix("dganalysis/")] = current
        if m := _ARROW.match(line):
            arrows.add((m.group(1), m.group(2)))
    return floors, arrows


def module_path(name: str, is_pkg: bool) -> str:
    """``dganalysis.records.store`` → ``records/store.py``; a package → its ``__init__.py``."""
    rel = "/".join(name.split(".")[1:])
    return f"{rel}/__init__.py".lstrip("/") if is_pkg else f"{rel}.py"


def floor_of(path: str, floors: dict[str, int]) -> int | None:
    """The floor of the most specific entry naming ``path`` (itself, else its nearest folder), or None."""
    if path in floors:
        return floors[path]
    parts = path.split("/")[:-1]
    while parts:
        if (key := "/".join(parts) + "/") in floors:
            return floors[key]
        parts.pop()
    return None


def check(root: Path, section: str) -> list[str]:
    """One line per module on no floor and per import up a floor that the page does not list."""
    floors, arrows = parse_floors(section)
    mods = module_files(root)
    paths = {name: module_path(name, is_pkg) for name, (_, is_pkg) in mods.items()}
    where = {name: floor_of(p, floors) for name, p in paths.items()}
    problems = [f"{paths[n]} is on no floor" for n in sorted(where) if where[n] is None]
    problems += [f"the page places {entry} but the package has no such module"
                 for entry in sorted(floors) if not any(p == entry or p.startswith(entry) for p in paths.values())]
    for a, targets in sorted(import_edges(root).items()):
        for b in sorted(targets):
            if where[a] is not None and where[b] is not None and where[b] < where[a] \
                    and (paths[a], paths[b]) not in arrows:
                problems.append(f"{paths[a]} (floor {where[a]}) imports {paths[b]} (floor {where[b]})")
    for a, b in sorted(arrows):
        if not any(paths[x] == a and paths.get(y) == b for x, ys in import_edges(root).items() for y in ys):
            problems.append(f"the known arrow {a} → {b} is no longer an import: remove it from the page")
    return problems


def test_the_package_keeps_its_floors():
    section = floors_section(PAGE.read_text(encoding="utf-8"))
    floors, arrows = parse_floors(section)
    assert len(set(floors.values())) == 6 and "records/" in floors and arrows, "the floor list should parse"
    problems = check(PACKAGE, section)
    assert not problems, "docs/conventions.md's floors and the imports differ:\n" + "\n".join(problems)


def test_the_checker_finds_an_unplaced_module_an_up_arrow_and_a_stale_known_arrow(tmp_path):
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/top.py": "from pkg.low import helper\n",
        "pkg/low/__init__.py": "",
        "pkg/low/helper.py": "def f():\n    from pkg import top\n",
        "pkg/low/ok.py": "import pkg.low.helper\n",
        "pkg/stray.py": "",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    section = ("## The floors of the package\n\n1. **Top** — `top.py`,\n   `__init__.py`.\n2. **Low** — `low/`.\n\n"
               "- `low/ok.py` → `top.py`: listed but not imported.\n")
    assert check(tmp_path / "pkg", section) == [
        "stray.py is on no floor",
        "low/helper.py (floor 2) imports top.py (floor 1)",
        "the known arrow low/ok.py → top.py is no longer an import: remove it from the page",
    ]
