"""Constants the real-model tests and their fixtures share (a module, not ``conftest``: a
``from conftest import`` resolves to whichever conftest is first on the path)."""

from __future__ import annotations

import os
from pathlib import Path

ARTIFACTS = Path(
    os.environ.get("OSMOSIS_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "real-model"
)
TEMPLATES = (
    "multiply-local-plain",
    "multiply-local-openai",
    "multiply-local-strands",
    "multiply-local-pydantic-ai",
    "multiply-local-langgraph",
    "multiply-local-adk",
)
