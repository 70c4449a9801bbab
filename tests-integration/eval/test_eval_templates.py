"""Each template, after `osmosis template apply`, evaluated end to end by the real CLI against a
scripted policy that solves the multiply task (tool call, then ``#### <product>``)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from eval_support import Cli

from osmosis_ai.testing import ScriptedPolicyServer

TEMPLATES = {
    "multiply-local-strands": ("strands", {}),
    "multiply-local-openai": ("agents", {}),
    "multiply-local-pydantic-ai": ("pydantic_ai", {}),
    "multiply-local-langgraph": ("langgraph", {}),
    "multiply-local-adk": ("google.adk", {}),
    # No framework: a hand-written loop on the openai client (ctx.policy.client()).
    "multiply-local-plain": ("openai", {}),
    # The Docker-free sandbox of the Harbor backend (tests only).
    "multiply-harbor-strands": ("harbor", {"OSMOSIS_HARBOR_ENV": "local"}),
}


def _workspace(cli: Cli, root: Path, template: str) -> Path:
    init = cli.run("init", str(root), cwd=root.parent)
    assert init.code == 0, init.stderr
    applied = cli.run("template", "apply", template, cwd=root)
    assert applied.code == 0, applied.stderr
    return root / "configs" / "eval" / f"{template}.toml"


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_template_solved_by_the_scripted_policy_gets_reward_1(
    cli: Cli, tmp_path: Path, solving_policy: ScriptedPolicyServer, template: str
) -> None:
    framework, env = TEMPLATES[template]
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    config = _workspace(cli, ws, template)
    result = cli.run(
        "eval", "run", str(config), "--limit", "2", "--name", "t",
        "--base-url", solving_policy.url, "--model", "scripted", "--json",
        cwd=ws, env=env, timeout=300,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    envelope = result.json()
    assert envelope["operation"] == "eval.run"
    assert envelope["status"] == "success"
    resource = envelope["resource"]
    assert resource["total_work_items"] == 2
    assert resource["succeeded"] == 2
    assert resource["failed"] == 0
    assert resource["skipped"] == 0
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
    assert resource["metrics"]["pass_rate"] == 1.0
    assert resource["output_path"] == str(ws / ".osmosis" / "evals" / "t")

    run = Path(resource["output_path"])
    index = [json.loads(line) for line in (run / "index.jsonl").read_text().splitlines()]
    assert [i["reward"] for i in index] == [1.0, 1.0]
    for item in index:
        assert item["trajectory_filename"] is not None, item
        trajectory = json.loads((run / item["trajectory_filename"]).read_text())
        assert trajectory["schema_version"].startswith("ATIF")
        calls = trajectory["extra"]["osmosis"]["llm_calls"]
        assert len(calls) >= 2  # the tool call turn and the answer turn, seen by the proxy
        assert all(call["status_code"] == 200 for call in calls)
        # training safety (docs/guides/training-safe-rollouts.md): every template sends each
        # earlier turn back byte for byte. Strands alone would re-render tool arguments with
        # json.dumps ('{"a":2,"b":3}' -> '{"a": 2, "b": 3}'); osmosis-strands restores the
        # policy's raw argument strings, so its templates are append-only too.
        verdict = item["training_safety"]
        assert trajectory["extra"]["osmosis"]["training_safety"] == verdict
        assert verdict["threads"] == 1
        assert verdict["append_only"] is True, json.dumps(verdict)
    safety = envelope["resource"]["metrics"]["training_safety"]
    assert (safety["rollouts"], safety["append_only"], safety["causes"]) == (2, 2, {})
    # no reward-hacking tripwire fires on a shipped template (docs/tripwires.md)
    tripwires = envelope["resource"]["metrics"]["tripwires"]
    assert (tripwires["rows"], tripwires["by_name"], tripwires["silenced"]) == (0, {}, {})
    assert all("tripwires" not in item for item in index)


@pytest.mark.parametrize(
    "template",
    [
        "multiply-local-adk",
        "multiply-local-langgraph",
        "multiply-local-openai",
        "multiply-local-plain",
        "multiply-local-pydantic-ai",
        "multiply-local-strands",
    ],
)
def test_template_earns_1_through_two_worker_processes(
    cli: Cli, tmp_path: Path, solving_policy: ScriptedPolicyServer, template: str
) -> None:
    """The rollout server runs the template's rollouts in 2 worker processes (``--workers 2``):
    the context, policy calls, grader and trajectories work the same as in one process."""
    framework, env = TEMPLATES[template]
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    config = _workspace(cli, ws, template)
    result = cli.run(
        "eval", "run", str(config), "--limit", "4", "--name", "w", "--workers", "2",
        "--base-url", solving_policy.url, "--model", "scripted", "--json",
        cwd=ws, env=env, timeout=300,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert (resource["succeeded"], resource["failed"]) == (4, 0)
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
    run = Path(resource["output_path"])
    index = [json.loads(line) for line in (run / "index.jsonl").read_text().splitlines()]
    assert all(item["trajectory_filename"] is not None for item in index)


#: ``main.py`` of a local template rewritten for ``HarborBackend`` in template mode: the same
#: workflow, grader and config, one Harbor trial per rollout (the rollout's prompt becomes the
#: task's instruction), in the Docker-free local sandbox.
HARBOR_MAIN = """
from pathlib import Path

