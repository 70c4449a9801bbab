"""The contract run (a real engine run of the core tests' tiny rollout; see
test_row_contract.py), shared by the contract test and the report's browser test."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "eval"))  # eval_support.Cli

from eval_support import Cli

from osmosis_ai.eval import EvalRun
from osmosis_ai.eval._impl.plan.plan import EvalOptions, build_plan
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.responders import multiply_solver

TINY_ROLLOUT = (
    Path(__file__).resolve().parents[2]
    / "packages" / "osmosis-core" / "tests" / "eval" / "tiny_rollout.py"
)  # fmt: skip

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}
#: $1 / $2 per million input / output tokens
CALL_USD = (1000 * 1.0 + 500 * 2.0) / 1e6
N_ROWS = 3
CRASH_ROW = 1  # the workflow raises after its first policy call on this row
TOOL_ERROR_ROW = 2  # its tool call is recorded as a tool that raised


def _tiny() -> Any:
    name = "row_contract_tiny_rollout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TINY_ROLLOUT)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _with_usage(body: Mapping[str, Any]) -> Any:
    return dataclasses.replace(multiply_solver(body), usage=USAGE)


@dataclass(frozen=True)
class ContractRun:
    run: EvalRun
    cli: Cli
    workspace: Path


def make_contract_run(root: Path) -> ContractRun:
    rows = [
        {"user_prompt": f"What is {i + 2} times {i + 3}?", "ground_truth": str((i + 2) * (i + 3))}
        for i in range(N_ROWS)
    ]
    config = _tiny().write_workspace(
        root / "ws",
        rows=rows,
        mode="crash-after-call",
        env={
            "TINY_METRICS": "1",
            "TINY_CRASH_PROMPT": rows[CRASH_ROW]["user_prompt"],
            "TINY_TOOL_ERROR_PROMPT": rows[TOOL_ERROR_ROW]["user_prompt"],
        },
        model="m",
        evaluation="metric_thresholds = { used_tool = 1.0 }",
    )
    with config.open("a") as fh:
        fh.write('\n[pricing."m"]\ninput = 1.0\noutput = 2.0\n')

    async def main() -> EvalRun:
        async with ScriptedPolicyServer(_with_usage) as policy:
            options = EvalOptions(name="contract", model="m", base_url=policy.url, n=2)
            return await run_session(build_plan(config, options))

    # A thread of its own: the browser tests' sync Playwright keeps an event loop running in
    # this one when the session fixture is first built from a browser test.
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(asyncio.run, main()).result()
    return ContractRun(run, Cli(home=root / "osmosis-home"), root / "ws")
