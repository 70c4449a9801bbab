"""Environments from other ecosystems (issue 41) against the real model: the same kinds of run as
the offline acceptance tests (verifiers single-turn and tool environments, an Inspect task with a
local dataset, a tool-using solver and two scorers, three Reasoning Gym generators, a Harbor
dataset from a local registry folder), each through ``osmosis eval run --env``.

The policy is the session's one llama.cpp server (``tool_calling_model``: SmolLM2-135M under
``chatml-function-calling``, so the tool environments get real, often malformed, tool calls).
The 135M model rarely answers right; what is tested is that no row fails for infrastructure
reasons, that every reward function is reported, and that the rewards are the foreign scorer's
(recomputed from the recorded replies where the scorer is cheap to call directly)."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from eval_support import Cli, read_jsonl

INSPECT_FIXTURES = (
    Path(__file__).parents[2] / "packages/osmosis-environments/tests/inspect/fixtures"
)

VERIFIERS_SINGLE_TURN = """
import verifiers as vf
from datasets import Dataset


def load_environment():
    rows = [{"question": f"What is {i} plus {i}?", "answer": str(2 * i)} for i in (2, 5)]
    parser = vf.XMLParser(["answer"], answer_field="answer")

    def correct(completion, answer, **kwargs) -> float:
        return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0

    def brief(completion, **kwargs) -> float:
        return 1.0 if len(str(parser.parse_answer(completion) or "")) <= 2 else 0.0

    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(rows),
        system_prompt="Answer as <answer>N</answer>.",
        parser=parser,
        rubric=vf.Rubric(funcs=[correct, brief], weights=[1.0, 0.5], parser=parser),
    )
"""

VERIFIERS_TOOL_ENV = '''
import verifiers as vf
from datasets import Dataset


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def load_environment():
    rows = [{"question": f"What is {a} times {b}? Use the tool.", "answer": str(a * b)}
            for a, b in ((6, 7), (3, 5), (12, 4))]

    def correct(completion, answer, **kwargs) -> float:
        last = completion[-1]
        text = last.get("content") if isinstance(last, dict) else last.content
        return 1.0 if answer in str(text or "") else 0.0

    def brief(completion, **kwargs) -> float:
        return 1.0 if len(completion) <= 3 else 0.0

    return vf.ToolEnv(dataset=Dataset.from_list(rows), tools=[multiply], max_turns=3,
                      rubric=vf.Rubric(funcs=[correct, brief], weights=[1.0, 0.1]))
'''

#: The Harbor agent: an AgentWorkflow that runs inside each trial's local sandbox, asks the
#: policy and writes its reply where the task's verifier looks.
HARBOR_AGENT = """
from pathlib import Path

from osmosis_ai.rollout import AgentWorkflow


class WriteTheReply(AgentWorkflow):
    async def run(self, ctx):
        messages = [dict(m) for m in ctx.prompt]
        response = await ctx.policy.client().chat.completions.create(
            model="policy", messages=messages, max_tokens=48
        )
        message = response.choices[0].message
        Path("/app/hello.txt").write_text(f"{message.content or ''}\\n")
        return [*messages, {"role": "assistant", "content": message.content or ""}]
