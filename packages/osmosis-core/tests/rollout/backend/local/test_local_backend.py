"""LocalBackend: every rule of its contract, on real asyncio tasks (no sleeps as synchronisation)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    AgentWorkflowOutput,
    ConcurrencyConfig,
    ExecutionRequest,
    Grader,
    GraderConfig,
    GraderContext,
    LocalBackend,
    RolloutContext,
    RolloutErrorCategory,
    RolloutProgress,
    RolloutSample,
    RolloutStatus,
    SampleSource,
    get_rollout_context,
)
from osmosis_ai.rollout.backend.local._artifacts import ArtifactsDir

ANSWER = [{"role": "assistant", "content": "42"}]


class Answer(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        return [*ctx.prompt, *ANSWER]


class Noop(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        return ANSWER


class ExactGrader(Grader):
    """Reward 1.0 when the last message equals the label; also works without a label."""

    async def grade(self, ctx: GraderContext) -> None:
        assert ctx.sample is not None
        last = ctx.sample.messages[-1]["content"]
        ctx.set_reward(1.0 if ctx.label is not None and last == ctx.label else 0.0)


class Gate:
    """Lets a test hold workflows inside run() and release them (no sleeps)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.count = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> Gate:
        return self  # shared on purpose: the test observes every rollout through one gate

    async def hold(self) -> None:
        self.count += 1
        self.entered.set()
        await self.release.wait()


class Gated(AgentWorkflow[AgentWorkflowConfig]):
    """Waits on ``config.gate`` (a :class:`Gate`, shared because it holds asyncio objects)."""

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        assert ctx.config is not None
        await ctx.config.gate.hold()  # type: ignore[attr-defined]
        return ANSWER


