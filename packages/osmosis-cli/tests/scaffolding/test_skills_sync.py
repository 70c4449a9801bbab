"""``osmosis init`` writes the skills once; ``skills list/update`` and ``doctor`` keep them
current without losing local edits (docs/skills.md)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

from osmosis_cli.scaffolding import skills as skills_module
from osmosis_cli.scaffolding.skills import MANIFEST, skills_source
from osmosis_cli.scaffolding.workspace_init import init_workspace


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def newer_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the workspace templates standing in for a newer CLI's (OSMOSIS_TEMPLATES_DIR)."""
    root = tmp_path / "newer-templates"
    shutil.copytree(skills_source().parent, root / "_workspace")
    monkeypatch.setenv("OSMOSIS_TEMPLATES_DIR", str(root))
    return root / "_workspace" / "skills"


def _ship_change(skills: Path) -> None:
    """The newer CLI changes create-rollouts and debug-rollouts and adds a skill."""
    for name in ("create-rollouts", "debug-rollouts"):
        path = skills / name / "SKILL.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nNew in this version.\n", "utf-8")
    new = skills / "plan-something"
    new.mkdir()
    (new / "SKILL.md").write_text(
        "---\nname: plan-something\ndescription: Plan something.\n---\n# Plan\n", "utf-8"
    )


