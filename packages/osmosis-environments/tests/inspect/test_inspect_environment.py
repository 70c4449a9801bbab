"""An Inspect task (local dataset, a tool, two scorers) run as osmosis rollouts through a real
rollout server, against the real ``inspect-ai`` package and the scripted policy on 127.0.0.1.

Rewards are checked against Inspect itself: the same final answer is scored by calling the
task's scorers directly and mapping with Inspect's ``value_to_float``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.rollout.integrations.environments import (
    Environment,
    EnvironmentSpecError,
    environment_source,
    load_environment,
)
from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
from osmosis_ai.rollout.types import RolloutStatus
from osmosis_ai.testing import ScriptedPolicyServer, run_environment_row, serve_app
from osmosis_ai.testing.replies import Reply, error_reply, text_reply, tool_call_reply

FIXTURES = Path(__file__).parent / "fixtures"
TASK_FILE = FIXTURES / "arith.py"
#: The answer the scripted policy gives per sample: right for a1 and a2, wrong for a3.
WRONG = {"What is 7 + 8?": "14"}


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    return home


def _question(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _numbers(question: str) -> dict[str, int]:
    a, b = (int(x) for x in re.findall(r"\d+", question))
    return {"a": a, "b": b}


def _tool_result(body: dict[str, Any]) -> str | None:
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    return str(tools[-1]["content"]) if tools else None


def adder(body: dict[str, Any]) -> Reply:
    """Calls ``add`` first, then answers with the tool's result (or the scripted wrong one)."""
    question, result = _question(body), _tool_result(body)
    if result is None:
        return tool_call_reply("add", _numbers(question))
    return text_reply(WRONG.get(question, result))


def react_adder(body: dict[str, Any]) -> Reply:
    """The same, finishing through react's ``submit`` tool."""
    question, result = _question(body), _tool_result(body)
    if result is None:
        return tool_call_reply("add", _numbers(question))
    return tool_call_reply("submit", {"answer": WRONG.get(question, result)})


async def _run(env: Environment, policy: ScriptedPolicyServer) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with serve_app(env.create_app()) as url, RolloutClient(url=url) as client:
        handles = {}
        for row in env.rows:
            rid = str(row["metadata"]["inspect_sample"]["id"])
            handles[rid] = await client.run_rollout_async(
                row["messages"],
                policy.chat_completions_url(rid),
                rid,
                llm_api_key="policy-key",
                label=row["ground_truth"],
                metadata=row["metadata"],
            )
        for rid, handle in handles.items():
            results[rid] = await handle
    await aclose_policy_clients()
    return results


async def _inspect_rewards(spec: str, answer: str, sample_id: str) -> dict[str, float]:
    """What Inspect's own scorers give ``answer`` for that sample (value_to_float mapped)."""
    from inspect_ai._eval.loader import load_tasks
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Target, value_to_float
    from inspect_ai.solver import TaskState

    (task,) = load_tasks([spec])
    sample = next(s for s in task.dataset if s.id == sample_id)
    assert isinstance(sample.input, str)
    state = TaskState(
        model="openai/m",  # type: ignore[arg-type]
        sample_id=sample_id,
        epoch=1,
        input=sample.input,
        messages=[ChatMessageUser(content=sample.input), ChatMessageAssistant(content=answer)],
        target=Target(sample.target),
        output=ModelOutput.from_content("m", answer),
    )
    to_float = value_to_float()
    scores = {}
    for name, scorer in zip(("match", "includes"), task.scorer or [], strict=True):
        score = await scorer(state, Target(sample.target))
        assert score is not None
        scores[name] = to_float(score.value)
    return scores


@pytest.fixture
async def adder_policy() -> AsyncIterator[ScriptedPolicyServer]:
    async with ScriptedPolicyServer(adder) as server:
        yield server


