"""``osmosis template list | apply``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

TEMPLATES = [
    "multiply-harbor-strands",
    "multiply-local-adk",
    "multiply-local-langgraph",
    "multiply-local-openai",
    "multiply-local-plain",
    "multiply-local-pydantic-ai",
    "multiply-local-strands",
    "rubric-judge-local",
]


def test_list_json_is_one_envelope(run_cli: RunCli) -> None:
    result = run_cli("--json", "template", "list")
    assert result.code == 0
    envelope = result.envelope()
    assert envelope["schema_version"] == 1
    assert [item["name"] for item in envelope["items"]] == TEMPLATES
    assert envelope["total_count"] == len(TEMPLATES)
    assert envelope["has_more"] is False
    assert envelope["next_offset"] is None
    assert all(item["description"] for item in envelope["items"])


def test_list_plain_is_one_name_per_line(run_cli: RunCli) -> None:
    assert run_cli("--plain", "template", "list").stdout.splitlines() == TEMPLATES


def test_apply_in_an_empty_git_repo(run_cli: RunCli, git_repo: Path) -> None:
    result = run_cli("--json", "template", "apply", "multiply-local-strands", cwd=git_repo)
    assert result.code == 0, result.stderr
    envelope = result.envelope()
    assert envelope["operation"] == "template.apply"
    resource = envelope["resource"]
    assert resource["destinations"] == [
        "configs/eval/multiply-local-strands.toml",
        "configs/training/multiply-local-strands.toml",
        "data/multiply.jsonl",
        "rollouts/multiply-local-strands",
    ]
    rollout = git_repo / "rollouts" / "multiply-local-strands"
    for rel in ("main.py", "pyproject.toml", "README.md", "multiply_local_strands/workflow.py"):
        assert (rollout / rel).is_file(), rel
    main = (rollout / "main.py").read_text(encoding="utf-8")
    assert "app = create_rollout_server(backend=backend)" in main
    assert 'if __name__ == "__main__":\n    serve(app)' in main
    rows = [json.loads(line) for line in (git_repo / "data" / "multiply.jsonl").open()]
    assert len(rows) >= 100
    first = rows[0]
    assert set(first) == {"system_prompt", "user_prompt", "ground_truth"}
    a, b = (
        int(w) for w in first["user_prompt"].replace("?", "").split() if w.lstrip("-").isdigit()
    )
    assert int(first["ground_truth"]) == a * b


def test_templates_share_the_dataset_without_conflict(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("template", "apply", "multiply-local-strands", cwd=git_repo).code == 0
    result = run_cli("--json", "template", "apply", "multiply-local-openai", cwd=git_repo)
    assert result.code == 0, result.stderr
    assert "data/multiply.jsonl" in result.envelope()["resource"]["unchanged"]


def test_conflicts_list_every_path_and_force_replaces(run_cli: RunCli, git_repo: Path) -> None:
    assert run_cli("template", "apply", "multiply-local-openai", cwd=git_repo).code == 0
    main = git_repo / "rollouts" / "multiply-local-openai" / "main.py"
    config = git_repo / "configs" / "eval" / "multiply-local-openai.toml"
    main.write_text("# edited\n", encoding="utf-8")
    config.write_text("# edited\n", encoding="utf-8")
    extra = main.parent / "notes.txt"
    extra.write_text("mine", encoding="utf-8")

    refused = run_cli("--json", "template", "apply", "multiply-local-openai", cwd=git_repo)
    assert refused.code == 1
    error = refused.error()["error"]
    assert error["code"] == "CONFLICT"
    assert error["details"]["conflicts"] == [
        "configs/eval/multiply-local-openai.toml",
        "rollouts/multiply-local-openai/main.py",
    ]
    assert main.read_text(encoding="utf-8") == "# edited\n"

    forced = run_cli(
        "--json", "template", "apply", "multiply-local-openai", "--force", cwd=git_repo
    )
    assert forced.code == 0
    assert forced.envelope()["resource"]["replaced"] == ["rollouts/multiply-local-openai"]
    assert "create_rollout_server" in main.read_text(encoding="utf-8")
    assert not extra.exists()  # the rollout folder is replaced as a whole


def test_unknown_and_invalid_names(run_cli: RunCli, git_repo: Path) -> None:
    unknown = run_cli("--json", "template", "apply", "multiply-local-strand", cwd=git_repo)
    assert unknown.code == 1
    error = unknown.error()
    assert error["command"] == "template apply"
    assert error["error"]["code"] == "NOT_FOUND"
    assert "Did you mean 'multiply-local-strands'?" in error["error"]["message"]
    assert error["error"]["details"]["available"] == TEMPLATES
    for bad in ("../etc", "_shared", ".hidden", "Multiply"):
        result = run_cli("--json", "template", "apply", bad, cwd=git_repo)
        assert result.error()["error"]["code"] == "VALIDATION", bad
    assert not (git_repo / "rollouts").exists()


def test_apply_outside_a_workspace_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    result = run_cli("--json", "template", "apply", "multiply-local-strands", cwd=lonely)
    assert result.code == 1
    assert result.error()["error"]["code"] == "WORKSPACE_REQUIRED"
    assert list(lonely.iterdir()) == []


def test_symlinked_folder_pointing_outside_is_refused(
    run_cli: RunCli, git_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (git_repo / "configs").symlink_to(outside, target_is_directory=True)
    result = run_cli("--json", "template", "apply", "multiply-local-strands", cwd=git_repo)
    assert result.code == 1
    assert result.error()["error"]["code"] == "VALIDATION"
    assert list(outside.iterdir()) == []
