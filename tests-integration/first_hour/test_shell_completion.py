"""Item 13: shell completion. ``--show-completion`` prints a script for bash and zsh, the script
really completes subcommands in bash (the completion protocol, ``_OSMOSIS_COMPLETE``), and
``--install-completion`` writes it where the shell loads it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from eval_support import OSMOSIS, Cli


def _complete_in_bash(cli: Cli, tmp_path: Path, words: list[str]) -> list[str]:
    """Source the script in a real bash and ask it to complete ``words`` (the last is partial)."""
    script = cli.run("--show-completion", "bash", cwd=tmp_path).stdout
    (tmp_path / "osmosis-completion.bash").write_text(script)
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        "source osmosis-completion.bash\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        "_osmosis_completion osmosis\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = cli.env({"PATH": f"{Path(OSMOSIS).parent}{os.pathsep}{os.environ['PATH']}"})
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete -o default -F _osmosis_completion osmosis"), ("zsh", "#compdef osmosis")],
)
def test_show_completion_prints_a_script(tmp_path: Path, cli: Cli, shell: str, marker: str) -> None:
    result = cli.run("--show-completion", shell, cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert marker in result.stdout
    assert "_OSMOSIS_COMPLETE=complete_" + shell in result.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_subcommands_and_options(tmp_path: Path, cli: Cli) -> None:
    assert _complete_in_bash(cli, tmp_path, ["osmosis", "ev"]) == ["eval"]
    assert _complete_in_bash(cli, tmp_path, ["osmosis", "eval", "ru"]) == ["run", "rubric"]
    assert "--max-failures" in _complete_in_bash(
        cli, tmp_path, ["osmosis", "eval", "run", "--max-f"]
    )


def test_zsh_protocol_answers_with_help(tmp_path: Path, cli: Cli) -> None:
    result = cli.run(
        cwd=tmp_path,
        env={"_OSMOSIS_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "osmosis temp"},
    )
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == (
        """_arguments '*: :(("template":"List and apply rollout templates."))'"""
    )


def test_install_completion_writes_the_bashrc(tmp_path: Path, cli: Cli) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = cli.run("--install-completion", "bash", cwd=tmp_path, env={"HOME": str(home)})
    assert result.code == 0, result.stderr
    script = home / ".bash_completions" / "osmosis.sh"
    assert f"completion installed in {script}" in result.stdout
    assert "_OSMOSIS_COMPLETE=complete_bash" in script.read_text()
    assert "source" in (home / ".bashrc").read_text()


def test_unknown_shell_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    result = cli.run("--json", "--show-completion", "tcsh", cwd=tmp_path)
    assert result.code == 1
    assert result.error()["message"] == (
        "unsupported shell 'tcsh'; use one of bash, zsh, fish, powershell, pwsh"
    )