async def test_tool_solver_and_two_scorers_through_a_rollout_server(
    adder_policy: ScriptedPolicyServer,
) -> None:
    env = load_environment(f"inspect:{TASK_FILE}@addition?prefix=Reply+with+digits.")
    assert env.metrics == ("match", "includes")
    assert env.rows[0]["messages"] == [{"role": "user", "content": "What is 2 + 3?"}]
    results = await _run(env, adder_policy)

    for rid, answer in (("a1", "5"), ("a2", "42"), ("a3", "14")):
        result = results[rid]
        assert result.status == RolloutStatus.SUCCESS, result.err_message
        expected = await _inspect_rewards(f"{TASK_FILE}@addition", answer, rid)
        assert result.sample.reward == expected["match"]
        assert {k: result.sample.metrics[k] for k in env.metrics} == expected
    assert [results[r].sample.reward for r in ("a1", "a2", "a3")] == [1.0, 1.0, 0.0]

    first = adder_policy.requests_for("a1")
    assert len(first) == 2  # the tool call, then the answer
    assert first[0].bearer_token == "policy-key"
    assert first[0].body["messages"][0] == {"role": "system", "content": "Reply with digits."}
    assert [t["function"]["name"] for t in first[0].body["tools"]] == ["add"]
    assert first[1].body["messages"][-1]["content"] == "5"  # Inspect ran the tool
    trajectory = results["a1"].sample.messages
    assert [m["role"] for m in trajectory] == ["system", "user", "assistant", "tool", "assistant"]
    # The task's per-sample cleanup ran once per rollout (the task as the workflow loaded it).
    from osmosis_ai.rollout.integrations.environments.inspect._run import load_task

    config: Any = env.workflow_config
    cleanup: Any = load_task(config.task, config.task_arg_values).cleanup
    assert sorted(cleanup.__globals__["CLEANED"]) == ["a1", "a2", "a3"]


def messy(body: dict[str, Any]) -> Reply:
    """What a small real model does: a tool call whose arguments are not JSON, a call of a tool
    that was not offered, then an empty reply."""
    turn = sum(m["role"] == "assistant" for m in body["messages"])
    if turn == 0:
        return tool_call_reply("add", '{"a": 2, "b":')
    if turn == 1:
        return tool_call_reply("subtract", {"a": 1})
    return text_reply("")


async def test_messy_model_output_is_graded_never_an_infrastructure_failure() -> None:
    """Inspect answers the bad calls with tool errors and the scorers grade the empty answer:
    every row succeeds with Inspect's own reward for an empty answer (0 here)."""
    env = load_environment(f"inspect:{TASK_FILE}@addition")
    async with ScriptedPolicyServer(messy) as policy:
        results = await _run(env, policy)
        calls = policy.requests_for("a1")
    for rid in ("a1", "a2", "a3"):
        result = results[rid]
        assert result.status == RolloutStatus.SUCCESS, result.err_message
        expected = await _inspect_rewards(f"{TASK_FILE}@addition", "", rid)
        assert result.sample.reward == expected["match"] == 0.0
        assert result.sample.metrics["includes"] == expected["includes"]
    tool_replies = [m for m in calls[-1].body["messages"] if m["role"] == "tool"]
    assert len(tool_replies) == 2
    assert all("error" in str(m["content"]).lower() for m in tool_replies), tool_replies


async def test_react_agent_solver() -> None:
    env = load_environment(f"inspect:{TASK_FILE}@addition_agent")
    async with ScriptedPolicyServer(react_adder) as policy:
        results = await _run(env, policy)
    for rid, answer in (("a1", "5"), ("a2", "42"), ("a3", "14")):
        result = results[rid]
        assert result.status == RolloutStatus.SUCCESS, result.err_message
        expected = await _inspect_rewards(f"{TASK_FILE}@addition_agent", answer, rid)
        assert result.sample.reward == expected["match"]
        assert result.sample.metrics["includes"] == expected["includes"]
    assert [results[r].sample.reward for r in ("a1", "a2", "a3")] == [1.0, 1.0, 0.0]


SANDBOXED = FIXTURES / "sandboxed.py"


def shell_user(body: dict[str, Any]) -> Reply:
    """s1: `bash` reads the sample's file and setup output and writes ready.txt; s2: `python`
    (its code on stdin) writes the wrong word; then each answers."""
    question = _question(body)
    if _tool_result(body) is not None:
        return text_reply("done: ready" if "Python" not in question else "done")
    if "Python" in question:
        return tool_call_reply("python", {"code": "open('ready.txt', 'w').write('steady')"})
    (tool,) = [t for t in body["tools"] if t["function"]["name"] == "bash"]
    (argument,) = tool["function"]["parameters"]["properties"]  # `cmd`, or newer `command`
    command = "cat seed.txt prepared.txt && echo ready > ready.txt"
    return tool_call_reply("bash", {argument: command})


