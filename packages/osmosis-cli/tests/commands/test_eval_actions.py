"""``osmosis eval regrade``, ``eval export``, ``dataset curate`` and ``eval run
--fail-on-tripwire`` through the real CLI on a run made by ``osmosis eval run`` (the tiny
rollout, the mock policy)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_harness import load_tiny_rollout as _load_tiny_rollout  # pyright: ignore[reportMissingImports]

from osmosis_cli.main import run

MakeWorkspace = Callable[..., Path]

GRADERS_PY = r"""
import re

from osmosis_ai.rollout import Grader


class Over10(Grader):
    async def grade(self, ctx):
        found = re.search(r"####\s*(-?\d+)", ctx.sample.messages[-1].get("content") or "")
        ok = found is not None and int(found.group(1)) == int(ctx.label)
        ctx.set_reward(1.0 if ok and int(ctx.label) > 10 else 0.0)
"""


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _error(err: str) -> dict[str, Any]:
    return json.loads([line for line in err.splitlines() if '"error"' in line][-1])["error"]


@pytest.fixture
def source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A finished run ``src`` (3 rows x 2 samples, every one solved); returns the runs folder."""
    config = _load_tiny_rollout().write_workspace(tmp_path / "ws", n_rows=3)
    root = config.parent.parent.parent
    (root / "graders.py").write_text(GRADERS_PY)
    monkeypatch.chdir(root)
    monkeypatch.delitem(sys.modules, "graders", raising=False)
    code, _, err = _cli(capsys, "eval", "run", str(config), "--name", "src", "--n", "2", "--json")
    assert code == 0, err
    return root / ".osmosis" / "evals"


def test_regrade_then_compare_shows_the_flips(
    source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(
        capsys, "eval", "regrade", "src", "--grader", "graders:Over10", "--name", "strict",
        "--no-judge-cache", "--runs-dir", str(source), "--json",
    )  # fmt: skip
    assert code == 0, err
    envelope = json.loads(out)
    assert envelope["operation"] == "eval.regrade"
    resource = envelope["resource"]
    assert (resource["regraded"], resource["copied"], resource["changed"]) == (6, 0, 2)
    assert resource["output_path"] == str(source / "strict")
    assert envelope["next_steps_structured"] == [{"command": "osmosis eval compare src strict"}]
    code, out, err = _cli(capsys, "eval", "compare", "src", "strict", "--runs-dir", str(source), "--json")  # fmt: skip
    assert code == 0, err
    detail = json.loads(out)["data"]
    assert (detail["regressed"], detail["improved"]) == (2, 0)  # 2 x 3 = 6 is not above 10
    assert detail["regraded_from"]["run"] == "src"
    assert {(r["source_row_index"], r["run_index"]) for r in detail["flipped_rows"]} == {
        (0, 0),
        (0, 1),
    }


def test_regrade_errors(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "eval", "regrade", "nope", "--name", "x", "--runs-dir", str(source), "--json")  # fmt: skip
    assert (code, _error(err)["code"]) == (1, "NOT_FOUND")
    code, _, err = _cli(
        capsys, "eval", "regrade", "src", "--name", "x", "--grader", "graders:Over10",
        "--config", "c.toml", "--runs-dir", str(source), "--json",
    )  # fmt: skip
    assert (code, _error(err)["code"]) == (1, "VALIDATION")
    assert "not both" in _error(err)["message"]
    code, _, err = _cli(capsys, "eval", "regrade", "src", "--name", "x", "--grader", "graders", "--runs-dir", str(source), "--json")  # fmt: skip
    assert "MODULE:CLASS" in _error(err)["message"]


def test_export_to_a_file_and_read_it_back(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from osmosis_ai.eval import export_records, read_export

    target = tmp_path / "sft.jsonl"
    code, out, err = _cli(
        capsys, "eval", "export", "src", "--format", "sharegpt", "-o", str(target),
        "--status", "success", "--min-reward", "1", "--runs-dir", str(source), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["resource"]["samples"] == 6
    assert read_export(target) == [r for r, _ in export_records(source / "src")]
    code, _, err = _cli(capsys, "eval", "export", "src", "-o", str(target), "--runs-dir", str(source), "--json")  # fmt: skip
    assert "--overwrite" in _error(err)["message"]
    code, _, err = _cli(capsys, "eval", "export", "src", "--format", "csv", "--runs-dir", str(source), "--json")  # fmt: skip
    assert "sharegpt, openai-messages, atif" in _error(err)["message"]
    # to standard output: only the lines there; the count goes to stderr
    code, out, err = _cli(capsys, "eval", "export", "src", "--format", "atif", "--runs-dir", str(source))  # fmt: skip
    assert code == 0, err
    assert [json.loads(line)["schema_version"][:6] for line in out.splitlines()] == ["ATIF-v"] * 6


def test_curate_writes_the_dataset_and_its_provenance(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "curated.jsonl"
    code, out, err = _cli(
        capsys, "dataset", "curate", "src", "-o", str(target), "--band", "0:1",
        "--runs-dir", str(source), "--json",
    )  # fmt: skip
    assert code == 0, err
    resource = json.loads(out)["resource"]
    assert resource["kept"] == 3
    # every row always solved: no group carries signal, before or after
    assert (resource["signal_share_before"], resource["signal_share_after"]) == (0.0, 0.0)
    assert len(target.read_text().splitlines()) == 3
    assert Path(resource["provenance_path"]).is_file()
    # 3 rows: fewer than the platform's 4, so no upload suggestion but a warning saying why
    assert "next_steps_structured" not in json.loads(out)
    warning = json.loads(err.splitlines()[-1])["warning"]
    assert warning["code"] == "TOO_FEW_ROWS"
    assert (warning["details"]["kept"], warning["details"]["min_rows"]) == (3, 4)
    code, _, err = _cli(capsys, "dataset", "curate", "src", "-o", str(tmp_path / "x.jsonl"), "--band", "0.9:0.1", "--runs-dir", str(source), "--json")  # fmt: skip
    assert "LOW:HIGH" in _error(err)["message"]


def test_curate_keeping_too_few_rows_warns_instead_of_suggesting_the_upload(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "curated.jsonl"
    # the default band drops every row (all always solved): 0 kept
    code, out, err = _cli(capsys, "--plain", "dataset", "curate", "src", "-o", str(target), "--runs-dir", str(source))  # fmt: skip
    assert code == 0, err
    assert "Kept 0 of 3 row(s)" in out
    assert "dataset upload" not in out
    assert "Warning: kept 0 row(s)" in err
    assert "needs at least 4 rows" in err


def test_fail_on_tripwire_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _load_tiny_rollout().write_workspace(tmp_path / "ws", n_rows=2)
    monkeypatch.chdir(config.parent.parent.parent)
    # the mock policy answers every sample of a row the same way: group_collapse
    code, out, err = _cli(
        capsys, "eval", "run", str(config), "--name", "t", "--n", "2", "--fail-on-tripwire",
        "--json",
    )  # fmt: skip
    assert code == 1, err
    envelope = json.loads(out)
    assert envelope["status"] == "failed"
    assert envelope["resource"]["metrics"]["tripwires"]["by_name"] == {"group_collapse": 4}
    assert "--fail-on-tripwire" in envelope["message"]
