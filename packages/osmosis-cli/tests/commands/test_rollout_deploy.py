"""``osmosis rollout deploy``: the generated SkyPilot task, and the launch/teardown contract
against a stub ``sky`` executable that records how it was called.

SkyPilot's own parser validates the task in tests-integration/fleet/test_skypilot_task.py (the
``fleet`` nox session installs skypilot); here nothing needs SkyPilot or a cloud.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

RolloutFactory = Callable[..., Path]
KEY_VALUE = "inbound-key-value-7f3a9c"
HF_VALUE = "hf_secret_value_12345"
APP = "app = None\n"

# A stand-in for SkyPilot's CLI: records argv, cwd and which secret variables it could read
# (names only), answers `status --endpoint PORT CLUSTER` with a fake public address.
FAKE_SKY = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
secrets = [args[i + 1] for i, a in enumerate(args) if a == "--secret"]
with open(os.environ["FAKE_SKY_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "cwd": os.getcwd(),
                          "secrets_set": [s for s in secrets if os.environ.get(s)]}}) + "\\n")
if args[:2] == ["status", "--endpoint"]:
    index = args[3].rsplit("-", 1)[1]
    print(f"34.1.2.{{index}}:{{args[2]}}")
if os.environ.get("FAKE_SKY_FAIL") and args[0] == "launch" and args[2].endswith("-1"):
    print("ResourcesUnavailableError: no capacity in us-east-1", file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture
def fake_sky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sky = bin_dir / "sky"
    sky.write_text(FAKE_SKY)
    sky.chmod(sky.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "sky-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SKY_LOG", str(log))
    monkeypatch.setenv("OSMOSIS_ROLLOUT_API_KEY", KEY_VALUE)
    monkeypatch.setenv("HF_TOKEN", HF_VALUE)
    return log


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_dry_run_prints_the_task_without_secret_values(
    run_cli: RunCli,
    git_repo: Path,
    rollout_factory: RolloutFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rollout_factory(git_repo, "calc", APP, dependencies=["numpy>=2"])
    monkeypatch.setenv("OSMOSIS_ROLLOUT_API_KEY", KEY_VALUE)
    monkeypatch.setenv("HF_TOKEN", HF_VALUE)
    result = run_cli(
        "rollout", "deploy", "rollouts/calc", "--dry-run", "--secret", "HF_TOKEN", cwd=git_repo
    )
    assert result.code == 0, result.stderr
    task = result.stdout
    assert "OSMOSIS_ROLLOUT_API_KEY: null" in task
    assert "HF_TOKEN: null" in task
    assert KEY_VALUE not in task
    assert HF_VALUE not in task
    assert "-r pyproject.toml" in task  # the rollout's dependencies
    assert "/health" in task  # the readiness check
    assert "--host 0.0.0.0" in task
    assert not (git_repo / ".osmosis" / "deploy").exists()  # a dry run writes nothing


def test_launch_contract_then_teardown(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory, fake_sky: Path
) -> None:
    rollout_factory(git_repo, "calc", APP)
    result = run_cli(
        *("rollout", "deploy", "rollouts/calc", "--launch", "--nodes", "2", "--json"),
        *("--secret", "HF_TOKEN", "--port", "8100"),
        cwd=git_repo,
    )
    assert result.code == 0, result.stderr
    root = git_repo / ".osmosis" / "deploy" / "osmosis-calc"
    task = str(root / "task.yaml")
    calls = _calls(fake_sky)
    launches = sorted((c for c in calls if c["args"][0] == "launch"), key=str)  # type: ignore[index]
    secrets = ["--secret", "OSMOSIS_ROLLOUT_API_KEY", "--secret", "HF_TOKEN"]
    assert [c["args"] for c in launches] == [
        ["launch", "-c", f"osmosis-calc-{i}", "-y", "-d", *secrets, task] for i in range(2)
    ]
    # the secrets reach `sky` through the environment, by name
    assert all(c["secrets_set"] == ["OSMOSIS_ROLLOUT_API_KEY", "HF_TOKEN"] for c in launches)
    assert all(c["cwd"] == str(git_repo) for c in calls)
    servers = (root / "servers.txt").read_text()
    assert [line for line in servers.splitlines() if not line.startswith("#")] == [
        "http://34.1.2.0:8100",
        "http://34.1.2.1:8100",
    ]
    assert result.envelope()["resource"]["servers_file"] == str(root / "servers.txt")
    for path in root.iterdir():  # no secret value in any file written
        text = path.read_text()
        assert KEY_VALUE not in text
        assert HF_VALUE not in text

    down = run_cli("rollout", "deploy", "rollouts/calc", "--down", "--json", cwd=git_repo)
    assert down.code == 0, down.stderr
    assert _calls(fake_sky)[-1]["args"] == ["down", "-y", "osmosis-calc-0", "osmosis-calc-1"]
    assert not (root / "servers.txt").exists()


def test_a_failed_launch_names_the_cluster_and_the_teardown(
    run_cli: RunCli,
    git_repo: Path,
    rollout_factory: RolloutFactory,
    fake_sky: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rollout_factory(git_repo, "calc", APP)
    monkeypatch.setenv("FAKE_SKY_FAIL", "1")
    result = run_cli("rollout", "deploy", "rollouts/calc", "--launch", "--nodes", "2", cwd=git_repo)
    assert result.code == 1
    assert "osmosis-calc-1: ResourcesUnavailableError" in result.stderr
    assert "--down" in result.stderr


def test_launch_needs_the_key_in_the_shell_and_sky_installed(
    run_cli: RunCli,
    git_repo: Path,
    rollout_factory: RolloutFactory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    rollout_factory(git_repo, "calc", APP)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `sky` here
    monkeypatch.setenv("OSMOSIS_ROLLOUT_API_KEY", KEY_VALUE)
    result = run_cli("rollout", "deploy", "rollouts/calc", "--launch", cwd=git_repo)
    assert result.code == 1
    assert "pip install 'skypilot[aws]'" in result.stderr
    monkeypatch.delenv("OSMOSIS_ROLLOUT_API_KEY")
    result = run_cli("rollout", "deploy", "rollouts/calc", "--launch", cwd=git_repo)
    assert "set OSMOSIS_ROLLOUT_API_KEY in your shell" in result.stderr


def test_bad_options_are_refused(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    folder = rollout_factory(git_repo, "calc", APP)
    bad_secret = run_cli(
        "rollout", "deploy", "rollouts/calc", "--dry-run", "--secret", "A=sk-value", cwd=git_repo
    )
    assert bad_secret.code == 1
    assert "never written to a file" in bad_secret.stderr
    assert "sk-value" not in bad_secret.stderr
    (folder / "pyproject.toml").unlink()
    no_project = run_cli("rollout", "deploy", "rollouts/calc", "--dry-run", cwd=git_repo)
    assert no_project.code == 1
    assert "has no pyproject.toml" in no_project.stderr
