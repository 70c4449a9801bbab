"""save_trajectory: files, best-effort behaviour and retention."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path

import pytest

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    Grader,
    GraderContext,
    LocalBackend,
    RolloutSample,
    RolloutStatus,
)
from osmosis_ai.rollout.trajectory import configure_retention, prune_rollout_dirs, save_trajectory
from osmosis_ai.rollout.trajectory import writer as writer_module

MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


@pytest.fixture(autouse=True)
def fresh_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    writer = writer_module._WRITER  # keep its I/O thread; reset only the pruning state
    monkeypatch.setattr(writer, "policy", None)
    monkeypatch.setattr(writer, "_writes_since_prune", 0)
    monkeypatch.setattr(writer, "_last_prune", 0.0)
    monkeypatch.setattr(writer, "_indexes", {})


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def success(sample: RolloutSample | None) -> ExecutionResult:
    return ExecutionResult(status=RolloutStatus.SUCCESS, sample=sample)


async def test_writes_trajectory_under_the_home(osmosis_home: Path) -> None:
    path = await save_trajectory(
        rollout_id="r1",
        result=success(RolloutSample(messages=MESSAGES, reward=1.0)),
        request_label="a",
        request_extra_fields={"row_index": 1},
        diagnostics={"failed_phase": "none"},
    )
    assert path == osmosis_home / "r1" / "trajectory.json"
    assert path is not None
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == "ATIF-v1.7"
    assert doc["session_id"] == "r1"
    assert doc["extra"]["osmosis"]["reward"] == 1.0
    assert doc["extra"]["osmosis"]["request_extra_fields"] == {"row_index": 1}
    assert json.loads((osmosis_home / "r1" / "diagnostics.json").read_text()) == {
        "failed_phase": "none"
    }
    assert [p.name for p in (osmosis_home / "r1").iterdir() if p.name.startswith(".")] == []


async def test_failure_result_keeps_the_archived_reward(osmosis_home: Path) -> None:
    result = ExecutionResult(
        status=RolloutStatus.FAILURE,
        sample=RolloutSample(messages=MESSAGES, reward=0.0),
        err_message="bad",
        err_category=None,
    )
    path = await save_trajectory(rollout_id="f1", result=result)
    assert path is not None
    osmosis = json.loads(path.read_text())["extra"]["osmosis"]
    assert osmosis["status"] == "failure"
    assert osmosis["err_message"] == "bad"
    assert osmosis["reward"] == 0.0


async def test_outcome_uses_result_to_save(osmosis_home: Path) -> None:
    graded = RolloutSample(messages=MESSAGES, reward=0.75)
    outcome = ExecutionOutcome(
        workflow=success(RolloutSample(messages=MESSAGES)), grader=success(graded)
    )
    path = await save_trajectory(rollout_id="o1", result=outcome)
    assert path is not None
    assert json.loads(path.read_text())["extra"]["osmosis"]["reward"] == 0.75


async def test_nothing_without_sample_but_diagnostics_still_written(osmosis_home: Path) -> None:
    assert await save_trajectory(rollout_id="n1", result=success(None)) is None
    assert not (osmosis_home / "n1").exists()
    assert (
        await save_trajectory(rollout_id="n2", result=success(None), diagnostics={"x": 1}) is None
    )
    assert (osmosis_home / "n2" / "diagnostics.json").exists()
    assert not (osmosis_home / "n2" / "trajectory.json").exists()
    no_traj = RolloutSample(messages=MESSAGES, trajectory_messages=None)
    assert await save_trajectory(rollout_id="n3", result=success(no_traj)) is None


async def test_artifact_root_and_supervisor_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await save_trajectory(
        rollout_id="a1",
        result=success(RolloutSample(messages=MESSAGES)),
        artifact_root=tmp_path / "x",
    )
    assert path == tmp_path / "x" / "a1" / "trajectory.json"
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", str(tmp_path / "run"))
    path = await save_trajectory(rollout_id="a2", result=success(RolloutSample(messages=MESSAGES)))
    assert path == tmp_path / "run" / "a2" / "trajectory.json"


async def test_never_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING):
        path = await save_trajectory(
            rollout_id="r1", result=success(RolloutSample(messages=MESSAGES)), artifact_root=blocker
        )
    assert path is None
    assert "could not save the trajectory of rollout 'r1'" in caplog.text
    assert (
        await save_trajectory(rollout_id="../x", result=success(RolloutSample(messages=MESSAGES)))
        is None
    )


def _make_rollout_dir(root: Path, name: str, age_sec: float, file: str = "trajectory.json") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    target = folder / file
    target.write_text("{}")
    stamp = time.time() - age_sec
    os.utime(target, (stamp, stamp))
    return folder


def test_prune_by_count_and_age_spares_foreign_folders(tmp_path: Path) -> None:
    for i in range(5):
        _make_rollout_dir(tmp_path, f"r{i}", age_sec=100 - i)  # r4 newest
    _make_rollout_dir(tmp_path, "diag-only", age_sec=1, file="diagnostics.json")
    (tmp_path / "outbox").mkdir()
    (tmp_path / "outbox" / "pending.json").write_text("{}")
    (tmp_path / "evals").mkdir()
    assert prune_rollout_dirs(tmp_path, max_rollouts=3) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "diag-only",
        "evals",
        "outbox",
        "r3",
        "r4",
    ]
    assert prune_rollout_dirs(tmp_path, max_age_sec=500) == 0
    _make_rollout_dir(tmp_path, "ancient", age_sec=10_000)
    assert prune_rollout_dirs(tmp_path, max_age_sec=1000) == 1
    assert not (tmp_path / "ancient").exists()
    assert prune_rollout_dirs(tmp_path / "missing", max_rollouts=1) == 0


async def test_writer_enforces_the_bound_on_every_write(osmosis_home: Path) -> None:
    # no rescan of the folder after the first write: the bound must hold from the index alone
    configure_retention(max_rollouts=3, max_age_sec=0, prune_every=10**6, prune_interval_sec=3600)
    for i in range(5):
        _make_rollout_dir(osmosis_home, f"old{i}", age_sec=1000 + i)  # old0 newest
    (osmosis_home / "not-a-rollout").mkdir()
    sample = RolloutSample(messages=MESSAGES)
    await save_trajectory(rollout_id="w0", result=success(sample))
    assert names(osmosis_home) == ["not-a-rollout", "old0", "old1", "w0"]
    seen = []
    for i in range(1, 8):
        await save_trajectory(rollout_id=f"w{i}", result=success(sample))
        seen.append(names(osmosis_home))
    assert all(len(listing) == 4 for listing in seen)  # 3 rollouts + the foreign folder
    assert names(osmosis_home) == ["not-a-rollout", "w5", "w6", "w7"]
    # rewriting a kept rollout makes it the newest instead of counting it twice
    await save_trajectory(rollout_id="w5", result=success(sample))
    await save_trajectory(rollout_id="w8", result=success(sample))
    assert names(osmosis_home) == ["not-a-rollout", "w5", "w7", "w8"]


async def test_writer_applies_the_age_bound_as_it_writes(osmosis_home: Path) -> None:
    configure_retention(max_rollouts=0, max_age_sec=500, prune_every=10**6, prune_interval_sec=3600)
    _make_rollout_dir(osmosis_home, "ancient", age_sec=10_000)
    _make_rollout_dir(osmosis_home, "recent", age_sec=10)
    await save_trajectory(rollout_id="a0", result=success(RolloutSample(messages=MESSAGES)))
    assert names(osmosis_home) == ["a0", "recent"]


async def test_writer_rescans_for_folders_written_by_other_processes(osmosis_home: Path) -> None:
    configure_retention(max_rollouts=2, max_age_sec=0, prune_every=1, prune_interval_sec=0)
    sample = RolloutSample(messages=MESSAGES)
    await save_trajectory(rollout_id="p0", result=success(sample))
    _make_rollout_dir(osmosis_home, "other0", age_sec=5)  # another server sharing the home
    _make_rollout_dir(osmosis_home, "other1", age_sec=4)
    await save_trajectory(rollout_id="p1", result=success(sample))  # rescans, sees them
    assert names(osmosis_home) == ["p0", "p1"]  # theirs were the oldest


async def test_supervisor_root_is_never_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_retention(max_rollouts=1, prune_every=1, prune_interval_sec=0)
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_ARTIFACT_ROOT", str(tmp_path))
    for i in range(3):
        await save_trajectory(rollout_id=f"s{i}", result=success(RolloutSample(messages=MESSAGES)))
    assert len(names(tmp_path)) == 3


def test_retention_from_env_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_TRAJECTORY_MAX_ROLLOUTS", "7")
    monkeypatch.setenv("OSMOSIS_TRAJECTORY_MAX_AGE_SEC", "nope")
    policy = writer_module.RetentionPolicy.from_env()
    assert policy.max_rollouts == 7
    assert policy.max_age_sec == 7 * 24 * 3600.0
    with pytest.raises(ValueError, match="max_rollouts must be >= 0"):
        configure_retention(max_rollouts=-1)


async def test_rollout_then_trajectory_end_to_end(osmosis_home: Path) -> None:
    """Reference §H 18: trajectory + grader-written artifacts under <home>/<id>/."""

    class Workflow(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> list[dict[str, str]]:
            return [*ctx.prompt, {"role": "assistant", "content": "#### 42"}]

    class WritingGrader(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            assert ctx.artifacts_dir is not None
            (ctx.artifacts_dir / "grade.txt").write_text("checked")
            ctx.set_reward(1.0)

    request = ExecutionRequest(id="h18", prompt=[{"role": "user", "content": "6*7"}], label="42")
    outcome = await LocalBackend(workflow=Workflow, grader=WritingGrader).execute(request)
    path = await save_trajectory(
        rollout_id="h18",
        result=outcome.result_to_save,
        request_label="42",
        diagnostics=outcome.result.extra_fields,
    )
    assert path is not None
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == "ATIF-v1.7"
    assert doc["session_id"] == "h18"
    assert doc["extra"]["osmosis"]["reward"] == 1.0
    assert (osmosis_home / "h18" / "artifacts" / "grade.txt").read_text() == "checked"


async def test_cancelled_save_does_not_break_later_saves(osmosis_home: Path) -> None:
    sample = RolloutSample(messages=MESSAGES)
    pending = asyncio.ensure_future(save_trajectory(rollout_id="c1", result=success(sample)))
    await asyncio.sleep(0)
    pending.cancel()
    results = await asyncio.gather(
        *(save_trajectory(rollout_id=f"c{i}", result=success(sample)) for i in range(2, 40))
    )
    assert all(path is not None for path in results)
    assert len(names(osmosis_home)) >= 38


def test_saves_from_separate_event_loops(osmosis_home: Path) -> None:
    sample = RolloutSample(messages=MESSAGES)
    for i in range(3):  # each asyncio.run is a new loop; the worker thread serves them all
        assert (
            asyncio.run(save_trajectory(rollout_id=f"loop{i}", result=success(sample))) is not None
        )
    assert names(osmosis_home) == ["loop0", "loop1", "loop2"]


async def test_a_full_trajectory_queue_makes_finishing_rollouts_wait() -> None:
    """Backpressure, not growth: while the writer's queue is at its bound, ``trajectory_room``
    does not return; once the writer catches up it does."""
    import threading

    from osmosis_ai.rollout.trajectory import writer

    gate, busy = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        gate.wait()

    writer._WRITER.post(hold)  # the writer thread is busy with this job
    await asyncio.to_thread(busy.wait)  # (the jobs below queue behind it, not in its batch)
    for _ in range(8):
        writer._WRITER.post(lambda: None)
    waiting = asyncio.create_task(writer.trajectory_room(limit=4))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()
    gate.set()
    await waiting
    await writer.trajectory_room(limit=4)  # room now: returns at once