async def test_a_sandboxed_task_runs_on_harbors_local_sandbox() -> None:
    """sandbox='docker' without configuration: tools, sample files, setup and a scorer reading
    the sandbox all reach one Harbor local sandbox per sample; rewards are Inspect's mapping."""
    pytest.importorskip(
        "osmosis_ai.rollout.backend.harbor.local_environment",
        reason="Harbor's local sandbox comes with osmosis-harbor",
    )
    env = load_environment(f"inspect:{SANDBOXED}@shell")
    assert "in Harbor's local sandbox" in env.description
    async with ScriptedPolicyServer(shell_user) as policy:
        results = await _run(env, policy)
        s1 = policy.requests_for("s1")
    assert {rid: r.status for rid, r in results.items()} == {
        "s1": RolloutStatus.SUCCESS,
        "s2": RolloutStatus.SUCCESS,
    }
    assert (results["s1"].sample.reward, results["s2"].sample.reward) == (1.0, 0.0)
    assert results["s1"].sample.metrics["includes"] == 1.0
    tool_output = next(m for m in s1[-1].body["messages"] if m["role"] == "tool")["content"]
    assert "seeded" in tool_output  # the sample's file
    assert "prepared" in tool_output  # what its setup script wrote


async def test_a_scorer_failing_in_the_sandbox_is_a_grader_failure() -> None:
    pytest.importorskip(
        "osmosis_ai.rollout.backend.harbor.local_environment",
        reason="Harbor's local sandbox comes with osmosis-harbor",
    )
    env = load_environment(f"inspect:{SANDBOXED}@broken_scorer")
    async with ScriptedPolicyServer([text_reply("done")]) as policy:
        results = await _run(env, policy)
    (result,) = results.values()
    assert result.status != RolloutStatus.SUCCESS
    assert "scorer failed in the sandbox: RuntimeError: this scorer always fails" in (
        result.err_message or ""
    )
    # Raised by the grader, after the workflow's sample was made (as without a sandbox).
    assert result.sample is not None
    assert result.sample.reward is None


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("custom_image", r"'custom_image' needs the Inspect sandbox 'docker' with its own "
         r"configuration \('compose.yaml'.*needs Docker.*inspect eval --sandbox docker"),
        ("elsewhere", r"'elsewhere' needs the Inspect sandbox 'k8s', which osmosis cannot "
         r"provide.*Run the task with `inspect eval`"),
    ],
)  # fmt: skip
def test_a_sandbox_harbor_cannot_run_is_refused_by_name(task: str, message: str) -> None:
    with pytest.raises(EnvironmentSpecError, match=message):
        load_environment(f"inspect:{FIXTURES / 'sandboxed.py'}@{task}")


def test_a_sandboxed_task_without_osmosis_harbor_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unconfigured 'docker' sandbox runs on Harbor's local sandbox, from osmosis-harbor."""
    monkeypatch.setitem(sys.modules, "osmosis_ai.rollout.backend.harbor.local_environment", None)
    with pytest.raises(EnvironmentSpecError, match=r"needs a sandbox.*pip install.*harbor"):
        load_environment(f"inspect:{TASK_FILE}@in_a_sandbox")


def test_unknown_task_says_how_to_name_one() -> None:
    with pytest.raises(EnvironmentSpecError, match=r"FILE\.py@TASK"):
        load_environment(f"inspect:{TASK_FILE}@no_such_task")


def test_list_finds_the_tasks_in_a_file() -> None:
    source: Any = environment_source("inspect")
    specs = [info.spec for info in source.list(TASK_FILE)]
    assert [s.rsplit("@", 1)[1] for s in specs] == ["addition", "addition_agent", "in_a_sandbox"]
    assert all(s.startswith("inspect:") for s in specs)


def test_rows_are_the_osmosis_dataset_format() -> None:
    env = load_environment(f"inspect:{TASK_FILE}@addition")
    assert env.rows[1] == {
        "messages": [{"role": "user", "content": "What is 10 + 32?"}],
        "ground_truth": "42",
        "metadata": {"inspect_sample": {"input": "What is 10 + 32?", "target": "42", "id": "a2"}},
    }
    json.dumps(list(env.rows))  # JSON lines as a dataset file


async def test_a_failed_policy_call_is_an_http_error_sent_once() -> None:
    """Neither Inspect nor the openai client retries: the trainer's endpoint sees one request,
    and the failure is osmosis's ``http_error`` (infrastructure), never a graded answer."""
    env = load_environment(f"inspect:{TASK_FILE}@addition")
    async with ScriptedPolicyServer([error_reply(500, {"error": {"message": "boom"}})]) as policy:
        result = await run_environment_row(env, 0, policy=policy)
        assert len(policy.requests) == 1
    await aclose_policy_clients()
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert "HTTP 500" in (result.err_message or "")
    assert result.reward is None


def test_the_task_file_is_found_from_any_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative FILE.py is resolved at load time: the rollout server may run elsewhere."""
    monkeypatch.chdir(FIXTURES)
    env = load_environment("inspect:arith.py@addition")
    config: Any = env.workflow_config
    assert config.task == f"{TASK_FILE.resolve()}@addition"
