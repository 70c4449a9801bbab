"""Constructor rules, environment selection, task references, the bundle cache, secret hygiene."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import ModuleType

import pytest
from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import (
    LOCAL_ENVIRONMENT_IMPORT_PATH,
    EnvironmentSelectionError,
    HarborBackend,
    TaskMode,
    environment_config_from_env,
    local_environment_config,
)
from osmosis_ai.rollout.backend.harbor.bundle import build_bundle, prune_cache
from osmosis_ai.rollout.backend.harbor.native import native_agent_config
from osmosis_ai.rollout.backend.harbor.tasks import TaskSelectionError, select_task
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.types.execution import ExecutionRequest

SECRET = "sk-rollout-key-abcdef123456"
OWN_KEY = "user-provider-key-987654"


@pytest.mark.parametrize(
    ("legacy", "replacement"),
    [
        ("task_dir", "tasks_dir="),
        ("workflow", "agent="),
        ("user_code_dir", "code_dir="),
        ("custom_tests_dir", "tests/test.sh"),
        ("prebuild_local_image", "prewarm()"),
    ],
)
def test_legacy_keyword_arguments_name_their_replacement(
    queue: TrialQueue, hello_task: Path, legacy: str, replacement: str
) -> None:
    with pytest.raises(TypeError, match="migration-guides/v0-3") as info:
        HarborBackend(orchestrator=queue, tasks_dir=hello_task, agent="nop", **{legacy: "x"})
    assert replacement in str(info.value)
    assert repr(legacy) in str(info.value)


def test_a_pre_0_3_constructor_call_names_every_replacement(tmp_path: Path) -> None:
    """The 0.2-style call, without the 0.3 required arguments, still gets the migration
    message (not Python's generic missing-argument TypeError)."""
    with pytest.raises(TypeError) as info:
        HarborBackend(task_dir=tmp_path, user_code_dir=tmp_path, workflow="m:W")  # type: ignore[call-arg]
    message = str(info.value)
    for old, new in (
        ("task_dir", "tasks_dir="),
        ("user_code_dir", "code_dir="),
        ("workflow", "agent="),
    ):
        assert f"{old!r} was removed in osmosis 0.3; use {new}" in message
    assert "migration-guides/v0-3" in message
    with pytest.raises(TypeError, match="needs orchestrator=: a harbor TrialQueue"):
        HarborBackend(tasks_dir=tmp_path, agent="nop")
    with pytest.raises(TypeError, match="needs tasks_dir="):
        HarborBackend(orchestrator=TrialQueue(n_concurrent=1), agent="nop")


def test_reward_rule_arguments(queue: TrialQueue, hello_task: Path) -> None:
    with pytest.raises(ValueError, match="reward_key= or reward_weights=, not both"):
        HarborBackend(
            orchestrator=queue,
            tasks_dir=hello_task,
            agent="nop",
            reward_key="a",
            reward_weights={"a": 1.0},
        )
    with pytest.raises(ValueError, match="reward_weights must map reward names to numbers"):
        HarborBackend(
            orchestrator=queue, tasks_dir=hello_task, agent="nop", reward_weights={"a": "x"}
        )  # type: ignore[dict-item]


def test_constructor_rejects_unsafe_or_inconsistent_settings(
    queue: TrialQueue, hello_task: Path, multiply_project: ModuleType
) -> None:
    retrying = TrialQueue(n_concurrent=1, retry_config=RetryConfig(max_retries=2))
    with pytest.raises(ValueError, match="max_retries=0"):
        HarborBackend(orchestrator=retrying, tasks_dir=hello_task, agent="nop")
    with pytest.raises(ValueError, match="max_queue_depth"):
        HarborBackend(orchestrator=queue, tasks_dir=hello_task, agent="nop", max_queue_depth=0)
    with pytest.raises(ValueError, match="native_agent_kwargs"):
        HarborBackend(
            orchestrator=queue,
            tasks_dir=hello_task,
            agent="multiply_rollout:MultiplyWorkflow",
            native_agent_kwargs={"max_turns": 3},
        )
    with pytest.raises(ValueError, match="claude-code"):
        HarborBackend(orchestrator=queue, tasks_dir=hello_task, agent="claude-code")
    with pytest.raises(ValueError, match="task_mode"):
        HarborBackend(orchestrator=queue, tasks_dir=hello_task, agent="nop", task_mode="rows")
    with pytest.raises(TypeError, match="Grader"):
        HarborBackend(
            orchestrator=queue,
            tasks_dir=hello_task,
            agent="nop",
            grader="multiply_rollout:MultiplyWorkflow",
        )


def test_environment_selection_never_guesses() -> None:
    with pytest.raises(EnvironmentSelectionError, match="skypilot, docker, local"):
        environment_config_from_env({})
    with pytest.raises(EnvironmentSelectionError, match="'kubernetes' is not a known"):
        environment_config_from_env({"OSMOSIS_HARBOR_ENV": "kubernetes"})
    docker = environment_config_from_env({"OSMOSIS_HARBOR_ENV": "docker"})
    assert str(getattr(docker.type, "value", docker.type)) == "docker"
    local = environment_config_from_env({"OSMOSIS_HARBOR_ENV": "LOCAL"})
    assert local.import_path == LOCAL_ENVIRONMENT_IMPORT_PATH
    assert local.kwargs == {"auto_mounting": True}  # Harbor 0.26 binds the log dirs


def test_osmosis_harbor_env_overrides_the_environment_a_rollout_passes(
    queue: TrialQueue,
    hello_task: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 38: a 0.3.x rollout (the workspace template's) hard-codes Harbor's Docker
    environment; the operator's OSMOSIS_HARBOR_ENV is where its trials run."""
    from harbor.models.environment_type import EnvironmentType
    from harbor.models.trial.config import EnvironmentConfig

    hard_coded = EnvironmentConfig(type=EnvironmentType.DOCKER)
    unset = HarborBackend(
        orchestrator=queue, tasks_dir=hello_task, agent="nop", environment_config=hard_coded
    )
    assert unset.health()["chat_endpoint"]["environment"] == "docker"  # unset: the argument

    monkeypatch.setenv("OSMOSIS_HARBOR_ENV", "local")
    with caplog.at_level("WARNING"):
        backend = HarborBackend(
            orchestrator=queue, tasks_dir=hello_task, agent="nop", environment_config=hard_coded
        )
    assert backend.health()["chat_endpoint"]["environment"] == "local"
    assert "OSMOSIS_HARBOR_ENV=local overrides the environment_config" in caplog.text
    assert "(docker): trials run in local" in caplog.text

    # The same kind passed with settings of its own is kept as it is, without a warning.
    caplog.clear()
    own = local_environment_config(python="/usr/bin/python3")
    with caplog.at_level("WARNING"):
        same = HarborBackend(
            orchestrator=queue, tasks_dir=hello_task, agent="nop", environment_config=own
        )
    assert same._config.environment is own
    assert "overrides" not in caplog.text

    monkeypatch.setenv("OSMOSIS_HARBOR_ENV", "kubernetes")
    with pytest.raises(EnvironmentSelectionError, match="'kubernetes' is not a known"):
        HarborBackend(
            orchestrator=queue, tasks_dir=hello_task, agent="nop", environment_config=hard_coded
        )


def test_task_references(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    pinned = select_task(
        mode=TaskMode.DATASET, tasks_dir=tasks, metadata={"harbor_task": "acme/fix-bug@3"}
    )
    assert (pinned.kind, pinned.org, pinned.name, pinned.ref) == ("package", "acme", "fix-bug", "3")
    git = select_task(
        mode=TaskMode.TEMPLATE,
        tasks_dir=tasks,
        metadata={
            "harbor_task": "tasks/a",
            "git_url": "https://git.example/r.git",
            "git_commit_id": "abc",
        },
    )
    assert (git.kind, git.git_url, git.git_commit_id, str(git.path)) == (
        "git",
        "https://git.example/r.git",
        "abc",
        "tasks/a",
    )
    local = select_task(mode=TaskMode.TEMPLATE, tasks_dir=tasks, metadata={"harbor_task": "./x"})
    assert (local.kind, local.path) == ("local", tasks / "x")
    assert select_task(mode=TaskMode.TEMPLATE, tasks_dir=tasks, metadata=None).path == tasks
    with pytest.raises(TaskSelectionError, match="neither a local path"):
        select_task(
            mode=TaskMode.DATASET, tasks_dir=tasks, metadata={"harbor_task": "no spaces allowed"}
        )


async def test_symlinked_task_files_are_rejected(queue: TrialQueue, hello_task: Path) -> None:
    (hello_task / "tests" / "link.sh").symlink_to("/etc/hostname")
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=hello_task,
        agent="oracle",
        environment_config=local_environment_config(),
    )
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="sym"):
        outcome = await backend.execute(ExecutionRequest(id="sym", prompt=[]))
    assert outcome.result.err_category == "validation_error"
    assert "symlink" in (outcome.result.err_message or "")
    await backend.shutdown()


def test_native_agents_get_the_rollout_endpoint() -> None:
    terminus = native_agent_config(
        "terminus-2",
        model_name="openai/p",
        chat_completions_url="http://h/v1/rollouts/r",
        api_key=SECRET,
    )
    assert terminus.kwargs["api_base"] == "http://h/v1/rollouts/r"
    assert terminus.kwargs["llm_kwargs"] == {"api_key": SECRET}
    swe = native_agent_config(
        "mini-swe-agent", model_name="openai/p", chat_completions_url="http://h/v1", api_key=SECRET
    )
    assert swe.env["OPENAI_API_BASE"] == "http://h/v1"
    assert swe.env["OPENAI_API_KEY"] == SECRET
    # Harbor redacts key-like env values when it writes the trial config.
    assert SECRET not in swe.model_dump_json()


async def test_secrets_in_agent_kwargs_never_stay_in_the_trial_dir(
    queue: TrialQueue, hello_task: Path
) -> None:
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=hello_task,
        agent="nop",
        # Key-like kwargs (as terminus-2's llm_kwargs.api_key): Harbor writes kwargs verbatim.
        native_agent_kwargs={"llm_kwargs": {"api_key": OWN_KEY}, "note": f"key={SECRET}"},
        environment_config=local_environment_config(),
        cleanup_successful_trials=False,
    )
    with RolloutContext(
        chat_completions_url="http://127.0.0.1:9/v1", api_key=SECRET, rollout_id="scrub"
    ):
        outcome = await backend.execute(ExecutionRequest(id="scrub", prompt=[]))
    assert outcome.result.sample is not None
    assert outcome.result.sample.reward == 0.0
    files = [p for p in backend.trials_dir.rglob("*") if p.is_file()]
    assert any(p.name == "config.json" for p in files)
    assert [p for p in files if SECRET.encode() in p.read_bytes()] == []
    assert [p for p in files if OWN_KEY.encode() in p.read_bytes()] == []
    await backend.shutdown()


def test_bundles_are_content_addressed_and_the_cache_is_pruned(
    tmp_path: Path, multiply_project: ModuleType
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "flow.py").write_text("X = 1\n")
    (project / ".venv").mkdir()
    (project / ".venv" / "huge.bin").write_bytes(b"\0" * 1024)
    cache = tmp_path / "cache"
    spec = {"workflow": "flow:Flow"}
    first = build_bundle(project, spec, cache_dir=cache)
    again = build_bundle(project, spec, cache_dir=cache)
    assert again.wheel == first.wheel  # unchanged project: no rebuild
    (project / "flow.py").write_text("X = 2\n")
    changed = build_bundle(project, spec, cache_dir=cache)
    assert changed.digest != first.digest
    import zipfile

    names = zipfile.ZipFile(changed.wheel).namelist()
    assert f"{changed.package}/project/flow.py" in names
    assert not any(".venv" in n for n in names)

    old = first.wheel.parent
    stale = time.time() - 30 * 24 * 3600
    os.utime(old, (stale, stale))
    removed = prune_cache(cache, max_age_sec=7 * 24 * 3600, max_bytes=10**9)
    assert removed == [old]
    assert changed.wheel.exists()
    removed = prune_cache(cache, max_age_sec=7 * 24 * 3600, max_bytes=0, keep=changed.wheel.parent)
    assert removed == []
    assert changed.wheel.exists()
    assert prune_cache(cache, max_age_sec=7 * 24 * 3600, max_bytes=0) == [changed.wheel.parent]
