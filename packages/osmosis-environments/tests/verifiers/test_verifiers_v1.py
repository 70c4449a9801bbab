"""verifiers v1 tasksets (defined here, in-memory tasks) through ``osmosis eval run --env``
against the real verifiers 0.4+: verifiers runs each episode (its chat harness as a uv-script
program, its tool servers, its interception server) against the scripted policy, and each row's
reward and per-function metrics equal what the task's own scorer (``Task.score``) computes on
the recorded conversation.

Runs where the installed verifiers has no classic API (the ``environments_verifiers_v1``
session); test_verifiers.py covers the classic API of older releases. The harness program's
dependencies are installed by uv on first use (verifiers' own design), so the first run needs
PyPI or a warm uv cache."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from environments_harness import EvalEnv

from osmosis_ai.rollout.integrations.environments import EnvironmentSpecError, load_environment
from osmosis_ai.testing import ScriptedPolicyServer, run_environment_row

if hasattr(pytest.importorskip("verifiers"), "Environment"):
    pytest.skip("the v1 Taskset/Harness API needs verifiers>=0.4", allow_module_level=True)

SINGLE_TURN = '''
import verifiers.v1 as vf


class SumData(vf.TaskData):
    answer: str


class SumTask(vf.Task[SumData]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return 1.0 if trace.last_reply.endswith(self.data.answer) else 0.0

    @vf.reward(weight=0.5)
    async def brief(self, trace: vf.Trace) -> float:
        return 1.0 if len(trace.last_reply) <= 12 else 0.0

    @vf.metric
    async def turns(self, trace: vf.Trace) -> float:
        return float(trace.num_turns)


class SumConfig(vf.TasksetConfig):
    size: int = 3


class SumTaskset(vf.Taskset[SumTask, SumConfig]):
    """Sums of a number with itself."""

    def load(self) -> list[SumTask]:
        return [
            SumTask(SumData(prompt=f"What is {i} plus {i}?", answer=str(2 * i),
                            system_prompt="Answer with the number last."))
            for i in range(self.config.size)
        ]


__all__ = ["SumTaskset"]
'''

TOOLS = '''
import verifiers.v1 as vf


class MathToolset(vf.Toolset[vf.ToolsetConfig]):
    TOOL_PREFIX = "math"

    @vf.tool
    def multiply(self, a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b


class MulData(vf.TaskData):
    answer: str


class MulTaskConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class MulTask(vf.Task[MulData, vf.State, MulTaskConfig]):
    @classmethod
    def toolsets(cls, config: MulTaskConfig) -> list[vf.Toolset]:
        return [MathToolset(config.tools)]

    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return 1.0 if trace.last_reply.endswith(self.data.answer) else 0.0

    @vf.reward(weight=0.25)
    async def used_tool(self, trace: vf.Trace) -> float:
        return 1.0 if trace.tool_messages else 0.0


class MulConfig(vf.TasksetConfig):
    task: MulTaskConfig = MulTaskConfig()


class MulTaskset(vf.Taskset[MulTask, MulConfig]):
    def load(self) -> list[MulTask]:
        return [MulTask(MulData(prompt="What is 6 times 7?", answer="42"), self.config.task)]


__all__ = ["MulTaskset"]


if __name__ == "__main__":
    MathToolset.run()
'''


def write_module(workspace: Path, name: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The taskset module in ``workspace``, importable here, in the rollout server and in the
    tool servers verifiers starts (``python -m <module>``)."""
    workspace.mkdir(exist_ok=True)
    (workspace / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(workspace))
    monkeypatch.setenv("PYTHONPATH", str(workspace))


