"""Every private module of osmosis-core is fenced from the other distributions.

"Private" is a dotted path with a ``_``-prefixed (non-dunder) component, e.g.
``osmosis_ai.rollout.server._impl.service`` or ``osmosis_ai._lazy``. The other distributions
(osmosis-cli, osmosis-strands, osmosis-openai-agents, osmosis-harbor) may use core only through
public modules and the integration interface (``osmosis_ai.rollout.integrations.spi``, public
already). A private module is *fenced* for a distribution when an import-linter ``forbidden``
contract in the root ``pyproject.toml`` whose ``source_modules`` cover that distribution's
package forbids it or one of its ancestors; ``nox -s lint`` then fails on an import of it.

So a new private module fails here until it sits in a fenced wing (``server._impl``,
``eval._...``) or a contract names it: no private module is importable from another
distribution unnoticed. The contract table is parsed, not trusted: the synthetic cases at the
end prove that a missing, mis-sourced or non-``forbidden`` contract is reported.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
CORE_SRC = REPO / "packages" / "osmosis-core" / "src"
SIBLINGS = (
    "osmosis-cli",
    "osmosis-strands",
    "osmosis-openai-agents",
    "osmosis-harbor",
    "osmosis-pydantic-ai",
    "osmosis-langgraph",
    "osmosis-adk",
)

#: (distribution, private module) pairs a sibling may import, each with why. Keep it small: the
#: documented interface is public (``osmosis_ai.rollout.integrations.spi``) and needs no entry.
ALLOWED: dict[tuple[str, str], str] = {}

Contract = Mapping[str, Any]


def _is_private(module: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def _within(module: str, ancestor: str) -> bool:
    return module == ancestor or module.startswith(ancestor + ".")


def modules_under(src: Path) -> list[str]:
    """Every module and package under ``src`` (a ``src/`` layout), as dotted paths."""
    found: list[str] = []
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return found


def root_packages(src: Path) -> list[str]:
    """The packages a distribution ships: its outermost folders with an ``__init__.py`` (an
    integration wheel ships only its leaf folder, e.g. ``.../integrations/agents/strands``)."""
    roots = []
    for init in sorted(src.rglob("__init__.py")):
        folder = init.parent
        if not (folder.parent / "__init__.py").exists():
            roots.append(".".join(folder.relative_to(src).parts))
    return roots


def contracts(pyproject: Path) -> list[Contract]:
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return config.get("tool", {}).get("importlinter", {}).get("contracts", [])


def fences_for(package: str, table: Iterable[Contract]) -> list[str]:
    """Modules forbidden to ``package`` by the ``forbidden`` contracts whose sources cover it."""
    fences: list[str] = []
    for contract in table:
        if contract.get("type") != "forbidden":
            continue
        if any(_within(package, source) for source in contract.get("source_modules", ())):
            fences.extend(contract.get("forbidden_modules", ()))
    return fences


def unfenced(
    private: Iterable[str],
    packages: Mapping[str, Sequence[str]],
    table: Sequence[Contract],
    allowed: Mapping[tuple[str, str], str] = ALLOWED,
) -> dict[str, list[str]]:
    """Distribution -> the private modules no contract forbids to (one of) its packages."""
    report: dict[str, list[str]] = {}
    private = list(private)
    for dist, dist_packages in packages.items():
        for package in dist_packages:
            fences = fences_for(package, table)
            for module in private:
                if (dist, module) in allowed or any(_within(module, f) for f in fences):
                    continue
                report.setdefault(dist, []).append(module)
    return report


def imported_modules(src: Path) -> set[str]:
    """Absolute ``osmosis_ai`` modules the sources under ``src`` import (``from a import b``
    counts ``a`` and ``a.b``: ``b`` may be a module)."""
    found: set[str] = set()
    for path in src.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {m for m in found if _within(m, "osmosis_ai")}


def _siblings() -> dict[str, Path]:
    return {dist: src for dist in SIBLINGS if (src := REPO / "packages" / dist / "src").is_dir()}


def _core_private() -> list[str]:
    return [m for m in modules_under(CORE_SRC) if _is_private(m)]


@pytest.fixture(scope="module")
def table() -> list[Contract]:
    pyproject = REPO / "pyproject.toml"
    if not pyproject.is_file() or not CORE_SRC.is_dir():
        pytest.skip("needs the repository checkout (root pyproject.toml, packages/*/src)")
    return contracts(pyproject)


def test_every_private_core_module_is_fenced_from_every_sibling(table: list[Contract]) -> None:
    siblings = _siblings()
    if not siblings:
        pytest.skip("no sibling distribution in this checkout")
    private = _core_private()
    assert private, "found no private module in osmosis-core: the walk is broken"
    packages = {dist: root_packages(src) for dist, src in siblings.items()}
    assert all(packages.values()), packages
    report = unfenced(private, packages, table)
    assert not report, (
        "private osmosis-core modules importable from another distribution without an "
        "import-linter fence (move them into a fenced private wing, or add the wing to the "
        f"contract 'no other distribution imports a private module of core'): {report}"
    )


def test_no_sibling_imports_a_private_core_module(table: list[Contract]) -> None:
    """The same rule on the sources as they are, without an installed tree for import-linter."""
    private = set(_core_private())
    offenders = {
        dist: sorted(m for m in imported_modules(src) if m in private and (dist, m) not in ALLOWED)
        for dist, src in _siblings().items()
    }
    assert not any(offenders.values()), offenders


def test_every_allow_list_entry_is_a_private_core_module() -> None:
    private = set(_core_private())
    for dist, module in ALLOWED:
        assert dist in SIBLINGS, dist
        assert module in private, module


# ---- the checker itself, on synthetic contract tables ------------------------------------

_PRIVATE = ["pkg._wing", "pkg._wing.inner", "pkg.sub._helper", "pkg._lone"]
_PACKAGES = {"cli": ["cli_pkg"], "leaf": ["pkg.integrations.leaf"]}


def _forbidden(sources: list[str], forbidden: list[str], kind: str = "forbidden") -> Contract:
    return {"type": kind, "source_modules": sources, "forbidden_modules": forbidden}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        pytest.param(
            [
                _forbidden(
                    ["cli_pkg", "pkg.integrations.leaf"], ["pkg._wing", "pkg.sub", "pkg._lone"]
                )
            ],
            {},
            id="all-fenced-by-ancestors",
        ),
        pytest.param(
            [_forbidden(["cli_pkg", "pkg.integrations.leaf"], ["pkg._wing", "pkg.sub"])],
            {"cli": ["pkg._lone"], "leaf": ["pkg._lone"]},
            id="a-new-private-module-is-unfenced",
        ),
        pytest.param(
            [_forbidden(["pkg.integrations"], ["pkg"]), _forbidden(["cli_pkg"], ["pkg._wing"])],
            {"cli": ["pkg.sub._helper", "pkg._lone"]},
            id="fence-covers-only-its-sources",
        ),
        pytest.param(
            [_forbidden(["other"], ["pkg"])],
            {"cli": _PRIVATE, "leaf": _PRIVATE},
            id="contract-for-another-package",
        ),
        pytest.param(
            [_forbidden(["cli_pkg", "pkg.integrations.leaf"], ["pkg"], kind="layers")],
            {"cli": _PRIVATE, "leaf": _PRIVATE},
            id="not-a-forbidden-contract",
        ),
        pytest.param(
            [_forbidden(["cli_pkg", "pkg.integrations.leaf"], ["pkg._win"])],
            {"cli": _PRIVATE, "leaf": _PRIVATE},
            id="a-prefix-is-not-an-ancestor",
        ),
    ],
)
def test_unfenced_reports_what_no_contract_forbids(
    table: list[Contract], expected: dict[str, list[str]]
) -> None:
    assert unfenced(_PRIVATE, _PACKAGES, table, allowed={}) == expected


def test_the_allow_list_exempts_one_pair_only() -> None:
    table = [_forbidden(["cli_pkg", "pkg.integrations.leaf"], ["pkg._wing", "pkg.sub"])]
    allowed = {("cli", "pkg._lone"): "documented interface"}
    assert unfenced(_PRIVATE, _PACKAGES, table, allowed=allowed) == {"leaf": ["pkg._lone"]}


def test_private_means_an_underscore_component_but_not_a_dunder() -> None:
    assert _is_private("osmosis_ai.rollout.server._impl.service")
    assert _is_private("osmosis_ai._lazy")
    assert not _is_private("osmosis_ai.rollout.server")
    assert not _is_private("osmosis_ai.__main__")


def test_the_walks_find_modules_packages_and_leaf_roots(tmp_path: Path) -> None:
    leaf = tmp_path / "pkg" / "integrations" / "leaf"
    leaf.mkdir(parents=True)
    (leaf / "__init__.py").write_text("from pkg._wing import x\nimport pkg.sub._helper\n")
    (leaf / "_private.py").write_text("from . import y\nfrom pkg import _lone\n")
    assert root_packages(tmp_path) == ["pkg.integrations.leaf"]
    assert modules_under(tmp_path) == ["pkg.integrations.leaf", "pkg.integrations.leaf._private"]
    imported = imported_modules(tmp_path.parent / tmp_path.name)
    assert imported == set()  # not under osmosis_ai
    osm = tmp_path / "osmosis_ai" / "x"
    osm.mkdir(parents=True)
    (osm / "__init__.py").write_text("from osmosis_ai import _lone\nimport osmosis_ai._wing\n")
    assert imported_modules(tmp_path) == {
        "osmosis_ai",
        "osmosis_ai._lone",
        "osmosis_ai._wing",
    }