class Forever(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        await asyncio.Event().wait()


class ListSource(SampleSource):
    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages

    async def get_sample(self) -> RolloutSample:
        return RolloutSample(messages=self.messages)


class ViaSampleSource(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> None:
        rollout = get_rollout_context()
        assert rollout is not None
        rollout.set_sample_source(ListSource([*ctx.prompt, *ANSWER]))
        return None


class WithMetrics(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> AgentWorkflowOutput:
        return AgentWorkflowOutput(messages=ANSWER, metrics={"turns": 1.0}, info={"debug": "x"})


class Records(AgentWorkflow[AgentWorkflowConfig]):
    """Records instance identity and the config it saw."""

    instances: list[AgentWorkflow[Any]] = []
    configs: list[Any] = []

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        Records.instances.append(self)  # keep it alive so identities stay distinct
        Records.configs.append(ctx.config)
        assert ctx.config is self.config
        return ANSWER


UNCOPYABLE_LOCK = threading.Lock()


def request(rollout_id: str = "r1", **kwargs: Any) -> ExecutionRequest:
    kwargs.setdefault("prompt", [{"role": "user", "content": "6*7?"}])
    return ExecutionRequest(id=rollout_id, **kwargs)


def gated_config(gate: Gate, **kwargs: Any) -> AgentWorkflowConfig:
    return AgentWorkflowConfig.model_validate({"name": "gated", "gate": gate, **kwargs})


async def wait_until(predicate: Any) -> None:
    """Yield to the loop until ``predicate()`` holds (bounded, no wall-clock sleeps)."""
    for _ in range(10_000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


# -- results and samples -----------------------------------------------------------------


async def test_success_with_grader_rewards_the_sample() -> None:
    backend = LocalBackend(workflow=Answer, grader=ExactGrader)
    outcome = await backend.execute(request(label="42"))
    result = outcome.result
    assert result.status == RolloutStatus.SUCCESS
    assert result.err_message is None
    assert result.err_category is None
    assert result.sample is not None
    assert result.sample.reward == 1.0
    assert result.sample.label == "42"
    assert result.sample.messages[-1] == ANSWER[0]
    # the workflow phase keeps its own, ungraded sample
    assert outcome.workflow.sample is not None
    assert outcome.workflow.sample.reward is None
    assert outcome.result_to_save is outcome.grader


async def test_output_metrics_become_sample_metrics_and_info_goes_to_diagnostics() -> None:
    outcome = await LocalBackend(workflow=WithMetrics).execute(request(label="l"))
    assert outcome.result.sample is not None
    assert outcome.result.sample.metrics == {"turns": 1.0}
    assert outcome.result.sample.label == "l"
    assert outcome.workflow.extra_fields == {"workflow_info": {"debug": "x"}}


async def test_none_return_uses_the_ambient_sample_source_and_fills_the_label() -> None:
    outcome = await LocalBackend(workflow=ViaSampleSource, grader=ExactGrader).execute(
        request(label="42")
    )
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert outcome.result.sample is not None
    assert outcome.result.sample.label == "42"
    assert outcome.result.sample.reward == 1.0


async def test_returning_a_string_is_a_validation_error() -> None:
    class ReturnsStr(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            return "str"

    result = (await LocalBackend(workflow=ReturnsStr).execute(request())).result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert result.err_message is not None
    assert result.err_message.startswith("run() must return AgentWorkflowOutput")


async def test_nan_metric_in_returned_output_is_a_validation_error() -> None:
    class NanMetric(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            output = AgentWorkflowOutput(messages=ANSWER)
            output.metrics["m"] = float("nan")  # in-place edit, re-validated on return
            return output

    result = (await LocalBackend(workflow=NanMetric).execute(request())).result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.VALIDATION_ERROR


async def test_workflow_exception_is_an_agent_error_with_its_message() -> None:
    class Kaboom(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            raise RuntimeError("kaboom")

    result = (await LocalBackend(workflow=Kaboom, grader=ExactGrader).execute(request())).result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.AGENT_ERROR
    assert result.err_message == "kaboom"
    assert result.extra_fields is not None
    traceback = result.extra_fields.pop("traceback")
    assert result.extra_fields == {"failed_phase": "workflow", "exception_type": "RuntimeError"}
    # the diagnostics keep where it was raised: this file, the raising line, the exception
    assert f'File "{__file__}"' in traceback
    assert 'raise RuntimeError("kaboom")' in traceback
    assert traceback.rstrip().endswith("RuntimeError: kaboom")


async def test_empty_exception_message_names_the_type() -> None:
    class Bare(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            raise KeyError

    result = (await LocalBackend(workflow=Bare).execute(request())).result
    assert result.err_message == "KeyError"


async def test_policy_http_error_is_categorized_http_error() -> None:
    from osmosis_ai.rollout.errors import PolicyHTTPError

    class PolicyDown(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            raise PolicyHTTPError(503, "overloaded", "http://policy")

    result = (await LocalBackend(workflow=PolicyDown).execute(request())).result
    assert result.err_category == RolloutErrorCategory.HTTP_ERROR
    assert result.err_message is not None
    assert "503" in result.err_message


# -- grading rules -------------------------------------------------------------------------


async def test_grade_false_skips_the_grader() -> None:
    graded: list[str] = []

    class Spy(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            graded.append("x")

    outcome = await LocalBackend(workflow=Answer, grader=Spy).execute(
        request(label="42", grade=False)
    )
    assert outcome.grader is None
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward is None
    assert graded == []


async def test_grader_runs_without_label_or_metadata() -> None:
    seen: list[GraderContext] = []

    class LabelFree(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            seen.append(ctx)
            ctx.set_reward(0.5)

    outcome = await LocalBackend(workflow=Answer, grader=LabelFree).execute(request())
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward == 0.5
    assert seen[0].label is None
    assert seen[0].metadata is None


async def test_without_a_grader_the_workflow_result_is_the_result() -> None:
    outcome = await LocalBackend(workflow=Answer).execute(request(label="42"))
    assert outcome.grader is None
    assert outcome.result.status == RolloutStatus.SUCCESS
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward is None


async def test_grader_setting_reward_then_raising_fails_with_null_reward() -> None:
    class Raises(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            ctx.set_reward(1.0)
            raise ValueError("bad label format")

    result = (await LocalBackend(workflow=Answer, grader=Raises).execute(request(label="x"))).result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert result.err_message == "bad label format"
    assert result.sample is not None
    assert result.sample.reward is None


async def test_grader_without_reward_fails_saying_so() -> None:
    class Forgets(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            return None

    result = (await LocalBackend(workflow=Answer, grader=Forgets).execute(request())).result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert result.err_message is not None
    assert result.err_message.startswith("Sample has no reward after grading")


async def test_remove_sample_is_a_success_without_reward() -> None:
    class Removes(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            assert ctx.sample is not None
            ctx.sample.remove_sample = True

    backend = LocalBackend(workflow=Answer, grader=Removes)
    result = (await backend.execute(request())).result
    assert result.status == RolloutStatus.SUCCESS
    assert result.sample is not None
    assert result.sample.remove_sample is True
    assert result.sample.reward is None


async def test_grader_without_sample_fails_and_set_reward_raises() -> None:
    class NoSample(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> None:
            return None

    errors: list[str] = []

    class Tries(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            try:
                ctx.set_reward(1.0)
            except ValueError as exc:
                errors.append(str(exc))

    result = (await LocalBackend(workflow=NoSample, grader=Tries).execute(request())).result
    assert errors == ["GraderContext has no sample to reward"]
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert result.err_message is not None
    assert result.err_message.startswith("No sample to grade")


async def test_grader_receives_its_config_and_a_fresh_instance() -> None:
    instances: list[Grader] = []

    class Configured(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            instances.append(self)
            assert self.config is not None
            ctx.set_reward(float(self.config.weight))  # type: ignore[attr-defined]

    backend = LocalBackend(
        workflow=Answer,
        grader=Configured,
        grader_config=GraderConfig.model_validate({"name": "g", "weight": 3}),
    )
    first = await backend.execute(request("a"))
    second = await backend.execute(request("b"))
    assert first.result.sample is not None
    assert first.result.sample.reward == 3.0
    assert second.result.status == RolloutStatus.SUCCESS
    assert len(instances) == 2


# -- deadlines -----------------------------------------------------------------------------


async def test_agent_deadline() -> None:
    result = (await LocalBackend(workflow=Forever).execute(request(agent_timeout_sec=0.1))).result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "workflow exceeded its 0.1s deadline"


async def test_expired_deadline_fails_without_running() -> None:
    ran: list[bool] = []

    class Marks(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            ran.append(True)
            await asyncio.sleep(0)
            return ANSWER

    result = (await LocalBackend(workflow=Marks).execute(request(agent_timeout_sec=0))).result
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "workflow exceeded its 0s deadline"
    assert ran == []


async def test_agent_deadline_counts_queue_time() -> None:
    gate = Gate()
    backend = LocalBackend(workflow=Gated, workflow_config=gated_config(gate), max_concurrency=1)
    holder = asyncio.create_task(backend.execute(request("holder")))
    await gate.entered.wait()
    queued = await backend.execute(request("queued", agent_timeout_sec=0.15))
    assert queued.result.err_category == RolloutErrorCategory.TIMEOUT
    assert queued.result.err_message is not None
    assert queued.result.err_message.startswith("workflow exceeded its 0.15s deadline (0.")
    assert queued.result.err_message.endswith("s of it spent queued)")
    assert gate.count == 1  # the queued rollout never started
    gate.release.set()
    assert (await holder).result.status == RolloutStatus.SUCCESS


async def test_user_timeout_error_keeps_its_message() -> None:
    class OwnTimeout(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            raise TimeoutError("tool call timed out")

    result = (await LocalBackend(workflow=OwnTimeout).execute(request(agent_timeout_sec=5))).result
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "tool call timed out"


async def test_swallowed_deadline_is_still_a_timeout() -> None:
    class Swallows(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
            return ANSWER

    result = (await LocalBackend(workflow=Swallows).execute(request(agent_timeout_sec=0.05))).result
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "workflow exceeded its 0.05s deadline"


async def test_blocking_past_the_deadline_is_a_timeout() -> None:
    import time

    class Blocks(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            time.sleep(0.06)  # noqa: ASYNC251  # blocks the loop on purpose: the deadline cannot interrupt it
            return ANSWER

    result = (await LocalBackend(workflow=Blocks).execute(request(agent_timeout_sec=0.05))).result
    assert result.err_category == RolloutErrorCategory.TIMEOUT


async def test_grader_has_its_own_deadline() -> None:
    class SlowGrader(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            await asyncio.Event().wait()

    outcome = await LocalBackend(workflow=Answer, grader=SlowGrader).execute(
        # the agent's deadline is generous (an instant workflow must not miss it on a loaded
        # machine); the grader gets its own 0.05 s, not what is left of the agent's
        request(agent_timeout_sec=30, grader_timeout_sec=0.05)
    )
    result = outcome.result
    assert outcome.workflow.status == RolloutStatus.SUCCESS
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "grader exceeded its 0.05s deadline"
    assert result.sample is not None
    assert result.sample.reward is None


async def test_grader_swallowing_its_deadline_is_still_a_timeout() -> None:
    """Issue 38 item 5 (0.3.8: ``failure/timeout "grader exceeded its ... deadline"``)."""

    class SwallowingGrader(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
            ctx.set_reward(1.0)  # too late: past the deadline

    outcome = await LocalBackend(workflow=Answer, grader=SwallowingGrader).execute(
        request(agent_timeout_sec=30, grader_timeout_sec=0.05)
    )
    result = outcome.result
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "grader exceeded its 0.05s deadline"
    assert result.sample is not None
    assert result.sample.reward is None


# -- instances, configs, contexts, artifacts ------------------------------------------------


async def test_fresh_workflow_instance_and_deep_copied_config() -> None:
    Records.instances.clear()
    Records.configs.clear()
    config = AgentWorkflowConfig.model_validate({"name": "c", "items": [1, 2]})
    backend = LocalBackend(workflow=Records, workflow_config=config)
    await backend.execute(request("a"))
    await backend.execute(request("b"))
    first_instance, second_instance = Records.instances
    assert first_instance is not second_instance
    first, second = Records.configs
    assert first is not config
    assert first is not second
    assert first.items == [1, 2]
    assert first.items is not config.items  # pyright: ignore[reportAttributeAccessIssue]


async def test_uncopyable_config_fields_are_shared_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    Records.configs.clear()
    lock = threading.Lock()
    config = AgentWorkflowConfig.model_validate({"name": "c", "lock": lock, "items": [1]})
    backend = LocalBackend(workflow=Records, workflow_config=config)
    for rollout_id in ("a", "b"):
        assert (await backend.execute(request(rollout_id))).result.status == RolloutStatus.SUCCESS
    first, second = Records.configs
    assert first.lock is lock
    assert second.lock is lock
    assert first.items is not config.items  # pyright: ignore[reportAttributeAccessIssue]
    assert sum("cannot be deep-copied" in r.getMessage() for r in caplog.records) == 1


async def test_enters_a_context_built_from_the_request_and_reports_progress() -> None:
    seen: list[RolloutContext | None] = []
    statuses: list[RolloutStatus] = []

    class Looks(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            seen.append(get_rollout_context())
            return ANSWER

    progress = RolloutProgress(on_status=statuses.append)
    backend = LocalBackend(workflow=Looks, grader=ExactGrader)
    await backend.execute(
        request(
            "r1",
            chat_completions_url="http://policy/v1/rollouts/r1",
            api_key="k",
            process_id="p-1",
        ),
        progress,
    )
    ctx = seen[0]
    assert ctx is not None
    assert (ctx.chat_completions_url, ctx.api_key, ctx.rollout_id, ctx.process_id) == (
        "http://policy/v1/rollouts/r1",
        "k",
        "r1",
        "p-1",
    )
    assert ctx.progress is progress
    assert statuses == [RolloutStatus.RUNNING, RolloutStatus.GRADING]
    assert get_rollout_context() is None


async def test_endpoint_falls_back_to_the_callers_context_then_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0.3.8 callers entered their own RolloutContext around execute(request)."""
    monkeypatch.setenv("OSMOSIS_CHAT_COMPLETIONS_URL", "http://env-policy/v1")
    seen: list[RolloutContext | None] = []

    class Looks(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            seen.append(get_rollout_context())
            return ANSWER

    backend = LocalBackend(workflow=Looks)
    with RolloutContext(rollout_id="outer", chat_completions_url="http://x", api_key="k") as outer:
        await backend.execute(request("mine"))
        assert get_rollout_context() is outer
    await backend.execute(request("bare"))
    assert seen[0] is not None
    assert (seen[0].rollout_id, seen[0].chat_completions_url, seen[0].api_key) == (
        "mine",
        "http://x",
        "k",
    )
    assert seen[1] is not None
    assert (seen[1].rollout_id, seen[1].chat_completions_url) == ("bare", "http://env-policy/v1")
    assert get_rollout_context() is None


async def test_artifacts_dir_is_shared_lazy_and_per_rollout(osmosis_home: Path) -> None:
    class Writes(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            assert ctx.artifacts_dir is not None
            (ctx.artifacts_dir / "workflow.txt").write_text("w")
            return ANSWER

    class WritesToo(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            assert ctx.artifacts_dir is not None
            assert (ctx.artifacts_dir / "workflow.txt").read_text() == "w"
            (ctx.artifacts_dir / "grader.txt").write_text("g")
            ctx.set_reward(1.0)

    await LocalBackend(workflow=Writes, grader=WritesToo).execute(request("art"))
    assert sorted(p.name for p in (osmosis_home / "art" / "artifacts").iterdir()) == [
        "grader.txt",
        "workflow.txt",
    ]
    await LocalBackend(workflow=Noop).execute(request("idle"))
    assert not (osmosis_home / "idle").exists()  # nothing written, nothing created


def test_artifacts_dir_creates_itself_on_filesystem_use(tmp_path: Path) -> None:
    path = ArtifactsDir(tmp_path, "r", "artifacts")
    assert not (tmp_path / "r").exists()
    assert path.is_dir()  # stat() goes through os.fspath
    other = ArtifactsDir(tmp_path, "s", "artifacts")
    with open(other / "f.txt", "w") as handle:
        handle.write("x")
    assert (tmp_path / "s" / "artifacts" / "f.txt").read_text() == "x"
    assert repr(ArtifactsDir(tmp_path, "t")).startswith("ArtifactsDir(")
    assert not (tmp_path / "t").exists()


async def test_artifact_root_override(tmp_path: Path) -> None:
    class Writes(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            assert ctx.artifacts_dir is not None
            (ctx.artifacts_dir / "a.txt").write_text("a")
            return ANSWER

    await LocalBackend(workflow=Writes, artifact_root=tmp_path / "root").execute(request("x"))
    assert (tmp_path / "root" / "x" / "artifacts" / "a.txt").exists()


# -- concurrency, capacity, status -----------------------------------------------------------


async def test_default_concurrency_is_unbounded() -> None:
    gate = Gate()
    backend = LocalBackend(workflow=Gated, workflow_config=gated_config(gate))
    assert backend.max_concurrency is None
    tasks = [asyncio.create_task(backend.execute(request(f"r{i}"))) for i in range(50)]
    await wait_until(lambda: gate.count == 50)
    assert backend.health()["concurrency"] == {"max_concurrent": None, "queued": 0, "running": 50}
    gate.release.set()
    results = await asyncio.gather(*tasks)
    assert {r.result.status for r in results} == {RolloutStatus.SUCCESS}


async def test_config_concurrency_caps_and_kwarg_overrides() -> None:
    gate = Gate()
    config = gated_config(gate, concurrency=ConcurrencyConfig(max_concurrent=2))
    backend = LocalBackend(workflow=Gated, workflow_config=config)
    assert backend.max_concurrency == 2
    assert (
        LocalBackend(workflow=Gated, workflow_config=config, max_concurrency=7).max_concurrency == 7
    )
    tasks = [asyncio.create_task(backend.execute(request(f"r{i}"))) for i in range(5)]
    await wait_until(lambda: gate.count == 2)
    await wait_until(lambda: backend.health()["concurrency"]["queued"] == 3)
    assert backend.health()["concurrency"]["running"] == 2
    gate.release.set()
    await asyncio.gather(*tasks)
    assert gate.count == 5


async def test_has_capacity_follows_max_queue_depth() -> None:
    gate = Gate()
    backend = LocalBackend(
        workflow=Gated, workflow_config=gated_config(gate), max_concurrency=1, max_queue_depth=2
    )
    assert backend.has_capacity()
    tasks = [asyncio.create_task(backend.execute(request(f"r{i}"))) for i in range(2)]
    await wait_until(lambda: gate.count == 1)
    assert backend.has_capacity()  # one queued < 2
    tasks.append(asyncio.create_task(backend.execute(request("r2"))))
    await wait_until(lambda: backend.health()["concurrency"]["queued"] == 2)
    assert not backend.has_capacity()
    gate.release.set()
    await asyncio.gather(*tasks)
    assert backend.has_capacity()
    assert LocalBackend(workflow=Noop).has_capacity()


async def test_progress_is_running_only_with_a_slot_then_grading() -> None:
    gate = Gate()
    observed: list[RolloutStatus] = []
    progress = {rid: RolloutProgress() for rid in ("a", "b")}

    class WaitsInGrading(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            rollout = get_rollout_context()
            assert rollout is not None
            assert rollout.progress is not None
            observed.append(rollout.progress.status)
            ctx.set_reward(1.0)

    backend = LocalBackend(
        workflow=Gated,
        workflow_config=gated_config(gate),
        grader=WaitsInGrading,
        max_concurrency=1,
    )
    first = asyncio.create_task(backend.execute(request("a"), progress["a"]))
    await gate.entered.wait()
    second = asyncio.create_task(backend.execute(request("b"), progress["b"]))
    await wait_until(lambda: backend.health()["concurrency"]["queued"] == 1)
    assert (progress["a"].status, progress["b"].status) == (
        RolloutStatus.RUNNING,
        RolloutStatus.QUEUED,
    )
    gate.release.set()
    await asyncio.gather(first, second)
    assert observed == [RolloutStatus.GRADING, RolloutStatus.GRADING]
    assert progress["b"].status == RolloutStatus.GRADING  # terminal states are the server's
    assert backend.health()["grading"] == 0


async def test_0_3_8_status_and_cancel_hooks_are_inert() -> None:
    """0.3.8's LocalBackend answered ``None`` / ``{}``; the server owns status and cancel."""
    backend = LocalBackend(workflow=Noop)
    await backend.execute(request("r1"))
    assert backend.rollout_status("r1") is None
    assert backend.cancel_rollouts(ids=["r1"]) == {}
    assert backend.cancel_rollouts(all=True) == {}


async def test_thousand_noop_rollouts_at_concurrency_256() -> None:
    backend = LocalBackend(workflow=Noop, max_concurrency=256)
    outcomes = await asyncio.gather(*(backend.execute(request(f"n{i}")) for i in range(1000)))
    assert len(outcomes) == 1000
    assert all(o.result.status.is_terminal for o in outcomes)
    assert {o.result.status for o in outcomes} == {RolloutStatus.SUCCESS}
    health = backend.health()
    assert health["in_flight"] == 0
    assert health["concurrency"] == {"max_concurrent": 256, "queued": 0, "running": 0}


async def test_duplicate_in_flight_id_is_rejected() -> None:
    gate = Gate()
    backend = LocalBackend(workflow=Gated, workflow_config=gated_config(gate))
    first = asyncio.create_task(backend.execute(request("dup")))
    await gate.entered.wait()
    second = (await backend.execute(request("dup"))).result
    assert second.err_category == RolloutErrorCategory.VALIDATION_ERROR
    assert second.err_message is not None
    assert "already executing" in second.err_message
    gate.release.set()
    assert (await first).result.status == RolloutStatus.SUCCESS


# -- cancellation ---------------------------------------------------------------------------


async def test_cancelling_queued_and_running_callers_frees_slots_and_counts() -> None:
    gate = Gate()
    backend = LocalBackend(workflow=Gated, workflow_config=gated_config(gate), max_concurrency=1)
    running = asyncio.create_task(backend.execute(request("run")))
    await gate.entered.wait()
    queued = asyncio.create_task(backend.execute(request("wait")))
    third = asyncio.create_task(backend.execute(request("third")))
    await wait_until(lambda: backend.health()["concurrency"]["queued"] == 2)
    queued.cancel()
    running.cancel()
    for task in (running, queued):
        with pytest.raises(asyncio.CancelledError):
            await task
    await wait_until(lambda: gate.count == 2)  # the third rollout got the freed slot
    gate.release.set()
    assert (await third).result.status == RolloutStatus.SUCCESS
    assert backend.health()["concurrency"] == {"max_concurrent": 1, "queued": 0, "running": 0}
    assert backend.health()["in_flight"] == 0
    # the id is free again
    assert (await backend.execute(request("run"))).result.status == RolloutStatus.SUCCESS


async def test_shutdown_refuses_new_rollouts() -> None:
    backend = LocalBackend(workflow=Noop)
    await backend.shutdown()
    after = (await backend.execute(request("y"))).result
    assert after.err_category == RolloutErrorCategory.INTERNAL_ERROR
    assert after.err_message == "LocalBackend is shut down"
    assert backend.health()["accepting"] is False


# -- construction ---------------------------------------------------------------------------


def test_health_shape() -> None:
    health = LocalBackend(workflow=Noop, max_queue_depth=5).health()
    assert health["status"] == "ok"
    assert health["concurrency"] == {"max_concurrent": None, "queued": 0, "running": 0}
    assert health["max_queue_depth"] == 5
    assert health["backend"] == "local"


def test_import_path_strings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_rollout_mod.py").write_text(
        "from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, Grader\n"
        "class W(AgentWorkflow):\n"
        "    async def run(self, ctx):\n"
        "        return []\n"
        "class G(Grader):\n"
        "    async def grade(self, ctx):\n"
        "        ctx.set_reward(1)\n"
        "CONFIG = AgentWorkflowConfig(name='w')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_rollout_mod", raising=False)
    backend = LocalBackend(
        workflow="my_rollout_mod:W",
        grader="my_rollout_mod:G",
        workflow_config="my_rollout_mod:CONFIG",
    )
    assert backend.workflow_cls.__name__ == "W"
    assert backend.grader_cls is not None
    assert backend.workflow_config is not None
    with pytest.raises(ValueError, match="expected 'module:attr' format"):
        LocalBackend(workflow="my_rollout_mod.W")
    with pytest.raises(ImportError, match="has no attribute 'Missing'"):
        LocalBackend(workflow="my_rollout_mod:Missing")
    with pytest.raises(ModuleNotFoundError):
        LocalBackend(workflow="no_such_module_xyz:W")


def test_constructor_rejects_wrong_arguments() -> None:
    with pytest.raises(TypeError, match="pass the class itself"):
        LocalBackend(workflow=Noop())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="AgentWorkflow subclass"):
        LocalBackend(workflow=int)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Grader subclass"):
        LocalBackend(workflow=Noop, grader=ExactGrader())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="workflow_config"):
        LocalBackend(workflow=Noop, workflow_config={"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_concurrency"):
        LocalBackend(workflow=Noop, max_concurrency=0)
    with pytest.raises(ValueError, match="max_queue_depth"):
        LocalBackend(workflow=Noop, max_queue_depth=0)
    with pytest.raises(TypeError):
        LocalBackend(Noop)  # type: ignore[misc]  # keyword-only


def test_sample_source_type_is_exported() -> None:
    assert issubclass(ListSource, SampleSource)
    assert RolloutSample(messages=[]).reward is None


# -- 0.3.8 public surface: run_workflow / run_grader, limiter, artifact_root -------------------


async def test_run_workflow_alone_enforces_the_deadline_minus_queue_time() -> None:
    backend = LocalBackend(workflow=Forever)
    result = await backend.run_workflow(request("d", agent_timeout_sec=0.05))
    assert result.status == RolloutStatus.FAILURE
    assert result.err_category == RolloutErrorCategory.TIMEOUT
    assert result.err_message == "workflow exceeded its 0.05s deadline"
    # Queue time already spent comes out of the budget (and is named in the message).
    spent = await backend.run_workflow(request("q", agent_timeout_sec=5), queued_sec=5)
    assert spent.err_message == "workflow exceeded its 5s deadline (5.0s of it spent queued)"
    assert backend.health()["concurrency"]["running"] == 0  # no slot involved


async def test_run_workflow_then_run_grader() -> None:
    backend = LocalBackend(workflow=Answer, grader=ExactGrader)
    req = request("g", label="42")
    workflow = await backend.run_workflow(req)
    assert workflow.status == RolloutStatus.SUCCESS
    assert workflow.sample is not None
    graded = await backend.run_grader(req, workflow)
    assert graded.status == RolloutStatus.SUCCESS
    assert graded.sample is not None
    assert graded.sample.reward == 1.0
    assert workflow.sample.reward is None  # the grader worked on a copy
    assert await LocalBackend(workflow=Answer).run_grader(req, workflow) is workflow


async def test_limiter_and_artifact_root_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", str(tmp_path / "supervised"))
    backend = LocalBackend(workflow=Noop, max_concurrency=3)
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", str(tmp_path / "later"))
    assert backend.artifact_root == tmp_path / "supervised"  # read once, at construction
    limiter = backend.limiter
    assert limiter.max_concurrent == 3
    assert limiter.snapshot() == {"max_concurrent": 3, "queued": 0, "running": 0}
    async with limiter.acquire():
        assert limiter.snapshot()["running"] == 1
    assert limiter.snapshot() == backend.health()["concurrency"]
