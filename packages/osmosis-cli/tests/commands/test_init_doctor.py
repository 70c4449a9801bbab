"""``osmosis init`` and ``osmosis doctor``."""

from __future__ import annotations

from pathlib import Path

from cli_harness import RunCli  # pyright: ignore[reportMissingImports]


def test_init_creates_a_workspace_and_git_repo(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "new-ws"
    result = run_cli("--json", "init", str(target), cwd=tmp_path)
    assert result.code == 0, result.stderr
    resource = result.envelope()["resource"]
    assert resource["git_initialized"] is True
    assert (target / ".git").exists()
    for folder in ("rollouts", "configs/eval", "configs/training", "data"):
        assert (target / folder / ".gitkeep").is_file()
    for rel in ("README.md", "AGENTS.md", "CLAUDE.md", ".gitignore"):
        assert (target / rel).is_file(), rel
    for skills in (".agents/skills", ".claude/skills"):
        for skill in ("create-rollouts", "evaluate-rollouts", "debug-rollouts"):
            text = (target / skills / skill / "SKILL.md").read_text(encoding="utf-8")
            assert text.startswith(f"---\nname: {skill}\ndescription: ")
    assert "osmosis rollout validate" in (target / "AGENTS.md").read_text(encoding="utf-8")


def test_init_never_overwrites(run_cli: RunCli, git_repo: Path) -> None:
    (git_repo / "README.md").write_text("mine\n", encoding="utf-8")
    result = run_cli("--json", "init", cwd=git_repo)
    resource = result.envelope()["resource"]
    assert resource["git_initialized"] is False
    assert "README.md" in resource["kept"]
    assert (git_repo / "README.md").read_text(encoding="utf-8") == "mine\n"
    again = run_cli("--json", "init", cwd=git_repo).envelope()["resource"]
    assert again["created"] == []


def test_doctor_on_a_healthy_workspace(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("init", cwd=git_repo).code == 0
    assert run_cli("rollout", "init", "calc", cwd=git_repo).code == 0
    result = run_cli("--json", "doctor", cwd=git_repo)
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert envelope["operation"] == "doctor"
    checks = {c["name"]: c for c in envelope["resource"]["checks"]}
    assert checks["layout"]["status"] == "ok"
    assert checks["rollout calc"]["status"] == "ok"
    assert checks["configs/eval/calc.toml"]["status"] == "ok"
    assert checks["python"]["status"] == "ok"
    assert checks["osmosis-core"]["message"]
    for integration in (
        "osmosis-strands",
        "osmosis-openai-agents",
        "osmosis-harbor",
        "osmosis-langgraph",
        "osmosis-adk",
    ):
        assert checks[integration]["status"] in {"ok", "info", "warning"}


def test_doctor_reports_missing_folders_and_bad_configs(run_cli: RunCli, git_repo: Path) -> None:
    (git_repo / "configs" / "eval").mkdir(parents=True)
    (git_repo / "configs" / "eval" / "x.toml").write_text(
        '[experiment]\nrollout = "ghost"\n', encoding="utf-8"
    )
    result = run_cli("--json", "doctor", cwd=git_repo)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "VALIDATION"
    assert error["details"]["missing"] == ["rollouts", "configs/training", "data"]
    failing = {c["name"] for c in error["details"]["checks"] if c["status"] == "error"}
    assert failing == {"layout", "configs/eval/x.toml"}
    bad = next(c for c in error["details"]["checks"] if c["name"] == "configs/eval/x.toml")
    assert "experiment.entrypoint" in bad["message"]


def test_doctor_fix_creates_what_is_missing(run_cli: RunCli, git_repo: Path) -> None:
    result = run_cli("--json", "doctor", "--fix", cwd=git_repo)
    assert result.code == 0, result.stderr
    assert (git_repo / "data").is_dir()
    assert (git_repo / "AGENTS.md").is_file()


def test_doctor_outside_a_workspace(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("--json", "doctor", cwd=tmp_path)
    assert result.code == 1
    checks = result.error()["error"]["details"]["checks"]
    assert checks[0] == {
        "name": "workspace",
        "status": "error",
        "message": f"{tmp_path.resolve()} is not inside a git repository or osmosis workspace",
        "fix": "osmosis init",
    }


def test_a_workspace_inside_a_larger_repository(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("init", "agents", cwd=git_repo).code == 0
    nested = git_repo / "agents"
    result = run_cli("--json", "rollout", "init", "calc", cwd=nested / "data")
    assert result.code == 0, result.stderr
    assert result.envelope()["resource"]["workspace_directory"] == str(nested.resolve())
    assert (nested / "rollouts" / "calc" / "main.py").is_file()
    assert not (git_repo / "rollouts").exists()