def test_init_writes_the_skills_once_links_claude_and_records_a_manifest(
    run_cli: RunCli, tmp_path: Path
) -> None:
    target = tmp_path / "ws"
    result = run_cli("--json", "init", str(target), cwd=tmp_path)
    assert result.code == 0, result.stderr
    resource = result.envelope()["resource"]
    assert resource["claude_skills"] == "symlink"
    link = target / ".claude" / "skills"
    assert link.is_symlink()
    assert str(link.readlink()) == "../.agents/skills"
    manifest = json.loads((target / ".agents/skills" / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["claude_skills"] == "symlink"
    assert manifest["cli_version"]
    shipped = sorted(p.name for p in skills_source().iterdir() if p.is_dir())
    assert sorted({key.split("/")[0] for key in manifest["files"]}) == shipped
    for key, digest in manifest["files"].items():
        assert _sha(target / ".agents/skills" / key) == digest
        assert (link / key).read_bytes() == (skills_source() / key).read_bytes()
    assert ".agents/skills/create-rollouts/SKILL.md" in resource["created"]
    assert (target / "CLAUDE.md").read_text(encoding="utf-8").startswith("@AGENTS.md")
    settings = json.loads((target / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert "Bash(osmosis:*)" in settings["permissions"]["allow"]
    assert "Bash(osmosis train submit:*)" in settings["permissions"]["ask"]


def test_where_symlinks_fail_claude_gets_a_copy_that_updates_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newer_cli: Path
) -> None:
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError("symbolic links are not allowed here")

    monkeypatch.setattr(Path, "symlink_to", refuse)
    workspace = tmp_path / "ws"
    assert init_workspace(workspace, git=False).claude_skills == "copy"
    copy = workspace / ".claude" / "skills"
    assert copy.is_dir()
    assert not copy.is_symlink()
    assert (copy / "create-rollouts" / "SKILL.md").read_bytes() == (
        newer_cli / "create-rollouts" / "SKILL.md"
    ).read_bytes()
    manifest = json.loads((workspace / ".agents/skills" / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["claude_skills"] == "copy"
    edited = copy / "debug-rollouts" / "SKILL.md"
    edited.write_text("my notes\n", encoding="utf-8")
    _ship_change(newer_cli)
    change = skills_module.update_skills(workspace)
    assert ".agents/skills/create-rollouts/SKILL.md" in change.updated
    assert ".claude/skills/create-rollouts/SKILL.md" in change.updated
    assert ".agents/skills/debug-rollouts/SKILL.md" in change.updated
    assert change.kept_edited == [".claude/skills/debug-rollouts/SKILL.md"]
    assert edited.read_text(encoding="utf-8") == "my notes\n"
    assert (copy / "plan-something" / "SKILL.md").is_file()


def test_update_replaces_unedited_files_keeps_edits_and_adds_new_skills(
    run_cli: RunCli, git_repo: Path, newer_cli: Path
) -> None:
    assert run_cli("init", cwd=git_repo).code == 0
    edited = git_repo / ".agents/skills/debug-rollouts/SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOur team's note.\n", "utf-8")
    mine = edited.read_text(encoding="utf-8")
    _ship_change(newer_cli)

    listed = run_cli("--json", "skills", "list", cwd=git_repo).envelope()["items"]
    status = {item["name"]: item["status"] for item in listed}
    assert status.pop("create-rollouts") == "outdated"
    assert status.pop("debug-rollouts") == "locally-edited"
    assert status.pop("plan-something") == "new-available"
    assert set(status.values()) == {"current"}  # every other shipped skill
    assert next(i for i in listed if i["name"] == "plan-something")["description"] == (
        "Plan something."
    )

    dry = run_cli("--json", "skills", "update", "--dry-run", cwd=git_repo).envelope()
    assert dry["resource"]["dry_run"] is True
    assert dry["resource"]["updated"] == [".agents/skills/create-rollouts/SKILL.md"]
    assert not (git_repo / ".agents/skills/plan-something").exists()

    update = run_cli("--json", "skills", "update", cwd=git_repo)
    assert update.code == 0, update.stderr
    resource = update.envelope()["resource"]
    assert resource["updated"] == [".agents/skills/create-rollouts/SKILL.md"]
    assert resource["added"] == [".agents/skills/plan-something/SKILL.md"]
    assert resource["kept_edited"] == [".agents/skills/debug-rollouts/SKILL.md"]
    assert edited.read_text(encoding="utf-8") == mine
    assert "New in this version." in (
        git_repo / ".agents/skills/create-rollouts/SKILL.md"
    ).read_text(encoding="utf-8")
    listed = run_cli("--json", "skills", "list", cwd=git_repo).envelope()["items"]
    assert {i["name"]: i["status"] for i in listed}["debug-rollouts"] == "locally-edited"

    forced = run_cli("--json", "skills", "update", "--force", cwd=git_repo).envelope()
    assert forced["resource"]["replaced_edited"] == [".agents/skills/debug-rollouts/SKILL.md"]
    assert (edited.parent / "SKILL.md.orig").read_text(encoding="utf-8") == mine
    assert edited.read_bytes() == (newer_cli / "debug-rollouts" / "SKILL.md").read_bytes()
    listed = run_cli("--json", "skills", "list", cwd=git_repo).envelope()["items"]
    assert {i["status"] for i in listed} == {"current"}


def test_a_deleted_skill_is_missing_and_update_restores_it(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("init", cwd=git_repo).code == 0
    shutil.rmtree(git_repo / ".agents/skills/evaluate-rollouts")
    listed = run_cli("--json", "skills", "list", cwd=git_repo).envelope()["items"]
    assert {i["name"]: i["status"] for i in listed}["evaluate-rollouts"] == "missing"
    assert run_cli("skills", "update", cwd=git_repo).code == 0
    assert (git_repo / ".claude/skills/evaluate-rollouts/SKILL.md").is_file()


def test_a_workspace_from_an_older_cli_is_updated_by_the_shipped_history(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No manifest, .claude/skills a copy (what osmosis-cli 0.1.0 wrote): files equal to a
    version an osmosis CLI shipped are replaced; any other content is a local edit."""
    from osmosis_cli.scaffolding import skills_history

    old = b"---\nname: create-rollouts\ndescription: The old text.\n---\nOld body.\n"
    monkeypatch.setitem(
        skills_history.SHIPPED, "create-rollouts/SKILL.md", (hashlib.sha256(old).hexdigest(),)
    )
    for root in (".agents/skills", ".claude/skills"):
        for name in ("create-rollouts", "debug-rollouts"):
            (git_repo / root / name).mkdir(parents=True)
        (git_repo / root / "create-rollouts" / "SKILL.md").write_bytes(old)
        (git_repo / root / "debug-rollouts" / "SKILL.md").write_text("edited\n", "utf-8")
    states = {s.name: s.status for s in skills_module.skill_states(git_repo)}
    assert states["create-rollouts"] == "outdated"
    assert states["debug-rollouts"] == "locally-edited"
    assert states["evaluate-rollouts"] == "new-available"
    change = skills_module.update_skills(git_repo)
    assert change.claude_skills == "copy"
    assert sorted(change.updated) == [
        ".agents/skills/create-rollouts/SKILL.md",
        ".claude/skills/create-rollouts/SKILL.md",
    ]
    assert sorted(change.kept_edited) == [
        ".agents/skills/debug-rollouts/SKILL.md",
        ".claude/skills/debug-rollouts/SKILL.md",
    ]
    manifest = json.loads((git_repo / ".agents/skills" / MANIFEST).read_text(encoding="utf-8"))
    assert "debug-rollouts/SKILL.md" not in manifest["files"]  # no baseline: stays edited
    assert manifest["files"]["create-rollouts/SKILL.md"] == _sha(
        skills_source() / "create-rollouts" / "SKILL.md"
    )


def test_init_never_overwrites_a_skill_file(run_cli: RunCli, git_repo: Path) -> None:
    mine = git_repo / ".agents/skills/create-rollouts/SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine\n", encoding="utf-8")
    assert run_cli("init", cwd=git_repo).code == 0
    assert mine.read_text(encoding="utf-8") == "mine\n"
    assert (git_repo / ".claude/skills").is_symlink()


def test_doctor_reports_stale_skills_and_fix_updates_them_keeping_edits(
    run_cli: RunCli, git_repo: Path, newer_cli: Path
) -> None:
    assert run_cli("init", cwd=git_repo).code == 0
    checks = run_cli("--json", "doctor", cwd=git_repo).envelope()["resource"]["checks"]
    skills_check = next(c for c in checks if c["name"] == "agent skills")
    assert skills_check["status"] == "ok"
    edited = git_repo / ".agents/skills/debug-rollouts/SKILL.md"
    edited.write_text("edited\n", encoding="utf-8")
    _ship_change(newer_cli)
    checks = run_cli("--json", "doctor", cwd=git_repo).envelope()["resource"]["checks"]
    skills_check = next(c for c in checks if c["name"] == "agent skills")
    assert skills_check["status"] == "warning"
    assert skills_check["message"] == "outdated, missing or new: create-rollouts, plan-something"
    assert "osmosis doctor --fix" in skills_check["fix"]
    fixed = run_cli("--json", "doctor", "--fix", cwd=git_repo)
    assert fixed.code == 0, fixed.stderr
    checks = fixed.envelope()["resource"]["checks"]
    skills_check = next(c for c in checks if c["name"] == "agent skills")
    assert skills_check["status"] == "ok"
    assert "locally edited: debug-rollouts" in skills_check["message"]
    assert edited.read_text(encoding="utf-8") == "edited\n"


def test_update_says_what_to_do_when_claude_is_a_file(run_cli: RunCli, git_repo: Path) -> None:
    (git_repo / ".claude").write_text("not a folder\n", encoding="utf-8")
    result = run_cli("--json", "skills", "update", cwd=git_repo)
    assert result.code == 1
    error = result.error()["error"]
    assert error["code"] == "CONFLICT"
    assert ".claude exists but is not a folder" in error["message"]
    assert (git_repo / ".claude").read_text(encoding="utf-8") == "not a folder\n"