from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue
from {package}.config import config
from {package}.grader import MultiplyGrader
from {package}.workflow import MultiplyWorkflow

from osmosis_ai.rollout.backend.harbor import HarborBackend, environment_config_from_env
from osmosis_ai.rollout.server import create_rollout_server

backend = HarborBackend(
    orchestrator=TrialQueue(n_concurrent=2, retry_config=RetryConfig(max_retries=0)),
    tasks_dir=Path(__file__).parent / "task",
    agent=MultiplyWorkflow,
    grader=MultiplyGrader,
    workflow_config=config,
    environment_config=environment_config_from_env(),
)
app = create_rollout_server(backend=backend)
"""


@pytest.mark.parametrize(
    "template", ["multiply-local-langgraph", "multiply-local-pydantic-ai", "multiply-local-adk"]
)
def test_a_local_template_earns_1_in_harbor_template_mode(
    cli: Cli, tmp_path: Path, solving_policy: ScriptedPolicyServer, template: str
) -> None:
    """The template's workflow and grader run inside a Harbor trial (``HarborBackend`` in
    template mode, the local sandbox): the integration binds to the trial's rollout context,
    the sample reaches the SDK grader installed as the task's verifier, reward 1.0."""
    framework, _ = TEMPLATES[template]
    for needed in (framework, "harbor"):
        if importlib.util.find_spec(needed) is None:
            pytest.skip(f"{needed} is not installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    config = _workspace(cli, ws, template)
    rollout = ws / "rollouts" / template
    (rollout / "harbor_main.py").write_text(HARBOR_MAIN.format(package=template.replace("-", "_")))
    task = Path(__file__).parents[2] / "templates/multiply-harbor-strands/rollouts"
    shutil.copytree(task / "multiply-harbor-strands" / "task", rollout / "task")
    config.write_text(config.read_text().replace('"main.py"', '"harbor_main.py"'))
    assert '"harbor_main.py"' in config.read_text()
    result = cli.run(
        "eval", "run", str(config), "--limit", "2", "--name", "h",
        "--base-url", solving_policy.url, "--model", "scripted", "--json",
        cwd=ws, env={"OSMOSIS_HARBOR_ENV": "local"}, timeout=300,
    )  # fmt: skip
    assert result.code == 0, result.stderr[-4000:]
    resource = result.json()["resource"]
    assert (resource["succeeded"], resource["failed"]) == (2, 0), resource["metrics"]
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
    safety = resource["metrics"]["training_safety"]
    assert (safety["rollouts"], safety["append_only"]) == (2, 2)
