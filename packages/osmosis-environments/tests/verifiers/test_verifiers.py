"""verifiers environments (defined here, in-memory datasets) through ``osmosis eval run --env``
against the real package: each row's reward and per-function metrics equal what verifiers' own
``run_rollout`` computes for the same scripted replies.

The classic ``vf.Environment`` API, which verifiers 0.4 removed: these run where the installed
verifiers is older (the ``environments`` sessions); test_verifiers_v1.py covers 0.4 and later."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from environments_harness import EvalEnv

from osmosis_ai.rollout.integrations.environments import EnvironmentSpecError, load_environment
from osmosis_ai.testing import ScriptedPolicyServer, load_reply_script, run_environment_row

if not hasattr(pytest.importorskip("verifiers"), "Environment"):
    pytest.skip("the classic verifiers API needs verifiers<0.4", allow_module_level=True)

SINGLE_TURN = """
import verifiers as vf
from datasets import Dataset


def load_environment(size: int = 3, bonus: float = 0.5):
    rows = [{"question": f"What is {i} plus {i}?", "answer": str(2 * i)} for i in range(size)]
    parser = vf.XMLParser(["answer"], answer_field="answer")

    def correct(completion, answer, **kwargs) -> float:
        return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0

    def brief(completion, **kwargs) -> float:
        return 1.0 if len(str(parser.parse_answer(completion) or "")) <= 2 else 0.0

    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(rows),
        system_prompt="Answer as <answer>N</answer>.",
        parser=parser,
        rubric=vf.Rubric(funcs=[correct, brief], weights=[1.0, bonus], parser=parser),
    )
