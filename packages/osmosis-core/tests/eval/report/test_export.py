"""``write_export`` / ``read_export`` on a run made by the engine (the tiny rollout: a tool call,
its result, the answer), in every format, and the filters."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from osmosis_ai.eval import ExportError, ExportFilter, export_records, read_export, write_export
from osmosis_ai.eval._impl.plan.plan import EvalOptions, build_plan
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing.pytest_plugin import built_once

from ..tiny_rollout import write_workspace

#: Row 1 is answered wrong (reward 0), row 2's policy call fails (status failed).
RESPOND_PY = r"""
import json

from osmosis_ai.testing import ErrorReply
from osmosis_ai.testing.replies import Reply, ToolCall


def respond(body):
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    if "4 times 5" in prompt:
        return ErrorReply(400, "scripted failure")
    if messages[-1]["role"] != "tool":
        a, b = [int(w) for w in prompt.rstrip("?").split() if w.isdigit()]
        return Reply(tool_calls=[ToolCall("multiply", {"a": a, "b": b})])
    product = int(messages[-1]["content"])
    return f"#### {product + 1}" if "3 times 4" in prompt else f"#### {product}"
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One engine run the tests only read: made once per pytest run, shared by xdist workers."""
    return built_once(tmp_path_factory, "eval-report-export", _make_run)


def _make_run(root: Path) -> Path:
    config = write_workspace(root / "ws", n_rows=3)
    script = config.parent / "respond.py"
    script.write_text(RESPOND_PY)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OSMOSIS_HOME", str(root / "osmosis-home"))
        plan = build_plan(config, EvalOptions(name="x", mock_script=script))
        result = asyncio.run(run_session(plan))
    assert [(r.status, r.reward) for r in result.rows] == [
        ("success", 1.0),
        ("success", 0.0),
        ("failed", None),
    ]
    return result.run_dir


@pytest.mark.parametrize("fmt", ["openai-messages", "sharegpt", "atif"])
def test_export_round_trips_through_its_reader(run_dir: Path, tmp_path: Path, fmt: str) -> None:
    expected = [record for record, _ in export_records(run_dir)]
    assert [r.reward for r in expected] == [1.0, 0.0, None]
    buffer = io.StringIO()
    assert write_export(run_dir, buffer, fmt) == 3  # type: ignore[arg-type]
    path = tmp_path / f"out.{fmt}.jsonl"
    path.write_text(buffer.getvalue())
    assert read_export(path) == expected
    first = expected[0]
    # the transcript: prompt, the tool call, its result, the answer; the offered tool
    assert [m["role"] for m in first.messages] == ["user", "assistant", "tool", "assistant"]
    call = first.messages[1]["tool_calls"][0]
    assert call["function"]["name"] == "multiply"
    assert json.loads(call["function"]["arguments"]) == {"a": 2, "b": 3}
    assert first.messages[2]["tool_call_id"] == call["id"]
    assert [t["function"]["name"] for t in first.tools] == ["multiply"]
    assert (first.label, first.status) == ("6", "success")


def test_each_format_has_its_layout(run_dir: Path) -> None:
    lines: dict[str, dict] = {}
    for fmt in ("openai-messages", "sharegpt", "atif"):
        buffer = io.StringIO()
        write_export(run_dir, buffer, fmt)  # type: ignore[arg-type]
        lines[fmt] = json.loads(buffer.getvalue().splitlines()[0])
    sharegpt = lines["sharegpt"]
    assert [t["from"] for t in sharegpt["conversations"]] == [
        "human",
        "function_call",
        "observation",
        "gpt",
    ]
    assert json.loads(json.loads(sharegpt["conversations"][1]["value"])[0]["arguments"]) == {
        "a": 2,
        "b": 3,
    }
    assert json.loads(sharegpt["tools"])[0]["function"]["name"] == "multiply"
    atif = lines["atif"]
    assert atif["schema_version"].startswith("ATIF-v1.")
    assert atif["agent"]["tool_definitions"][0]["function"]["name"] == "multiply"
    assert atif["extra"]["osmosis"]["export"]["reward"] == 1.0
    assert [s["step_id"] for s in atif["steps"]] == list(range(1, len(atif["steps"]) + 1))
    plain = lines["openai-messages"]
    assert plain["reward"] == 1.0
    assert plain["messages"][-1] == {"role": "assistant", "content": "#### 6"}


def test_filters_by_status_and_reward(run_dir: Path) -> None:
    def rewards(selection: ExportFilter) -> list[float | None]:
        return [r.reward for r, _ in export_records(run_dir, selection)]

    assert rewards(ExportFilter.of(["success"])) == [1.0, 0.0]
    assert rewards(ExportFilter.of(["failed"])) == [None]
    assert rewards(ExportFilter.of(None, min_reward=0.5)) == [1.0]
    assert rewards(ExportFilter.of(None, max_reward=0.5)) == [0.0]
    with pytest.raises(ExportError, match="unknown status"):
        ExportFilter.of(["passed"])
    with pytest.raises(ExportError, match="above"):
        ExportFilter.of(None, min_reward=1, max_reward=0)


def test_reader_names_a_line_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(ExportError, match=r"bad\.jsonl:1"):
        read_export(path)
    path.write_text("not json\n")
    with pytest.raises(ExportError, match="not JSON"):
        read_export(path)
