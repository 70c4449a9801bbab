"""Harbor task and image digests in the reproducibility record, end to end.

A real ``osmosis eval run`` of a Harbor project (real trials in the Docker-free local sandbox,
Harbor's ``oracle`` agent: no policy calls) records its task's digests in every trajectory and in
the manifest; one byte changed in the task's test file changes the task digest, and
``osmosis eval compare`` of the two runs warns naming the task and the field.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from eval_support import Cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("harbor") is None, reason="harbor is not installed"
)

_ENV = {"OSMOSIS_HARBOR_ENV": "local", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

_MAIN = """
from pathlib import Path

from harbor.models.job.config import RetryConfig
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, environment_config_from_env
from osmosis_ai.rollout.server import create_rollout_server

backend = HarborBackend(
    orchestrator=TrialQueue(n_concurrent=2, retry_config=RetryConfig(max_retries=0)),
    # outside the rollout's folder: only the Harbor record sees the task change
    tasks_dir=Path(__file__).resolve().parent.parent / "tasks" / "hello",
    agent="oracle",
    environment_config=environment_config_from_env(),
)
app = create_rollout_server(backend=backend)
"""

_TEST_SH = (
    "#!/bin/bash\nif grep -q hello /app/hello.txt 2>/dev/null; then echo 1 > "
    "/logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)


def _workspace(root: Path) -> tuple[Path, Path]:
    """A Harbor rollout (``rollout/main.py``), its task (``tasks/hello``) and a dataset."""
    task = root / "tasks" / "hello"
    files = {
        "environment/Dockerfile": "FROM python:3.12-slim AS base\nFROM base\nWORKDIR /app\n",
        "task.toml": textwrap.dedent(
            """\
            schema_version = "1.3"

            [environment]
            workdir = "/app"

            [agent]
            timeout_sec = 120

            [verifier]
            timeout_sec = 120
            """
        ),
        "instruction.md": "Create /app/hello.txt containing hello\n",
        "solution/solve.sh": "#!/bin/bash\necho hello > /app/hello.txt\n",
        "tests/test.sh": _TEST_SH,
    }
    for name, text in files.items():
        path = task / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name.endswith(".sh"):
            path.chmod(0o755)
    (root / "rollout").mkdir()
    (root / "rollout" / "main.py").write_text(_MAIN)
    dataset = root / "rows.jsonl"
    row = {"user_prompt": "Create /app/hello.txt containing hello", "ground_truth": "hello"}
    dataset.write_text("".join(json.dumps(row) + "\n" for _ in range(2)))
    return task, dataset


def _run(cli: Cli, ws: Path, dataset: Path, name: str) -> Path:
    result = cli.run(
        "eval", "run", str(ws / "rollout"), "--dataset", str(dataset), "--model", "mock",
        "--name", name, "--output", str(ws / "runs"), "--json",
        cwd=ws, env=_ENV, timeout=600,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    envelope = result.json()
    assert envelope["status"] == "success", envelope
    return ws / "runs" / name


def _records(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    trajectories = sorted((run_dir / "trajectories").glob("*.json"))
    assert len(trajectories) == 2
    per_rollout = [
        json.loads(p.read_text())["extra"]["osmosis"]["reproducibility"] for p in trajectories
    ]
    return manifest["reproducibility"], per_rollout


def test_harbor_digests_are_recorded_and_a_changed_task_is_named_by_compare(
    cli: Cli, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    task, dataset = _workspace(ws)

    run_a = _run(cli, ws, dataset, "a")
    record_a, rollouts_a = _records(run_a)
    (task_a,) = record_a["harbor_tasks"]
    assert task_a["name"] == "hello"
    assert len(task_a["task_sha256"]) == 64
    assert len(task_a["dockerfile_sha256"]) == 64
    assert task_a["base_image"] == "python:3.12-slim"  # through the stage alias
    assert task_a["docker_image"] is None
    assert task_a["image_digest"] is None  # the local sandbox builds no image: none invented
    assert task_a["environment"] == "local"
    for rollout in rollouts_a:
        assert rollout["harbor_tasks"] == [task_a]

    # One byte of the verifier changes: the task digest changes, the image does not.
    (task / "tests" / "test.sh").write_text(_TEST_SH.replace("echo 1", "echo 2", 1))
    run_b = _run(cli, ws, dataset, "b")
    (task_b,) = _records(run_b)[0]["harbor_tasks"]
    assert task_b["task_sha256"] != task_a["task_sha256"]
    assert task_b["dockerfile_sha256"] == task_a["dockerfile_sha256"]

    compared = cli.run(
        "eval", "compare", str(run_a), str(run_b), "--json", cwd=ws, env=_ENV, timeout=120
    )
    assert compared.code == 0, compared.stderr
    warnings = [json.loads(line)["warning"] for line in compared.stderr.splitlines() if line]
    messages = [w["message"] for w in warnings if w["code"] == "RUNS_DIFFER"]
    assert any("harbor task 'hello' task_sha256" in m for m in messages), compared.stderr
    # only the task changed: not its image, not the rollout's code
    assert not any("dockerfile_sha256" in m or "rollout_source_digest" in m for m in messages)
    assert compared.json()["data"]["reproducibility_differences"] == [
        m.removeprefix("the runs were not made the same way: ") for m in messages
    ]
