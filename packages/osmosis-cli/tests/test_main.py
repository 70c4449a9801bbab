"""Global behaviour: flags anywhere, envelopes, exit codes, suggestions, fast help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import RunCli  # pyright: ignore[reportMissingImports]

from osmosis_cli import __version__
from osmosis_cli.cli_app import build_root
from osmosis_cli.fast_help import render_root_help
from osmosis_cli.main import split_global_flags
from osmosis_cli.registry import COMMANDS


def test_global_flags_are_taken_from_anywhere_before_double_dash() -> None:
    flags, values, rest = split_global_flags(
        [
            "template",
            "--json",
            "list",
            "--platform",
            "https://p",
            "-V",
            "--env-file=x.env",
            "--",
            "--plain",
        ]
    )
    assert flags == {"--json", "--version"}
    assert values == {"--platform": "https://p", "--env-file": "x.env"}
    assert rest == ["template", "list", "--", "--plain"]


def test_valued_global_flag_without_value_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("auth", "whoami", "--platform")
    assert result.code == 2
    assert "--platform needs a value" in result.stderr


def test_platform_flag_overrides_the_environment(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", "https://from-env.example")
    result = run_cli("--json", "auth", "whoami", "--platform", "https://from-flag.example")
    assert result.error()["error"]["details"]["platform_url"] == "https://from-flag.example"


def test_env_file_is_loaded_without_overriding_the_process(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".env").write_text(
        "OSMOSIS_PLATFORM_URL=https://from-dotenv.example\nOSMOSIS_TEST_KEPT=file\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("OSMOSIS_TEST_KEPT", "process")
    monkeypatch.setenv("OSMOSIS_PLATFORM_URL", "")  # empty counts as unset; restored after
    result = run_cli("--json", "auth", "whoami", cwd=tmp_path)
    assert result.error()["error"]["details"]["platform_url"] == "https://from-dotenv.example"
    assert os.environ["OSMOSIS_TEST_KEPT"] == "process"
    missing = run_cli("--json", "auth", "whoami", "--env-file", str(tmp_path / "nope.env"))
    assert missing.code == 1
    assert missing.error()["error"]["code"] == "VALIDATION"


def test_version_plain_and_json(run_cli: RunCli) -> None:
    """The umbrella's version first (when installed), then every installed member's."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    found = {
        name: v
        for name in ("osmosis-ai", "osmosis-core", "osmosis-cli", "osmosis-strands")
        if (v := installed(name)) is not None
    }
    plain = run_cli("--version")
    assert plain.code == 0
    head = "osmosis-ai" if "osmosis-ai" in found else "osmosis-cli"  # the CLI alone: it leads
    assert plain.stdout.startswith(f"{head} {found[head]} (")
    assert f"osmosis-cli {__version__}" in plain.stdout
    assert f"osmosis-core {found['osmosis-core']}" in plain.stdout
    envelope = run_cli("template", "-V", "--json").envelope()
    data = envelope["data"]
    assert (data["name"], data["version"]) == ("osmosis-cli", __version__)
    assert data["sdk_version"] == found.get("osmosis-ai", found["osmosis-core"])
    assert {k: data["distributions"][k] for k in found} == found


def test_root_help_lists_every_registered_command(run_cli: RunCli) -> None:
    result = run_cli("--help")
    assert result.code == 0
    assert result.stdout == render_root_help()
    root = build_root()
    names = root.list_commands(None)  # type: ignore[arg-type]
    assert names == [spec.name for spec in COMMANDS]
    for name in names:
        assert f"  {name}" in result.stdout
        assert root.get_command(None, name) is not None  # type: ignore[arg-type]  # every module loads
    assert run_cli().stdout == result.stdout  # bare `osmosis` prints the same help


def test_subcommand_help_is_plain_click_help(run_cli: RunCli) -> None:
    result = run_cli("template", "--help")
    assert result.code == 0
    assert result.stdout.startswith("Usage: osmosis template [OPTIONS] COMMAND [ARGS]...")
    assert "apply" in result.stdout
    assert "\x1b[" not in result.stdout  # no ANSI styling


def test_flag_position_does_not_matter(run_cli: RunCli) -> None:
    first = run_cli("--json", "template", "list").envelope()
    last = run_cli("template", "list", "--json").envelope()
    assert first == last
    assert first["schema_version"] == 1


def test_typo_suggests_the_command_and_exits_2(run_cli: RunCli) -> None:
    human = run_cli("tempalte", "list")
    assert human.code == 2
    assert "Did you mean 'template'?" in human.stderr
    machine = run_cli("--json", "template", "aply", "x")
    assert machine.code == 2
    error = machine.error()
    assert error["command"] == "template"
    assert error["error"]["code"] == "VALIDATION"
    assert "Did you mean 'apply'?" in error["error"]["message"]
    assert machine.stdout == ""


def test_json_and_plain_together_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("--json", "--plain", "template", "list")
    assert result.code == 2
    assert "cannot be used together" in result.stderr


def test_missing_argument_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("--json", "template", "apply")
    assert result.code == 2
    assert result.error()["error"]["code"] == "VALIDATION"


def test_unexpected_exception_is_internal(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    import osmosis_cli.scaffolding.catalog as catalog

    def explode() -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(catalog, "list_templates", explode)
    result = run_cli("--json", "template", "list")
    assert result.code == 1
    error = result.error()
    assert error["command"] == "template list"
    assert error["cli_version"] == __version__
    assert error["error"]["code"] == "INTERNAL"
    assert error["error"]["details"] == {"exception_type": "RuntimeError"}


def test_ctrl_c_exits_130(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    import osmosis_cli.scaffolding.catalog as catalog

    def interrupt() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(catalog, "list_templates", interrupt)
    assert run_cli("template", "list").code == 130


def test_help_does_not_import_typer_rich_or_pydantic() -> None:
    code = (
        "import sys; from osmosis_cli.main import run; run(['--help']); "
        "print(sorted(m for m in ('typer', 'rich', 'pydantic', 'click', 'osmosis_ai') "
        "if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "[]"


def test_json_commands_do_not_import_rich() -> None:
    code = (
        "import sys; from osmosis_cli.main import run; run(['--json', 'template', 'list']); "
        "print(json.dumps('rich' in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stderr.strip().splitlines()[-1]) is False
    shipped = [
        p for p in (Path(__file__).parents[3] / "templates").iterdir()
        if p.is_dir() and not p.name.startswith(("_", "."))
    ]  # fmt: skip
    assert json.loads(done.stdout)["total_count"] == len(shipped)