"""

HARBOR_TEST = (
    "if grep -qi hello /app/hello.txt 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; "
    "else echo 0 > /logs/verifier/reward.txt; fi"
)


def _write_verifiers(root: Path) -> None:
    (root / "real_single_turn.py").write_text(textwrap.dedent(VERIFIERS_SINGLE_TURN))
    (root / "real_tool_env.py").write_text(textwrap.dedent(VERIFIERS_TOOL_ENV))


def _write_inspect(root: Path) -> None:
    for name in ("arith.py", "arith.jsonl"):
        shutil.copy(INSPECT_FIXTURES / name, root / name)


def _write_harbor_registry(root: Path) -> None:
    """A local registry folder with one task, and the agent workflow next to it."""
    registry = root / "registry"
    task = registry / "tasks" / "hello"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
    (task / "task.toml").write_text(
        'schema_version = "1.3"\n\n[environment]\nworkdir = "/app"\n\n'
        "[agent]\ntimeout_sec = 120\n\n[verifier]\ntimeout_sec = 60\n"
    )
    (task / "instruction.md").write_text("Say hello.\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(f"#!/bin/bash\n{HARBOR_TEST}\n")
    (task / "tests" / "test.sh").chmod(0o755)
    datasets = [{"name": "demo", "version": "1.0", "description": "", "tasks": [
        {"name": "hello", "path": "tasks/hello"}]}]  # fmt: skip
    (registry / "registry.json").write_text(json.dumps(datasets))
    (root / "harbor_agent.py").write_text(textwrap.dedent(HARBOR_AGENT))


def _rg_scores(generator: str, config: dict[str, Any]) -> Callable[[list[dict[str, Any]]], None]:
    """Each row's reward is Reasoning Gym's own ``score_answer`` of the recorded reply."""

    def check(rows: list[dict[str, Any]]) -> None:
        import reasoning_gym
        from reasoning_gym.utils import extract_answer

        dataset = reasoning_gym.create_dataset(generator, **config)
        for row in rows:
            entry = dataset[row["source_row_index"]]
            expected = dataset.score_answer(extract_answer(row["answer"] or ""), entry)
            assert row["reward"] == pytest.approx(expected), row

    return check


def _first_scorer_is_the_reward(metric: str) -> Callable[[list[dict[str, Any]]], None]:
    def check(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            assert row["reward"] == row["metrics"][metric], row

    return check


def _weighted_rubric(weights: dict[str, float]) -> Callable[[list[dict[str, Any]]], None]:
    """verifiers' reward: the rubric's weighted sum of its reward functions' values."""

    def check(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            total = sum(w * row["metrics"][name] for name, w in weights.items())
            assert row["reward"] == pytest.approx(total), row

    return check


def _harbor_verifier(rows: list[dict[str, Any]]) -> None:
    """The reward is the task's verifier's verdict on the file the agent wrote: the reply."""
    for row in rows:
        assert row["reward"] == (1.0 if "hello" in (row["answer"] or "").lower() else 0.0), row


@dataclass(frozen=True)
class Case:
    spec: str
    rows: int
    metrics: set[str]
    check: Callable[[list[dict[str, Any]]], None]
    args: tuple[str, ...] = field(default=())


LEG_COUNTING = {"size": 3, "seed": 1}
ARITHMETIC = {"size": 2, "seed": 2, "min_terms": 2, "max_terms": 3}
SPELL_BACKWARD = {"size": 2, "seed": 3}
#: A tool choice of "auto" makes llama.cpp's chatml-function-calling format let the model call
#: the offered tools for real (its calls' arguments are often not valid JSON).
TOOLS = ("--model-arg", "tool_choice=auto")

CASES = {
    "rg-leg-counting": Case(
        "reasoning-gym:leg_counting?size=3&seed=1",
        3, {"score", "answered"}, _rg_scores("leg_counting", LEG_COUNTING),
    ),
    "rg-basic-arithmetic": Case(
        "reasoning-gym:basic_arithmetic?size=2&seed=2&min_terms=2&max_terms=3",
        2, {"score", "answered"}, _rg_scores("basic_arithmetic", ARITHMETIC),
    ),
    "rg-spell-backward": Case(
        "reasoning-gym:spell_backward?size=2&seed=3",
        2, {"score", "answered"}, _rg_scores("spell_backward", SPELL_BACKWARD),
    ),
    "verifiers-single-turn": Case(
        "verifiers:real_single_turn",
        2, {"correct", "brief"}, _weighted_rubric({"correct": 1.0, "brief": 0.5}),
    ),
    "verifiers-tools": Case(
        "verifiers:real_tool_env",
        3, {"correct", "brief"}, _weighted_rubric({"correct": 1.0, "brief": 0.1}), TOOLS,
    ),
    "inspect": Case(
        # A bound on the tool loop: under tool_choice "auto" this model calls `add` forever.
        "inspect:arith.py@addition?message_limit=6",
        2, {"match", "includes"}, _first_scorer_is_the_reward("match"), TOOLS,
    ),
    "harbor": Case(
        "harbor:demo@1.0?registry=registry&agent=harbor_agent:WriteTheReply&sandbox=local",
        1, set(), _harbor_verifier,
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def env_workspace(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real-model-envs")
    _write_verifiers(root)
    _write_inspect(root)
    _write_harbor_registry(root)
    return root


@pytest.mark.parametrize("name", list(CASES))
def test_an_environment_runs_on_the_real_model_without_infrastructure_failures(
    cli: Cli, env_workspace: Path, tool_calling_model: Any, name: str
) -> None:
    case = CASES[name]
    result = cli.run(
        "eval", "run", "--env", case.spec, "--model", "smollm2",
        "--base-url", tool_calling_model.base_url, "--limit", str(case.rows), "--name", name,
        "--model-arg", "max_tokens=96", *case.args, "--json", cwd=env_workspace, timeout=600,
    )  # fmt: skip
    assert result.code in (0, 1), result.stderr[-4000:]
    resource = result.json()["resource"]
    rows = read_jsonl(env_workspace / ".osmosis" / "evals" / name / "index.jsonl")
    assert resource["total_work_items"] == case.rows
    assert resource["metrics"]["infrastructure_failures"] == 0, [r["error_message"] for r in rows]
    assert [r["status"] for r in rows] == ["success"] * case.rows, [
        r["error_message"] for r in rows
    ]
    assert case.metrics <= set(resource["metrics"].get("grader_metrics") or {})
    case.check(rows)
