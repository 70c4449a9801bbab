"""Secret values: --secrets-file, then the environment; never prompted without a TTY."""

from __future__ import annotations

from pathlib import Path

import pytest

from osmosis_cli.dotenv import parse_dotenv
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Mode, Output
from osmosis_cli.platform.secrets import resolve_secrets


def test_parse_dotenv_forms() -> None:
    text = "# comment\nA=1\nexport B = 'two'\nC=\"three # not a comment\"\nD=four # comment\n\n"
    assert parse_dotenv(text, origin="f") == {
        "A": "1",
        "B": "two",
        "C": "three # not a comment",
        "D": "four",
    }


def test_parse_errors_do_not_show_values() -> None:
    with pytest.raises(CLIError) as info:
        parse_dotenv("GOOD=1\nthis is sk-secret\n", origin="secrets.env")
    assert "secrets.env:2" in info.value.message
    assert "sk-secret" not in info.value.message


def test_file_then_env_then_interactive_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.env"
    path.write_text("A=from-file\n", encoding="utf-8")
    monkeypatch.setenv("A", "from-env")
    monkeypatch.setenv("B", "from-env")
    monkeypatch.delenv("C", raising=False)
    monkeypatch.delenv("D", raising=False)
    output = Output(mode=Mode.JSON)
    resolved = resolve_secrets(["A", "B"], secrets_file=str(path), output=output)
    assert resolved.values == {"A": "from-file", "B": "from-env"}
    assert resolved.sources == {"A": "file", "B": "env"}
    assert "from-file" not in repr(resolved)
    with pytest.raises(CLIError) as info:
        resolve_secrets(["A", "C", "D"], secrets_file=None, output=output)
    assert info.value.code is CLIErrorCode.INTERACTIVE_REQUIRED
    assert info.value.details == {"missing": ["C", "D"], "flags": ["--secrets-file"]}


def test_unreadable_secrets_file(tmp_path: Path) -> None:
    with pytest.raises(CLIError) as info:
        resolve_secrets(["A"], secrets_file=str(tmp_path / "nope"), output=Output(mode=Mode.PLAIN))
    assert info.value.code is CLIErrorCode.VALIDATION
