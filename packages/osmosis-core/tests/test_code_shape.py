"""The code-shape gate (issue 12): no source module over 600 lines, no function over 80.

Walks every ``packages/*/src`` tree with :mod:`ast`. A function may exceed 80 lines only when
it is in :data:`ALLOWED_LONG_FUNCTIONS` with the reason and a cap (its length when it was
allowed), so an allowed function cannot quietly grow either.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
PACKAGES = Path(__file__).resolve().parents[2]

#: (path under packages/, qualified name) -> (cap in lines, why it is longer than 80).
ALLOWED_LONG_FUNCTIONS: dict[tuple[str, str], tuple[int, str]] = {}


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """Qualified name -> length in lines (decorators excluded) of each function over ``limit``."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > limit:
                        found[name] = length
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _sources() -> list[Path]:
    files = sorted(PACKAGES.glob("*/src/**/*.py"))
    assert files, f"no sources under {PACKAGES}"
    return files


def test_no_module_over_600_lines() -> None:
    too_long = {
        str(path.relative_to(PACKAGES)): n
        for path in _sources()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"split these modules by concern (max {MAX_MODULE_LINES}): {too_long}"


def test_no_function_over_80_lines_unless_allowed() -> None:
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for path in _sources():
        rel = str(path.relative_to(PACKAGES))
        for name, length in long_functions(path.read_text(encoding="utf-8")).items():
            allowed = ALLOWED_LONG_FUNCTIONS.get((rel, name))
            if allowed is None:
                problems.append(f"{rel}:{name} is {length} lines (max {MAX_FUNCTION_LINES})")
            elif length > allowed[0]:
                problems.append(f"{rel}:{name} is {length} lines, over its allowed {allowed[0]}")
            seen.add((rel, name))
    stale = set(ALLOWED_LONG_FUNCTIONS) - seen
    assert not problems, "split these functions:\n" + "\n".join(problems)
    assert not stale, (
        f"no longer over {MAX_FUNCTION_LINES} lines; drop from the allow-list: {stale}"
    )


def test_the_gate_catches_a_long_function_and_method() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(85))
    source = f"def short():\n    pass\n\ndef long():\n{body}\nclass C:\n    async def m(self):\n    {body.replace(chr(10) + '    ', chr(10) + '        ')}"
    found = long_functions(source)
    assert set(found) == {"long", "C.m"}
    assert found["long"] == 86
    with pytest.raises(AssertionError):
        assert not long_functions(source)
