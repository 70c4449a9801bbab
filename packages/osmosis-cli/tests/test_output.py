"""The output contract: JSON-safe values, warnings as JSON lines, plain text."""

from __future__ import annotations

import io
import json

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Mode, Output, json_safe


def _output(mode: Mode) -> tuple[Output, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Output(mode=mode, command="x y", stdout=out, stderr=err), out, err


def test_non_finite_numbers_become_null() -> None:
    assert json_safe({"a": float("nan"), "b": [float("inf"), 1.5]}) == {"a": None, "b": [None, 1.5]}
    output, out, _ = _output(Mode.JSON)
    output.emit_detail({"reward": float("nan")})
    assert json.loads(out.getvalue()) == {"schema_version": 1, "data": {"reward": None}}


def test_warning_and_error_go_to_stderr_as_json_lines() -> None:
    output, out, err = _output(Mode.JSON)
    output.warn("SOMETHING", "careful", check="import")
    output.error(CLIError(CLIErrorCode.NOT_FOUND, "gone", details={"name": "n"}))
    assert out.getvalue() == ""
    warning, error = (json.loads(line) for line in err.getvalue().splitlines())
    assert warning["warning"] == {
        "code": "SOMETHING",
        "message": "careful",
        "details": {"check": "import"},
    }
    assert error["command"] == "x y"
    assert error["error"] == {"code": "NOT_FOUND", "message": "gone", "details": {"name": "n"}}


def test_plain_mode_is_low_noise() -> None:
    output, out, err = _output(Mode.PLAIN)
    output.emit_list(
        [{"name": "a"}, {"name": "b"}], columns=[Column("name", "Name")], plain=lambda i: i["name"]
    )
    output.progress("working")
    output.error(CLIError(CLIErrorCode.VALIDATION, "bad"))
    assert out.getvalue() == "a\nb\n"
    assert err.getvalue() == "working\nError: bad\n"


def test_list_envelope_pagination() -> None:
    output, out, _ = _output(Mode.JSON)
    output.emit_list([{"id": 1}], columns=[], plain=str, total_count=7, next_offset=1)
    assert json.loads(out.getvalue()) == {
        "schema_version": 1,
        "items": [{"id": 1}],
        "total_count": 7,
        "has_more": True,
        "next_offset": 1,
    }
