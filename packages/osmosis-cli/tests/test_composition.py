"""``osmosis_ai.cli.main.create_app`` / ``run_cli``: 0.3.8's API for building on the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer


def _run(capsys: pytest.CaptureFixture[str], app: typer.Typer, *argv: str) -> tuple[int, str, str]:
    from osmosis_ai.cli.main import run_cli

    capsys.readouterr()
    code = run_cli(app, list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_composed_cli_runs_its_own_commands_and_every_osmosis_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from osmosis_ai.cli.main import create_app

    app = create_app(name="acme")

    @app.command()
    def hello(name: str = "world") -> None:
        """Say hello."""
        print(f"hello {name}")

    assert _run(capsys, app, "hello", "--name", "osmosis") == (0, "hello osmosis\n", "")
    code, out, _ = _run(capsys, app, "template", "list", "--json")
    assert code == 0
    names = {item["name"] for item in json.loads(out)["items"]}
    assert "multiply-local-plain" in names
    code, out, _ = _run(capsys, app, "--help")
    assert code == 0
    assert "hello" in out
    assert "template" in out
    assert "Usage: acme" in out


def test_the_global_flags_and_exit_codes_are_the_clis(capsys: pytest.CaptureFixture[str]) -> None:
    from osmosis_ai.cli.main import create_app

    app = create_app()
    code, _, err = _run(capsys, app, "template", "apply", "--json")  # missing NAME
    assert code == 2
    assert json.loads(err.strip().splitlines()[-1])["error"]["code"] == "VALIDATION"
    code, _, err = _run(capsys, app, "nope")
    assert code == 2
    assert "No such command 'nope'" in err


def test_a_duplicate_command_name_is_refused_before_any_handler_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from osmosis_ai.cli.main import create_app

    app = create_app()
    ran: list[str] = []

    @app.command("template")
    def clash() -> None:
        ran.append("clash")

    code, _, err = _run(capsys, app, "--json", "template")
    assert code == 1
    envelope = json.loads(err.strip().splitlines()[-1])
    assert envelope["error"]["code"] == "INTERNAL"
    assert envelope["error"]["message"] == "Duplicate CLI command: template"
    assert ran == []

    nested = create_app()
    group = typer.Typer()
    group.command("x")(lambda: None)
    group.command("x")(lambda: None)
    nested.add_typer(group, name="tools")
    code, _, err = _run(capsys, nested, "--json", "tools", "x")
    assert code == 1
    assert "Duplicate CLI command: tools x" in err


def test_version_and_upgrade_are_the_customisation_points(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from osmosis_ai.cli.main import create_app

    def version() -> None:
        print("acme 9.9")

    def upgrade() -> None:
        print("upgrading acme")

    app = create_app(name="acme", version_callback=version, upgrade_command=upgrade)
    assert _run(capsys, app, "--version") == (0, "acme 9.9\n", "")
    assert _run(capsys, app, "upgrade") == (0, "upgrading acme\n", "")
    # Each call builds an independent root: the default one has neither.
    plain = create_app()
    code, out, _ = _run(capsys, plain, "--version")
    assert code == 0
    assert "acme" not in out


def test_a_script_built_on_the_cli_runs_as_a_program(tmp_path: pytest.TempPathFactory) -> None:
    script = tmp_path / "acme.py"  # type: ignore[operator]
    script.write_text(
        "from osmosis_ai.cli.main import create_app, run_cli\n"
        "app = create_app(name='acme')\n"
        "@app.command()\n"
        "def ping() -> None:\n"
        "    print('pong')\n"
        "raise SystemExit(run_cli(app))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script), "ping"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "pong\n"), done.stderr
