"""``osmosis eval run --env`` driven in-process for the tests (imported by conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class EvalResult:
    exit_code: int
    envelope: dict[str, Any]
    run_dir: Path
    rows: list[dict[str, Any]]  # index.jsonl, by row_index
    summary: dict[str, Any]  # metrics.json's summary


type EvalEnv = Callable[..., EvalResult]