def assistant(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def verifiers_scores(
    taskset_id: str, conversations: list[list[dict[str, Any]]], **options: Any
) -> list[tuple[float, dict[str, float]]]:
    """What verifiers itself computes: each task's own scorer (``Task.score``) on a trace
    holding the conversation osmosis recorded for it."""
    import verifiers.v1 as vf
    from verifiers.v1.dialects.chat import parse_message
    from verifiers.v1.trace import AgentInfo, TraceTask

    config = vf.taskset_config_type(taskset_id)(id=taskset_id, **options)
    tasks = list(vf.load_taskset(config))
    results = []
    for task, conversation in zip(tasks, conversations, strict=True):
        trace = vf.Trace(
            task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            agent=AgentInfo(config=vf.AgentConfig(runtime=vf.SubprocessConfig())),
            nodes=[
                vf.MessageNode(
                    parent=index - 1 if index else None,
                    message=parse_message(message),
                    sampled=message["role"] == "assistant",
                )
                for index, message in enumerate(conversation)
            ],
        )
        await task.score(trace)
        scores = {name: r.score for name, r in trace.rewards.items() if r is not None}
        results.append(
            (trace.reward, scores | {k: v for k, v in trace.metrics.items() if v is not None})
        )
    return results


def trajectory(result: Any, row: dict[str, Any]) -> str:
    return (result.run_dir / row["trajectory_filename"]).read_text()


async def test_a_single_turn_taskset_scores_like_verifiers(
    eval_env: EvalEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path / "workspace", "sum_tasks_v1", SINGLE_TURN, monkeypatch)
    replies = ["It is 0", "The sum is 5", "Two plus two is 4"]
    # two at once: the rollouts share verifiers' serving resources (its interception server)
    spec = "verifiers:sum_tasks_v1?size=3&harness=null"
    result = eval_env(spec, [[r] for r in replies], "--workers", "2")
    assert [row["status"] for row in result.rows] == ["success"] * 3, result.rows
    system = {"role": "system", "content": "Answer with the number last."}
    conversations = [
        [system, {"role": "user", "content": f"What is {i} plus {i}?"}, assistant(reply)]
        for i, reply in enumerate(replies)
    ]
    expected = await verifiers_scores("sum_tasks_v1", conversations, size=3)
    assert [(row["reward"], row["metrics"]) for row in result.rows] == expected
    assert [reward for reward, _ in expected] == [1.5, 0.5, 1.0]
    assert set(result.summary["grader_metrics"]) == {"correct", "brief", "turns"}
    assert result.rows[2]["label"] == "4"


async def test_a_tool_taskset_runs_its_tool_server_and_scores_like_verifiers(
    eval_env: EvalEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path / "workspace", "mul_tasks_v1", TOOLS, monkeypatch)
    replies = [[tool_call("math_multiply", {"a": 6, "b": 7}), "The product is 42"]]
    result = eval_env("verifiers:mul_tasks_v1?harness=null", replies)
    assert [row["status"] for row in result.rows] == ["success"], result.rows
    steps = json.loads(trajectory(result, result.rows[0]))["steps"]
    assert steps[1]["tool_calls"][0]["function_name"] == "math_multiply"
    assert steps[1]["observation"]["results"][0]["content"] == "42"  # its tool server ran it
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "math_multiply", "arguments": '{"a": 6, "b": 7}'},
    }
    messages = [
        {"role": "user", "content": "What is 6 times 7?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        assistant("The product is 42"),
    ]
    expected = await verifiers_scores("mul_tasks_v1", [messages])
    assert [(row["reward"], row["metrics"]) for row in result.rows] == expected
    assert expected[0][0] == 1.25
    assert set(result.summary["grader_metrics"]) == {"correct", "used_tool"}


def test_options_are_the_taskset_config_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "sum_tasks_opts", SINGLE_TURN, monkeypatch)
    with pytest.raises(EnvironmentSpecError, match=r"its options are .*harness.*size"):
        load_environment("verifiers:sum_tasks_opts?sise=2")
    env = load_environment("verifiers:sum_tasks_opts?size=2&harness=null")
    assert env.metrics == ("brief", "correct", "turns")
    assert env.rows[1]["messages"] == [
        {"role": "system", "content": "Answer with the number last."},
        {"role": "user", "content": "What is 1 plus 1?"},
    ]
    assert env.rows[1]["ground_truth"] == "2"


def test_a_classic_module_says_which_verifiers_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "classic_env", "def load_environment():\n    return None\n", monkeypatch)
    with pytest.raises(EnvironmentSpecError, match=r"pip install 'verifiers<0\.4'"):
        load_environment("verifiers:classic_env")


def test_a_container_harness_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "sum_tasks_codex", SINGLE_TURN, monkeypatch)
    with pytest.raises(EnvironmentSpecError, match="harness 'codex' runs in a container"):
        load_environment("verifiers:sum_tasks_codex?harness=codex")


def test_a_taskset_with_its_own_env_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own_env = SINGLE_TURN.replace(
        '__all__ = ["SumTaskset"]',
        'class JudgedEnv(vf.SingleAgentEnv):\n    pass\n\n\n__all__ = ["SumTaskset", "JudgedEnv"]',
    )
    write_module(tmp_path, "sum_tasks_own_env", own_env, monkeypatch)
    with pytest.raises(EnvironmentSpecError, match=r"brings its own Env \(JudgedEnv\)"):
        load_environment("verifiers:sum_tasks_own_env?harness=null")


async def test_in_process_the_recorded_rewards_grade_the_rollout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
    from osmosis_ai.testing import text_reply

    write_module(tmp_path, "sum_tasks_inproc", SINGLE_TURN, monkeypatch)
    env = load_environment("verifiers:sum_tasks_inproc?size=1&harness=null")
    async with ScriptedPolicyServer([text_reply("It is 0")]) as policy:
        result = await run_environment_row(env, policy=policy)
        requests = policy.requests_for(result.rollout_id)
    await aclose_policy_clients()
    assert result.status == "success", result.err_message
    assert result.reward == 1.5
    assert result.sample is not None
    assert result.sample.metrics == {"correct": 1.0, "brief": 1.0, "turns": 1.0}
    assert [m["role"] for m in result.sample.messages] == ["system", "user", "assistant"]
    assert requests[0].messages[-1] == {"role": "user", "content": "What is 0 plus 0?"}


async def test_a_failing_policy_is_an_infrastructure_failure_not_reward_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
    from osmosis_ai.testing import error_reply

    write_module(tmp_path, "sum_tasks_fail", SINGLE_TURN, monkeypatch)
    env = load_environment("verifiers:sum_tasks_fail?size=1&harness=null")
    async with ScriptedPolicyServer([error_reply(400, "the GPU fell over")]) as policy:
        result = await run_environment_row(env, policy=policy)
    await aclose_policy_clients()
    assert (result.status, result.err_category) == ("failure", "http_error")
    assert result.err_message is not None
    assert "the GPU fell over" in result.err_message
