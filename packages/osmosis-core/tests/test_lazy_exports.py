"""Every lazy package ``__init__``: ``__all__`` and the ``TYPE_CHECKING`` imports match the table.

The lazy ``__init__``s resolve names from an ``_EXPORTS`` table at runtime, while type checkers
and IDEs read the ``if TYPE_CHECKING:`` imports; the two must list the same names from the same
modules. Checked on the source (no import of the frameworks), so integration packages that are
not installed are skipped.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

LAZY_PACKAGES = [
    "osmosis_ai.rollout",
    "osmosis_ai.rollout.backend",
    "osmosis_ai.rollout.server",
    "osmosis_ai.rollout.trajectory",
    "osmosis_ai.rollout.types",
    "osmosis_ai.testing",
    "osmosis_ai.rollout.integrations.spi",
    "osmosis_ai.rollout.backend.harbor",
    "osmosis_ai.rollout.integrations.agents.strands",
    "osmosis_ai.rollout.integrations.agents.openai_agents",
    "osmosis_ai.rollout.integrations.agents.pydantic_ai",
    "osmosis_ai.rollout.integrations.agents.langgraph",
    "osmosis_ai.rollout.integrations.agents.adk",
]


def _source(package: str) -> Path:
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed")
    return Path(spec.origin)


def _type_checking_imports(tree: ast.Module, package: str) -> dict[str, str]:
    """``name -> absolute module`` for every import under ``if TYPE_CHECKING:``."""
    names: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                continue
            module = statement.module or ""
            if statement.level:
                module = f"{package}.{module}" if module else package
            for alias in statement.names:
                names[alias.asname or alias.name] = module
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_type_checking_imports_match_the_export_table(package: str) -> None:
    path = _source(package)
    is_package = path.name == "__init__.py"
    module = importlib.import_module(package)
    exports: dict[str, str] = dict(module._EXPORTS)
    base = package if is_package else package.rpartition(".")[0]
    declared = _type_checking_imports(ast.parse(path.read_text()), base)
    assert declared == exports, f"{package}: TYPE_CHECKING imports differ from _EXPORTS"
    eager = ["exports_from", "lazy_exports"] if package.endswith(".spi") else []  # not lazy
    assert module.__all__ == eager + sorted(exports), f"{package}: __all__ is not sorted(_EXPORTS)"
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name} does not resolve"
