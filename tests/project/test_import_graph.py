"""No import circle inside ``dganalysis/``: the module graph read from the source with ``ast`` has no cycle.

What counts as an edge ``a → b`` (``a`` and ``b`` modules of the package, ``b`` a module file or a package
``__init__``):

* every ``import`` statement in ``a``, wherever it stands: at module level, inside a function or method, under
  ``if TYPE_CHECKING``, in a ``try``. A deferred import is still a dependency; counting it means moving an import
  into a function cannot hide a circle.
* ``import x.y.z`` points at the deepest of ``x.y.z``, ``x.y``, ``x`` that is a module of the package;
  ``from x.y import n`` points at ``x.y.n`` when that is a module, otherwise at ``x.y``; relative imports are
  resolved against ``a``'s package.

Not counted: the parent packages Python initialises on the way to a submodule (``import x.y.z`` also runs
``x/__init__`` and ``x/y/__init__``; a package ``__init__`` re-exporting its submodules would otherwise make every
import between siblings a circle, and the ``__init__``'s own imports are counted anyway), and
``importlib.import_module(<string>)``: the registries' plug-in discovery (``data.registry._import_builtin``,
``algorithms/__init__``) loads the modules that register themselves, which depend on the registry, not the other
way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dganalysis"


def module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package ``__init__``) for every ``.py`` file under the package ``root``."""
    mods = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _deepest(name: str, mods: dict) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_edges(root: Path) -> dict[str, set[str]]:
    """Module → the package modules its ``import`` statements name (see the module docstring for the rules)."""
    mods = module_files(root)
    edges: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                out.update(filter(None, (_deepest(a.name, mods) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[: len(here) - node.level + 1] + [node.module or ""]).strip(".") if node.level \
                    else (node.module or "")
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    target = sub if sub in mods else _deepest(base, mods)
                    if target:
                        out.add(target)
        out.discard(name)
        edges[name] = out
    return edges


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle ``[a, b, ..., a]`` per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_circle(comp, edges) for comp in components]


def _circle(comp: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest circle through the first module of ``comp`` (breadth-first inside the component)."""
    start, inside = comp[0], set(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{comp} is not strongly connected")


def test_dganalysis_has_no_import_circle():
    edges = import_edges(PACKAGE)
    assert len(edges) > 50 and edges["dganalysis.training.train"], "the graph should hold every module and its imports"
    cycles = find_cycles(edges)
    assert not cycles, "import circle(s) in dganalysis/ (each concept belongs to the level that owns it): " + "; ".join(
        " → ".join(c) for c in cycles)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "pkg"


def test_a_deferred_relative_import_circle_is_found(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from pkg.sub import a\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/a.py": "from . import b\n",
        "pkg/sub/b.py": "import os\n\ndef f():\n    from ..c import g\n    return g\n",
        "pkg/c.py": "import pkg.sub.a as a\n\ndef g():\n    return a\n",
        "pkg/d.py": "import pkg.c\nfrom pkg import sub\n",
    })
    edges = import_edges(pkg)
    assert edges["pkg.sub.b"] == {"pkg.c"} and edges["pkg.c"] == {"pkg.sub.a"} and edges["pkg.sub.a"] == {"pkg.sub.b"}
    assert edges["pkg.d"] == {"pkg.c", "pkg.sub"}
    assert find_cycles(edges) == [["pkg.c", "pkg.sub.a", "pkg.sub.b", "pkg.c"]]


def test_a_tree_has_no_circle_and_parent_packages_are_not_edges(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import x\nfrom pkg.b import y\n",
        "pkg/a.py": "x = 1\n",
        "pkg/b.py": "from pkg.a import x\ny = x\n",
    })
    edges = import_edges(pkg)
    assert edges == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": set(), "pkg.b": {"pkg.a"}}
    assert find_cycles(edges) == []
