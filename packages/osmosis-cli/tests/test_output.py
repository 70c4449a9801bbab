"""The output contract: JSON-safe values, warnings as JSON lines, plain text."""

from __future__ import annotations

import io
import json
import time

import pytest

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Mode, Output, json_safe, local_time


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


def test_rich_tables_show_timestamps_as_local_time_and_json_keeps_them_as_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "JST-9")  # POSIX form: UTC+9, no tz database needed
    time.tzset()
    try:
        item = {"name": "a", "created_at": "2026-12-03T15:41:21.426718+00:00", "state": "ok"}
        columns = [
            Column("name", "Name"),
            Column("created_at", "Created"),
            Column("state", "State", lambda i: f"{i['state']}!"),
        ]
        output, out, _ = _output(Mode.RICH)
        output.emit_list([item], columns=columns, plain=str)
        assert "2026-12-04 00:41:21" in out.getvalue()  # 15:41 UTC is 00:41 the next day there
        assert "ok!" in out.getvalue()
        assert "15:41:21.426718" not in out.getvalue()
        output, out, _ = _output(Mode.JSON)
        output.emit_list([item], columns=columns, plain=str)
        assert json.loads(out.getvalue())["items"] == [item]
        output, out, _ = _output(Mode.RICH)
        output.emit_detail(item)  # a detail's "*_at" fields too
        assert "2026-12-04 00:41:21" in out.getvalue()
        assert "15:41:21.426718" not in out.getvalue()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_local_time_leaves_what_is_not_a_timestamp_alone() -> None:
    assert local_time(None) is None
    assert local_time("yesterday") == "yesterday"
    assert local_time(3) == 3


def test_rich_mode_shows_brackets_in_cells_and_messages_literally() -> None:
    """An install hint's ``[strands]`` and a ``[pricing."m"]`` hint are text, not Rich markup."""
    hint = "not installed (optional: pip install 'osmosis-ai[openai-agents]')"
    pricing = "no price known for model 'm'; add [pricing.'m'] to the eval config"
    output, out, err = _output(Mode.RICH)
    output.emit_list(
        [{"name": "osmosis-openai-agents", "message": hint}],
        columns=[Column("name", "Check"), Column("message", "Result")],
        plain=str,
    )
    output.emit_detail({"cost unknown because": pricing, "[bold]key[/bold]": "v"})
    output.emit_operation("x", message="wrote [b]not bold[/b]", lines=[pricing])
    output.warn("W", pricing)
    output.progress(hint)
    shown = out.getvalue() + err.getvalue()
    assert hint in shown
    assert shown.count(pricing) == 3
    assert "[bold]key[/bold]" in shown
    assert "wrote [b]not bold[/b]" in shown


def test_the_eval_run_summary_table_shows_a_pricing_hint_literally() -> None:
    from pathlib import Path

    from osmosis_ai.eval import EvalRun
    from osmosis_cli.commands.eval_run import _print_summary_table

    reason = "no price known for model 'm'; add [pricing.'m'] to the eval config"
    metrics = {"reward_stats": {}, "cost": {"unknown_reason": reason, "tokens": {}}}
    result = EvalRun(
        status="success",
        run_name="r[1]",
        run_dir=Path("r"),
        local_run_id="id",
        dataset=Path("d.jsonl"),
        model="m",
        rollout="x",
        total_work_items=1,
        dispatched=1,
        succeeded=1,
        failed=0,
        skipped=0,
        resumed=0,
        pending=0,
        duration_ms=1.0,
        metrics=metrics,
    )
    output, out, _ = _output(Mode.RICH)
    _print_summary_table(result, output)
    assert reason in out.getvalue()
    assert "eval r[1]" in out.getvalue()


def test_floats_are_rounded_for_people_and_exact_in_json() -> None:
    from osmosis_cli.output import human_number

    assert human_number(5.551115123125783e-17) == "0"
    assert human_number(0.8333333333333334) == "0.8333"
    assert human_number(367.928) == "367.9"
    assert human_number(1.0) == "1"
    assert human_number(-0.00001) == "0"
