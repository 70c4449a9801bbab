from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

from osmosis_ai.eval.report import load_run, render_report, write_report

from .run_builder import Row, write_run

HOSTILE = "</script><script>alert(1)</script>"


def _blob(page: str, key: str) -> object:
    match = re.search(rf'<script type="application/octet-stream" id="{key}">([^<]*)</script>', page)
    assert match is not None
    return json.loads(gzip.decompress(base64.b64decode(match[1])))


def test_the_page_embeds_everything_and_nothing_external(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path, "a", [Row(0), Row(1, reward=0.0, answer=HOSTILE)]))
    page = render_report(run)
    assert page.startswith("<!DOCTYPE html>")
    code = page.replace('"http://www.w3.org/2000/svg"', "")  # the SVG namespace, not a URL
    for external in ("<link", 'src="', "http://", "https://", "fetch(", "secret"):
        assert external not in code
    assert HOSTILE not in page  # data is inside base64, never raw markup
    rows = _blob(page, "rows-0")
    assert isinstance(rows, list)
    assert [r["o"] for r in rows] == ["pass", "fail"]
    assert rows[1]["a"] == HOSTILE
    details = _blob(page, "details-0")
    assert isinstance(details, list)
    assert details[0]["m"][2]["tool_calls"][0]["name"] == "multiply"
    meta = json.loads(re.search(r'id="meta">(.*?)</script>', page, re.S)[1])  # type: ignore[index]
    assert meta["runs"][0]["metrics"]["graded"] == 2
    assert "compare" not in meta


def test_compare_embeds_both_runs_and_the_pairs(tmp_path: Path) -> None:
    base = load_run(write_run(tmp_path, "base", [Row(0, reward=0.0)]))
    new = load_run(write_run(tmp_path, "new", [Row(0, reward=1.0)]))
    page = render_report(new, compare_with=base)
    pairs = _blob(page, "pairs")
    assert isinstance(pairs, list)
    assert [(p["change"], p["delta"]) for p in pairs] == [("improved", 1.0)]
    assert _blob(page, "rows-1") != _blob(page, "rows-0")


def test_output_is_byte_identical_and_redaction_applies_to_the_data(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path, "a", [Row(0, answer="key sk-123456 leaked")]))
    first = write_report(run, tmp_path / "one.html", redact=lambda t: t.replace("sk-123456", "***"))
    second = write_report(
        run, tmp_path / "two.html", redact=lambda t: t.replace("sk-123456", "***")
    )
    assert first.read_bytes() == second.read_bytes()
    rows = _blob(first.read_text(), "rows-0")
    assert isinstance(rows, list)
    assert rows[0]["a"] == "key *** leaked"


def _verdict(cause: str | None) -> dict[str, object]:
    verdict: dict[str, object] = {"append_only": cause is None, "calls": 2, "threads": 1}
    verdict["token_ids"] = "none"
    if cause is not None:
        verdict["divergence"] = {"call": 1, "message": 2, "field": "content", "expected": "a",
                                 "actual": "b", "cause": cause}  # fmt: skip
    return verdict


def test_training_safety_summary_rows_and_details_are_embedded(tmp_path: Path) -> None:
    rows = [
        Row(0, training_safety=_verdict(None)),
        Row(1, training_safety=_verdict("history_edited")),
        Row(2, training_safety={**_verdict(None), "truncated_calls": [1]}),
        Row(3, training_safety=_verdict("history_edited")),
        Row(4),  # no policy call recorded: not checked
    ]
    page = render_report(load_run(write_run(tmp_path, "a", rows)))
    meta = json.loads(re.search(r'id="meta">(.*?)</script>', page, re.S)[1])  # type: ignore[index]
    assert meta["runs"][0]["metrics"]["training_safety"] == {
        "rollouts": 4,
        "append_only": 2,
        "broken": 2,
        "causes": {"history_edited": 2},
        "token_ids_rows": 0,
        "length_truncated_rows": 1,
        "first_rows": {"history_edited": [1, 0]},
        "token_ids_missing": "not requested: enable with --token-ids (vLLM)",
    }
    embedded = _blob(page, "rows-0")
    assert isinstance(embedded, list)
    assert [r["ts"] for r in embedded] == ["ok", "history_edited", "ok", "history_edited", None]
    details = _blob(page, "details-0")
    assert isinstance(details, list)
    assert details[1]["ts"] == rows[1].training_safety
    assert details[4]["ts"] is None