"""

TOOLS = '''
import verifiers as vf
from datasets import Dataset


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def load_environment():
    rows = [
        {"question": "What is 6 times 7?", "answer": "42"},
        {"question": "What is 3 times 5?", "answer": "15"},
    ]

    def correct(completion, answer, **kwargs) -> float:
        last = completion[-1]
        text = last.get("content") if isinstance(last, dict) else last.content
        return 1.0 if str(text).strip().endswith(answer) else 0.0

    def used_tool(completion, **kwargs) -> float:
        roles = [m.get("role") if isinstance(m, dict) else m.role for m in completion]
        return 1.0 if "tool" in roles else 0.0

    return vf.ToolEnv(
        dataset=Dataset.from_list(rows),
        tools=[multiply],
        max_turns=4,
        rubric=vf.Rubric(funcs=[correct, used_tool], weights=[1.0, 0.25]),
    )
'''


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def write_module(workspace: Path, name: str, source: str) -> None:
    workspace.mkdir(exist_ok=True)
    (workspace / f"{name}.py").write_text(textwrap.dedent(source))


def verifiers_scores(
    module: str, replies: list[list[Any]], options: dict[str, Any]
) -> list[tuple[float, dict[str, float]]]:
    """What verifiers itself computes: its own ``run_rollout`` (rollout loop + rubric) over the
    same rows, against a policy answering from the same script."""
    import verifiers as vf

    env = vf.load_environment(module, **options)
    dataset: list[dict[str, Any]] = [dict(row) for row in env.get_eval_dataset()]
    script = Path("expected-replies.jsonl")
    script.write_text(
        "".join(json.dumps({"row": i, "replies": r}) + "\n" for i, r in enumerate(replies))
    )
    rows = [list(row["prompt"]) for row in dataset]
    responder = load_reply_script(str(script), rows=rows)
    return asyncio.run(_run_rollouts(env, dataset, responder))


async def _run_rollouts(
    env: Any, rows: list[dict[str, Any]], responder: Any
) -> list[tuple[float, dict[str, float]]]:
    import verifiers as vf
    from openai import AsyncOpenAI

    results = []
    async with ScriptedPolicyServer(responder) as server:
        openai = AsyncOpenAI(base_url=server.chat_completions_url("direct"), api_key="k")
        client = vf.OpenAIChatCompletionsClient(openai)
        for row in rows:
            output = await env.run_rollout(row, client, "scripted", {})
            results.append((float(output["reward"]), dict(output["metrics"])))
        await openai.close()
    return results


def test_a_single_turn_environment_scores_like_verifiers(
    eval_env: EvalEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace"
    write_module(workspace, "arith_env", SINGLE_TURN)
    monkeypatch.chdir(workspace)
    monkeypatch.syspath_prepend(str(workspace))
    replies = [["<answer>0</answer>"], ["<answer>5</answer>"], ["<answer>400</answer>"]]
    result = eval_env("verifiers:arith_env?size=3&bonus=0.25", replies)
    assert [row["status"] for row in result.rows] == ["success"] * 3
    expected = verifiers_scores("arith_env", replies, {"size": 3, "bonus": 0.25})
    assert [(row["reward"], row["metrics"]) for row in result.rows] == expected
    assert [reward for reward, _ in expected] == [1.25, 0.25, 0.0]
    assert set(result.summary["grader_metrics"]) == set(expected[0][1]) >= {"correct", "brief"}
    assert result.rows[0]["label"] == "0"


def test_a_tool_environment_runs_the_tools_and_scores_like_verifiers(
    eval_env: EvalEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace"
    write_module(workspace, "tool_env_mod", TOOLS)
    monkeypatch.chdir(workspace)
    monkeypatch.syspath_prepend(str(workspace))
    replies = [
        [tool_call("multiply", {"a": 6, "b": 7}), "The product is 42"],
        ["It is 16"],  # no tool, wrong
    ]
    result = eval_env("verifiers:tool_env_mod", replies)
    assert [row["status"] for row in result.rows] == ["success"] * 2
    expected = verifiers_scores("tool_env_mod", replies, {})
    assert [(row["reward"], row["metrics"]) for row in result.rows] == expected
    assert [reward for reward, _ in expected] == [1.25, 0.0]
    assert set(result.summary["grader_metrics"]) == set(expected[0][1]) >= {"correct", "used_tool"}
    trajectory = json.loads((result.run_dir / result.rows[0]["trajectory_filename"]).read_text())
    assert "42" in json.dumps(trajectory)


def test_a_module_that_does_not_import_says_how_to_fix_it() -> None:
    with pytest.raises(EnvironmentSpecError, match="cannot import the environment module"):
        load_environment("verifiers:no_such_env_module_here")


def test_an_unknown_argument_names_load_environment_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "arith_env_opts", SINGLE_TURN)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(EnvironmentSpecError, match="its options are bonus, size"):
        load_environment("verifiers:arith_env_opts?sise=2")
    env = load_environment("verifiers:arith_env_opts?size=2")
    assert {"correct", "brief"} <= set(env.metrics)
    assert len(env.rows) == 2
    assert env.rows[1]["ground_truth"] == "2"


async def test_in_process_the_rubric_grades_the_rollout_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
    from osmosis_ai.testing import text_reply, tool_call_reply

    write_module(tmp_path, "tool_env_inproc", TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = load_environment("verifiers:tool_env_inproc")
    script = [tool_call_reply("multiply", {"a": 6, "b": 7}), text_reply("So: 42")]
    async with ScriptedPolicyServer(script) as policy:
        result = await run_environment_row(env, 0, policy=policy)
        requests = policy.requests_for(result.rollout_id)
    await aclose_policy_clients()
    assert result.status == "success", result.err_message
    assert result.reward == 1.25
    assert result.sample is not None
    assert result.sample.metrics["correct"] == 1.0
    assert result.sample.metrics["used_tool"] == 1.0
    assert requests[1].messages[-1]["role"] == "tool"
    assert requests[1].messages[-1]["content"] == "42"
    assert [m["role"] for m in result.sample.messages][-3:] == ["assistant", "tool", "assistant"]


async def test_a_failing_policy_is_an_infrastructure_failure_not_reward_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
    from osmosis_ai.testing import error_reply

    write_module(tmp_path, "arith_env_fail", SINGLE_TURN)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = load_environment("verifiers:arith_env_fail?size=1")
    async with ScriptedPolicyServer([error_reply(503, "the GPU fell over")]) as policy:
        result = await run_environment_row(env, 0, policy=policy)
    await aclose_policy_clients()
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert result.err_message is not None
    assert "the GPU fell over" in result.err_message


def test_something_other_than_a_vf_environment_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        "class Env:\n    env_id = env_args = None\n\n\ndef load_environment():\n    return Env()\n"
    )
    write_module(tmp_path, "not_an_env", source)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(EnvironmentSpecError, match=r"not_an_env\.Env, not a vf\.Environment"):
        load_environment("verifiers:not_an_env")


def test_a_v1_taskset_module_says_which_verifiers_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "a_v1_taskset", "__all__ = ['SomeTaskset']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(EnvironmentSpecError, match=r"needs verifiers 0\.4 or later"):
        load_environment("verifiers:a_v1_taskset")
