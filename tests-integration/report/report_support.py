"""Two real local eval runs for the report tests (built once per session by conftest.py).

A workspace from the ``multiply-local-strands`` template, with a 10-row dataset and its grader
patched to raise ``KeyError`` on the row labelled ``-1``. Run ``wrong`` uses a scripted policy
that answers ``#### 0`` whenever the first operand is even (rows 0, 2, 4 and 8); run ``right``
uses the correct scripted solver. So between them exactly rows 0, 2, 4 and 8 flip, and row 6
fails in both with a grader traceback.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "eval"))  # eval_support.Cli

from eval_support import Cli, CliResult

from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.replies import Reply
from osmosis_ai.testing.responders import (
    last_user_text,
    multiply_operands,
    multiply_solver,
)

#: The core tests' rollout that breaks the append-only property on purpose, one mode per row.
SAFETY_ROLLOUT = (
    Path(__file__).resolve().parents[2]
    / "packages" / "osmosis-core" / "tests" / "eval" / "safety_rollout.py"
)  # fmt: skip

OPERANDS = [(2, 3), (3, 5), (4, 7), (5, 11), (6, 6), (7, 8), (1, -1), (9, 9), (10, 2), (11, 3)]
FLIPPED_ROWS = [0, 2, 4, 8]  # even first operand: wrong in run "wrong", right in run "right"
GRADER_FAILURE_ROW = 6  # label "-1": the patched grader raises KeyError
GRADER_BUG = '        if ctx.label == "-1":\n            _ = {"content": ctx.label}["contnet"]\n'


def wrong_on_even(body: Mapping[str, Any]) -> Reply:
    reply = multiply_solver(body)
    operands = multiply_operands(last_user_text(body))
    if reply.content and operands is not None and operands[0] % 2 == 0:
        return Reply(content="#### 0")
    return reply


@dataclass(frozen=True)
class EvalRuns:
    cli: Cli
    workspace: Path
    runs: Path  # .osmosis/evals
    wrong_output: Any  # the --json envelope of `eval run --no-report` for run "wrong"
    right_console: str  # what `--plain eval run` printed for run "right"

    def run_dir(self, name: str) -> Path:
        return self.runs / name


def _workspace(cli: Cli, root: Path) -> Path:
    workspace = root / "ws"
    assert cli.run("init", str(workspace), cwd=root).code == 0
    assert cli.run("template", "apply", "multiply-local-strands", cwd=workspace).code == 0
    grader = workspace / "rollouts/multiply-local-strands/multiply_local_strands/grader.py"
    source = grader.read_text()
    anchor = "        answer = final_answer(last_text(ctx.sample.messages))\n"
    assert anchor in source
    grader.write_text(source.replace(anchor, GRADER_BUG + anchor))
    system = "Use the `multiply` tool, then answer `#### <number>`."
    rows = [
        {"system_prompt": system, "user_prompt": f"What is {a} multiplied by {b}?", "ground_truth": str(a * b)}
        for a, b in OPERANDS
    ]  # fmt: skip
    (workspace / "data" / "report.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return workspace


def _run(
    cli: Cli, workspace: Path, name: str, policy: ScriptedPolicyServer, *flags: str
) -> CliResult:
    output, extra = flags[0], flags[1:]
    result = cli.run(
        output, "eval", "run", *extra, "configs/eval/multiply-local-strands.toml",
        "--dataset", "data/report.jsonl", "--base-url", policy.url, "--model", "scripted",
        "--name", name,
        cwd=workspace,
    )  # fmt: skip
    assert result.code == 1, result.stderr  # partial: the grader failure on row 6
    return result


def run_against_a_dead_endpoint(cli: Cli, workspace: Path, name: str) -> tuple[CliResult, str]:
    """``eval run --json --no-report`` of the template against a port nothing listens on; the
    result and the base URL it was given."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    result = cli.run(
        "--json", "eval", "run", "configs/eval/multiply-local-strands.toml", "--dataset",
        "data/report.jsonl", "--base-url", base_url, "--model", "m", "--name", name,
        "--no-report", cwd=workspace,
    )  # fmt: skip
    return result, base_url


def make_runs(root: Path) -> EvalRuns:
    cli = Cli(home=root / "osmosis-home")
    workspace = _workspace(cli, root)
    with ScriptedPolicyServer(wrong_on_even, max_recorded=0) as wrong:
        wrong_output = _run(cli, workspace, "wrong", wrong, "--json", "--no-report").json()
    with ScriptedPolicyServer("multiply", max_recorded=0) as right:
        right_console = _run(cli, workspace, "right", right, "--plain").stdout
    runs = workspace / ".osmosis" / "evals"
    return EvalRuns(cli, workspace, runs, wrong_output, right_console)


def safety_rollout() -> Any:
    """The ``safety_rollout`` module (``MODES``, ``write_safety_workspace``)."""
    name = "report_tests_safety_rollout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SAFETY_ROLLOUT)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def reasoning_solver(body: Mapping[str, Any]) -> Reply:
    """The multiply solver, with reasoning on its tool-calling turns (for ``reasoning_dropped``)."""
    reply = multiply_solver(body)
    return replace(reply, reasoning="I will use the tool.") if reply.tool_calls else reply


@dataclass(frozen=True)
class SafetyRun:
    cli: Cli
    workspace: Path
    modes: tuple[str, ...]  # row i runs modes[i]

    @property
    def run_dir(self) -> Path:
        return self.workspace / ".osmosis" / "evals" / "safety"


def make_safety_run(root: Path) -> SafetyRun:
    """Run ``safety`` (one row per mode, token ids on) through the real CLI."""
    cli = Cli(home=root / "osmosis-home")
    workspace = root / "safety-ws"
    module = safety_rollout()
    config = module.write_safety_workspace(workspace)
    with ScriptedPolicyServer(reasoning_solver, max_recorded=0) as policy:
        result = cli.run(
            "--plain", "eval", "run", str(config), "--base-url", policy.url, "--model", "scripted",
            "--name", "safety", "--token-ids", "--no-report",
            cwd=workspace,
        )  # fmt: skip
    assert result.code == 0, result.stderr
    return SafetyRun(cli, workspace, tuple(module.MODES))
