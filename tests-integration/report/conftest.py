"""The session's eval runs (see report_support.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# pytest runs with --import-mode=importlib: make the sibling helper module importable.
sys.path.insert(0, str(Path(__file__).parent))

from contract_support import ContractRun, make_contract_run
from report_support import EvalRuns, SafetyRun, make_runs, make_safety_run


@pytest.fixture(scope="session")
def eval_runs(tmp_path_factory: pytest.TempPathFactory) -> EvalRuns:
    return make_runs(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="session")
def safety_run(tmp_path_factory: pytest.TempPathFactory) -> SafetyRun:
    return make_safety_run(tmp_path_factory.mktemp("safety"))


@pytest.fixture(scope="session")
def contract(tmp_path_factory: pytest.TempPathFactory) -> ContractRun:
    """One real engine run whose grader sets metrics and an explanation (contract_support.py)."""
    return make_contract_run(tmp_path_factory.mktemp("contract"))
