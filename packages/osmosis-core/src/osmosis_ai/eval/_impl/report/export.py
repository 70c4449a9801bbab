"""A run's transcripts as training data: one JSON line per sample (``osmosis eval export``).

Formats (each line also carries ``reward``, ``metrics``, ``status`` and the sample's keys
``run``, ``row_index``, ``run_index``, ``source_row_index``, ``rollout_id``, ``label``):

* ``openai-messages``: ``{"messages": [...], "tools": [...]}``: chat-completions messages
  (assistant ``tool_calls`` with their ids and JSON-string arguments, ``tool`` results) and the
  tool definitions the policy was offered (the ``tools`` of its requests);
* ``sharegpt``: ``{"conversations": [{"from", "value"}], "system", "tools"}``, the layout SFT
  trainers read: ``human`` / ``gpt`` turns, an assistant's tool calls as a ``function_call``
  turn whose value is the JSON list of ``{"name", "arguments", "id"}`` (text said alongside
  them in its ``thought``), tool results as ``observation`` turns (``tool_call_id`` kept),
  the first system message as ``system`` and the tool definitions as a JSON string;
* ``atif``: the sample's ATIF trajectory document (Harbor's Agent Trajectory Interchange
  Format, as the run stored it) with ``agent.tool_definitions`` filled in and the export's
  fields under ``extra.osmosis.export``.

:func:`read_export` reads any of them back into :class:`ExportRecord` values equal to those
:func:`export_records` made (the round trip the tests check).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.run_dir.records import RowRecord

ExportFormat = Literal["openai-messages", "sharegpt", "atif"]
FORMATS: tuple[ExportFormat, ...] = ("openai-messages", "sharegpt", "atif")
_STATUSES = frozenset({"success", "failed", "skipped"})


class ExportError(EvalError, ValueError):
    """An export request or an export file is not usable; the message says why."""


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """One exported sample, independent of the file format."""

    run: str
    row_index: int
    run_index: int
    source_row_index: int
    status: str
    reward: float | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    rollout_id: str | None = None
    label: str | None = None

    def keys(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "row_index": self.row_index,
            "run_index": self.run_index,
            "source_row_index": self.source_row_index,
            "rollout_id": self.rollout_id,
            "status": self.status,
            "reward": self.reward,
            "metrics": self.metrics,
            "label": self.label,
        }


@dataclass(frozen=True, slots=True)
class ExportFilter:
    """Which samples to export: statuses (default: every one) and a reward range (a sample
    without a reward is left out when a bound is set)."""

    statuses: frozenset[str] = _STATUSES
    min_reward: float | None = None
    max_reward: float | None = None

    @classmethod
    def of(
        cls,
        statuses: Iterable[str] | None = None,
        min_reward: float | None = None,
        max_reward: float | None = None,
    ) -> ExportFilter:
        wanted = frozenset(s.strip() for s in statuses or () if s.strip()) or _STATUSES
        unknown = wanted - _STATUSES
        if unknown:
            raise ExportError(
                f"unknown status {', '.join(sorted(unknown))}: use success, failed or skipped"
            )
        if min_reward is not None and max_reward is not None and min_reward > max_reward:
            raise ExportError(f"--min-reward {min_reward} is above --max-reward {max_reward}")
        return cls(wanted, min_reward, max_reward)

    def keeps(self, row: RowRecord) -> bool:
        if row.status not in self.statuses:
            return False
        if self.min_reward is None and self.max_reward is None:
            return True
        if row.reward is None:
            return False
        low = self.min_reward if self.min_reward is not None else float("-inf")
        high = self.max_reward if self.max_reward is not None else float("inf")
        return low <= row.reward <= high


def tool_definitions(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tools the policy was offered (the ``tools`` of its requests, each name once)."""
    extra = document.get("extra")
    osmosis = extra.get("osmosis") if isinstance(extra, Mapping) else None
    calls = osmosis.get("llm_calls") if isinstance(osmosis, Mapping) else None
    tools: dict[str, dict[str, Any]] = {}
    for call in calls if isinstance(calls, list) else []:
        offered = call.get("tools") if isinstance(call, Mapping) else None
        for tool in offered if isinstance(offered, list) else []:
            if isinstance(tool, dict):
                function = tool.get("function")
                name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
                tools.setdefault(str(name), tool)
    return list(tools.values())


def export_records(
    run_dir: str | Path, selection: ExportFilter | None = None
) -> Iterator[tuple[ExportRecord, dict[str, Any]]]:
    """Each kept sample of the run with a transcript: its record and its trajectory document."""
    from osmosis_ai.eval._impl.report.run_data import load_run, read_json
    from osmosis_ai.eval._impl.report.transcript import sample_messages

    root = Path(run_dir)
    data = load_run(root, transcripts=False)
    keep = selection or ExportFilter()
    for row in data.rows:
        if row.trajectory_filename is None or not keep.keeps(row):
            continue
        document = read_json(root / row.trajectory_filename)
        if not document:
            continue
        yield (
            ExportRecord(
                run=data.header.name,
                row_index=row.row_index,
                run_index=row.run_index,
                source_row_index=row.source_row_index,
                status=row.status,
                reward=row.reward,
                messages=sample_messages(document),
                tools=tool_definitions(document),
                metrics=dict(row.metrics or {}),
                rollout_id=row.rollout_id,
                label=row.label,
            ),
            document,
        )


def _text(content: Any) -> str:
    from osmosis_ai.rollout.types.messages import content_text

    return content if isinstance(content, str) else content_text(content, keep_non_text=True)


