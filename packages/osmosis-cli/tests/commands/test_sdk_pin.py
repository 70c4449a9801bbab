"""A rollout pinned to the 0.3 SDK (``osmosis-ai[server]>=0.3.0,<0.4``, as every 0.3.x scaffold):
``rollout validate`` and ``doctor`` give the exact edit, ``doctor --fix`` makes it, and
``eval run --isolated`` refuses rather than installing 0.3.x."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

RolloutFactory = Callable[..., Path]

LEGACY_PIN = "osmosis-ai[server]>=0.3.0,<0.4"
NEW_PIN = "osmosis-ai[server]>=0.4,<0.5"

MAIN = """
from osmosis_ai.rollout import AgentWorkflow, LocalBackend
from osmosis_ai.rollout.server import create_rollout_server


class Echo(AgentWorkflow):
    async def run(self, ctx):
        return list(ctx.prompt)


app = create_rollout_server(backend=LocalBackend(workflow=Echo))
"""


def _checks(envelope: dict) -> dict[str, dict]:
    return {c["name"]: c for c in envelope["resource"]["checks"]}


def test_validate_gives_the_edit_and_still_imports(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(git_repo, "old", MAIN, dependencies=[LEGACY_PIN])
    result = run_cli("--json", "rollout", "validate", "rollouts/old", cwd=git_repo)
    assert result.code == 0, result.stderr
    checks = _checks(result.envelope())
    pin = checks["sdk pin"]
    assert pin["status"] == "warning"
    assert f'rollouts/old/pyproject.toml: "{LEGACY_PIN}" -> "{NEW_PIN}"' in pin["message"]
    assert "osmosis doctor --fix" in pin["message"]
    assert pin["details"]["edits"][0]["new"] == NEW_PIN
    # The pin no longer hides the import check: the 0.3 code runs on this SDK.
    assert checks["import"]["status"] == "ok"


def test_a_current_pin_is_not_reported(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(git_repo, "new", MAIN, dependencies=[NEW_PIN])
    result = run_cli("--json", "rollout", "validate", "rollouts/new", cwd=git_repo)
    assert result.code == 0, result.stderr
    assert "sdk pin" not in _checks(result.envelope())


def test_doctor_reports_and_fix_rewrites_only_the_pin(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(
        git_repo, "old", MAIN, dependencies=[LEGACY_PIN, "openai>=1; python_version >= '3'"]
    )
    pyproject = git_repo / "rollouts" / "old" / "pyproject.toml"
    before = pyproject.read_text(encoding="utf-8")
    report = run_cli("--json", "doctor", cwd=git_repo)
    assert report.code == 0, report.stderr
    pin = _checks(report.envelope())["rollout old sdk pin"]
    assert pin["status"] == "warning"
    assert pin["fix"] == "osmosis doctor --fix"
    assert f'"{LEGACY_PIN}" -> "{NEW_PIN}"' in pin["message"]

    fixed = run_cli("--json", "doctor", "--fix", cwd=git_repo)
    assert fixed.code == 0, fixed.stderr
    assert pyproject.read_text(encoding="utf-8") == before.replace(LEGACY_PIN, NEW_PIN)
    assert "rollout old sdk pin" not in _checks(fixed.envelope())


def test_eval_run_isolated_refuses_a_legacy_pin_with_the_edit(
    run_cli: RunCli, git_repo: Path, rollout_factory: RolloutFactory
) -> None:
    rollout_factory(git_repo, "old", MAIN, dependencies=[LEGACY_PIN])
    result = run_cli(
        "--json", "eval", "run", "configs/eval/old.toml", "--model", "mock", "--isolated",
        cwd=git_repo,
    )  # fmt: skip
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert f'"{LEGACY_PIN}" -> "{NEW_PIN}"' in error["message"]
    assert error["details"]["edits"][0]["old"] == LEGACY_PIN
