"""Property tests of what osmosis reads that someone else wrote (issue 39, fuzzing): the wire
models, the server's outbox journal, the eval journal, the dataset readers and the bounded JSON
reader. Each reader either returns what it can read or raises its own declared error; nothing
else escapes (no ``RecursionError``, ``KeyError``, ``AttributeError``...).

The budget is fixed and small (``derandomize``: the same examples on every run; about 10 s in
all), next to the schemathesis fuzzing of the server's routes in ``test_fuzz_schema.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from osmosis_ai._util.json_bounded import TooDeepError, json_objects, loads
from osmosis_ai._util.jsonl import json_object_lines
from osmosis_ai.eval._impl.plan.dataset import DatasetError, iter_dataset
from osmosis_ai.eval._impl.run_dir.journal import count_unreadable, iter_records
from osmosis_ai.rollout.server._impl.entry import RolloutEntry
from osmosis_ai.rollout.server._impl.outbox import encode, replay
from osmosis_ai.rollout.server._impl.retention import done_line, entry_from_record
from osmosis_ai.rollout.types import protocol
from osmosis_ai.rollout.types.enums import RolloutStatus

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
TEXT = st.text(st.characters(codec="utf-8"), max_size=60)
WIRE_MODELS = [
    protocol.RolloutInitRequest,
    protocol.RolloutInitResponse,
    protocol.RolloutResultResponse,
    protocol.CancelRolloutsRequest,
    protocol.RolloutStatusResponse,
    protocol.RolloutCompleteRequest,
    protocol.GraderCompleteRequest,
]


def _request_like() -> st.SearchStrategy[dict[str, Any]]:
    """Mostly-valid admission bodies with arbitrary values in the fields."""
    return st.fixed_dictionaries(
        {
            "rollout_id": TEXT,
            "initial_messages": st.lists(
                st.fixed_dictionaries(
                    {"role": st.sampled_from(["user", "system"]), "content": TEXT}
                ),
                max_size=3,
            ),
            "chat_completions_url": st.just("http://127.0.0.1:9/v1"),
        },
        optional={
            "metadata": st.dictionaries(st.text(max_size=8), JSON, max_size=3),
            "label": TEXT,
        },
    )


@pytest.mark.parametrize("model", WIRE_MODELS, ids=lambda m: m.__name__)
@FUZZ
@given(data=JSON)
def test_wire_models_accept_or_reject_any_json(model: type[BaseModel], data: Any) -> None:
    try:
        parsed = model.model_validate(data)
    except ValidationError:
        return
    again = model.model_validate_json(parsed.model_dump_json())
    assert again == parsed


@FUZZ
@given(body=_request_like())
def test_an_admission_body_round_trips(body: dict[str, Any]) -> None:
    try:
        parsed = protocol.RolloutInitRequest.model_validate(body)
    except ValidationError:
        return
    assert protocol.RolloutInitRequest.model_validate_json(parsed.model_dump_json()) == parsed


@FUZZ
@given(
    lines=st.lists(st.binary(max_size=80) | JSON.map(lambda v: json.dumps(v).encode()), max_size=8)
)
def test_the_outbox_journal_replays_any_bytes(tmp_path: Path, lines: list[bytes]) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b"\n".join(lines))
    for record in replay(journal):  # never raises: unreadable lines are skipped
        assert record["op"] in ("admit", "done")
        assert isinstance(record["id"], str)


@FUZZ
@given(
    rollouts=st.dictionaries(
        TEXT.filter(bool),
        st.tuples(st.floats(allow_nan=False, allow_infinity=False) | st.none(), TEXT | st.none()),
        max_size=6,
    ),
    acknowledged=st.sets(st.integers(0, 5)),
)
def test_done_lines_replay_to_the_same_results(
    tmp_path: Path, rollouts: dict[str, tuple[float | None, str | None]], acknowledged: set[int]
) -> None:
    lines: list[bytes] = []
    expected: dict[str, RolloutEntry] = {}
    for number, (rid, (reward, message)) in enumerate(rollouts.items()):
        entry = RolloutEntry(rid, bytes(32))
        entry.salt, entry.fingerprint = bytes(16), bytes(32)
        entry.finished, entry.status, entry.reward = True, RolloutStatus.SUCCESS, reward
        entry.err_message = message
        entry.result = json.dumps({"rollout_id": rid, "m": message}, ensure_ascii=False).encode()
        line = done_line(entry)
        assert line is not None
        lines.append(line)
        if number in acknowledged:
            lines.append(encode({"op": "ack", "id": rid}))
        else:
            expected[rid] = entry
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b"".join(lines))
    restored = {r["id"]: entry_from_record(r, 0.0) for r in replay(journal)}
    assert set(restored) == set(expected)
    for rid, entry in expected.items():
        back = restored[rid]
        assert back is not None
        assert (back.result, back.reward, back.err_message) == (
            entry.result,
            entry.reward,
            entry.err_message,
        )


@FUZZ
@given(lines=st.lists(st.binary(max_size=80), max_size=8), torn=st.binary(max_size=20))
def test_the_eval_journal_reads_any_bytes(tmp_path: Path, lines: list[bytes], torn: bytes) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b"".join(line.replace(b"\n", b"") + b"\n" for line in lines) + torn.replace(b"\n", b"")
    )
    records = list(iter_records(path))
    assert all(isinstance(r, dict) for r in records)
    assert count_unreadable(path) + len(records) <= len(lines)


@FUZZ
@given(text=st.text(max_size=300), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_the_dataset_reader_reads_or_says_what_is_wrong(
    tmp_path: Path, text: str, suffix: str
) -> None:
    path = tmp_path / f"data{suffix}"
    path.write_text(text, encoding="utf-8")
    try:
        rows = list(iter_dataset(path))
    except DatasetError:
        return
    assert all(row is not None for row in rows)


class _LineError(Exception):
    pass


@FUZZ
@given(lines=st.lists(TEXT | JSON.map(json.dumps), max_size=6))
def test_json_object_lines_yields_objects_or_names_the_line(lines: list[str]) -> None:
    problem = ""
    try:
        for _, where, value in json_object_lines(lines, "f.jsonl", _LineError):
            assert isinstance(value, dict)
            assert where.startswith("f.jsonl:")
    except _LineError as exc:
        problem = str(exc)
    assert not problem or problem.startswith("f.jsonl:")


@FUZZ
@given(value=JSON, prose=st.text(max_size=40), depth=st.integers(1, 400))
def test_the_bounded_reader_agrees_with_json_and_never_recurses(
    value: Any, prose: str, depth: int
) -> None:
    text = json.dumps(value)
    assert loads(text) == json.loads(text)
    if isinstance(value, dict):
        assert value in json_objects(f"{prose} {text} {prose.replace('{', '(')}") or "{" in prose
    nested = "[" * depth + "]" * depth
    try:
        assert loads(nested) is not None
    except TooDeepError:
        assert depth > 128