def to_line(record: ExportRecord, document: Mapping[str, Any], fmt: ExportFormat) -> dict[str, Any]:
    """The JSON object of one exported line."""
    if fmt == "openai-messages":
        return {"messages": record.messages, "tools": record.tools, **record.keys()}
    if fmt == "sharegpt":
        return _sharegpt(record)
    if fmt == "atif":
        out = json.loads(json.dumps(document))  # a copy: the run's file is never changed
        agent = out.setdefault("agent", {})
        if isinstance(agent, dict) and record.tools:
            agent["tool_definitions"] = record.tools
        extra = out.setdefault("extra", {})
        osmosis = extra.setdefault("osmosis", {}) if isinstance(extra, dict) else {}
        if isinstance(osmosis, dict):
            osmosis["export"] = record.keys()
        return out
    raise ExportError(f"unknown export format {fmt!r}: use {', '.join(FORMATS)}")


def _sharegpt(record: ExportRecord) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    system: str | None = None
    for message in record.messages:
        role = message.get("role")
        if role == "system" and system is None and not turns:
            system = _text(message.get("content"))
        elif role == "system":
            turns.append({"from": "system", "value": _text(message.get("content"))})
        elif role == "user":
            turns.append({"from": "human", "value": _text(message.get("content"))})
        elif role == "tool":
            turns.append(
                {
                    "from": "observation",
                    "value": _text(message.get("content")),
                    "tool_call_id": message.get("tool_call_id"),
                }
            )
        elif message.get("tool_calls"):
            calls = [
                {
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                    "id": call.get("id"),
                }
                for call in message["tool_calls"]
            ]
            turn: dict[str, Any] = {"from": "function_call", "value": json.dumps(calls)}
            if message.get("content"):
                turn["thought"] = _text(message.get("content"))
            if message.get("reasoning_content"):
                turn["reasoning"] = message["reasoning_content"]
            turns.append(turn)
        else:
            turn = {"from": "gpt", "value": _text(message.get("content"))}
            if message.get("reasoning_content"):
                turn["reasoning"] = message["reasoning_content"]
            turns.append(turn)
    line: dict[str, Any] = {"conversations": turns}
    if system is not None:
        line["system"] = system
    line["tools"] = json.dumps(record.tools)
    return {**line, **record.keys()}


def write_export(
    run_dir: str | Path,
    out: IO[str],
    fmt: ExportFormat,
    selection: ExportFilter | None = None,
) -> int:
    """Write the run's kept samples to ``out`` in ``fmt``, one JSON line each; returns how
    many. The lines pass through the run's redactor (its secrets never reach the file)."""
    from osmosis_ai.eval._impl.report.redact import run_redactor

    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}: use {', '.join(FORMATS)}")
    redact = run_redactor(Path(run_dir))
    count = 0
    for record, document in export_records(run_dir, selection):
        out.write(redact(json.dumps(to_line(record, document, fmt), ensure_ascii=False)) + "\n")
        count += 1
    return count


def read_export(path: str | Path) -> list[ExportRecord]:
    """The records of an export file, whatever its format (told line by line)."""
    records: list[ExportRecord] = []
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError as exc:
                raise ExportError(f"{path}:{number} is not JSON ({exc})") from exc
            records.append(_record(data, f"{path}:{number}"))
    return records


def _record(data: Mapping[str, Any], where: str) -> ExportRecord:
    if "messages" in data:
        keys, messages, tools = data, list(data["messages"]), list(data.get("tools") or [])
    elif "conversations" in data:
        keys, messages = data, _from_sharegpt(data)
        tools = json.loads(data.get("tools") or "[]")
    elif "steps" in data:
        from osmosis_ai.eval._impl.report.transcript import sample_messages

        keys = ((data.get("extra") or {}).get("osmosis") or {}).get("export") or {}
        messages = sample_messages(data)
        tools = list((data.get("agent") or {}).get("tool_definitions") or [])
    else:
        raise ExportError(
            f"{where}: not an osmosis export line (no messages, conversations or steps)"
        )
    try:
        return ExportRecord(
            run=keys["run"],
            row_index=keys["row_index"],
            run_index=keys["run_index"],
            source_row_index=keys["source_row_index"],
            status=keys["status"],
            reward=keys.get("reward"),
            messages=messages,
            tools=tools,
            metrics=dict(keys.get("metrics") or {}),
            rollout_id=keys.get("rollout_id"),
            label=keys.get("label"),
        )
    except KeyError as exc:
        raise ExportError(f"{where}: the line has no {exc.args[0]!r}") from exc


def _from_sharegpt(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if "system" in data:
        messages.append({"role": "system", "content": data["system"]})
    for turn in data["conversations"]:
        kind = turn.get("from")
        if kind in ("human", "system"):
            messages.append(
                {"role": "user" if kind == "human" else "system", "content": turn["value"]}
            )
        elif kind == "observation":
            messages.append(
                {"role": "tool", "tool_call_id": turn.get("tool_call_id"), "content": turn["value"]}
            )
        elif kind == "function_call":
            message: dict[str, Any] = {
                "role": "assistant",
                "content": turn.get("thought", ""),
                "tool_calls": [
                    {
                        "id": call.get("id"),
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                    for call in json.loads(turn["value"])
                ],
            }
            if "reasoning" in turn:
                message["reasoning_content"] = turn["reasoning"]
            messages.append(message)
        else:
            message = {"role": "assistant", "content": turn["value"]}
            if "reasoning" in turn:
                message["reasoning_content"] = turn["reasoning"]
            messages.append(message)
    return messages


__all__ = [
    "FORMATS",
    "ExportError",
    "ExportFilter",
    "ExportFormat",
    "ExportRecord",
    "export_records",
    "read_export",
    "to_line",
    "tool_definitions",
    "write_export",
]
