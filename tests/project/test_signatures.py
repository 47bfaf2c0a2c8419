"""No function in ``dganalysis/`` takes more than :data:`MAX_PARAMETERS` parameters: settings that travel together
are one object (a notebook's parameters, a ``Sweep``, ``ExecutionOptions``, ``ShiftOptions`` …)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dganalysis"
MAX_PARAMETERS = 12


def parameter_counts(root: Path) -> list[tuple[int, str]]:
    """(number of parameters, ``file:line name``) of every function and method under ``root``; ``*args`` and
    ``**kwargs`` count one each, a method's ``self`` or ``cls`` none."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
                n -= bool(names) and names[0] in ("self", "cls")
                out.append((n, f"{path.relative_to(root.parent)}:{node.lineno} {node.name}"))
    return out


def test_no_function_takes_more_than_twelve_parameters():
    long = sorted((n, where) for n, where in parameter_counts(PACKAGE) if n > MAX_PARAMETERS)
    assert not long, f"functions with more than {MAX_PARAMETERS} parameters (group them into an object): {long}"


def test_the_count_sees_every_kind_of_parameter(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("def f(a, /, b, *c, d, **e): pass\nclass K:\n    def g(self, x): pass\n")
    assert sorted(parameter_counts(pkg)) == [(1, "pkg/m.py:3 g"), (5, "pkg/m.py:1 f")]
