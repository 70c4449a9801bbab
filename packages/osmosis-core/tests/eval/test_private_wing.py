"""``osmosis_ai.eval`` keeps its internals in one private wing, ``osmosis_ai.eval._impl``: the one
name the CLI's import-linter contract forbids. A private module anywhere else in ``eval`` would
be importable by the CLI without a fence."""

from __future__ import annotations

import tomllib
from pathlib import Path

import osmosis_ai.eval

EVAL = Path(osmosis_ai.eval.__file__).parent
WING = "_impl"


def test_every_private_module_of_eval_is_inside_the_wing() -> None:
    outside = [
        str(path.relative_to(EVAL))
        for path in EVAL.rglob("*")
        if path.name.startswith("_")
        and path.name not in ("__init__.py", "__pycache__")
        and "__pycache__" not in path.parts  # bytecode of __init__.py (__init__.cpython-312.pyc)
        and path.relative_to(EVAL).parts[0] != WING
    ]
    assert not outside, f"move these into osmosis_ai/eval/{WING}/: {outside}"


def test_the_cli_contract_fences_the_wing_with_one_line() -> None:
    root = Path(__file__).resolve().parents[4]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (cli,) = [c for c in contracts if c["source_modules"] == ["osmosis_cli", "osmosis_ai.cli"]]
    eval_lines = [m for m in cli["forbidden_modules"] if m.startswith("osmosis_ai.eval")]
    assert eval_lines == [f"osmosis_ai.eval.{WING}"]
