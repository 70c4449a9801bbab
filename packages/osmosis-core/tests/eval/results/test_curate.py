"""``curate_run`` on a crafted run made by the engine: the tiny rollout answered by a reply
script that solves exactly ``c`` of each row's 4 samples, so every row's pass rate is known."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval import CurateOptions, CurationError, curate_run, holdout_size, parse_band
from osmosis_ai.eval._impl.plan.plan import EvalOptions, build_plan
from osmosis_ai.eval._impl.results.curate import cost_per_step, row_stats
from osmosis_ai.eval._impl.run_dir.records import RowRecord
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing.pytest_plugin import built_once

from ..tiny_rollout import write_workspace

#: Per prompt: how many of each 4 consecutive calls answer right; ``fail`` calls get HTTP 400.
RESPOND_PY = r"""
import re
from collections import Counter

from osmosis_ai.testing import ErrorReply

PLAN = {"2": (4, 0), "3": (0, 0), "4": (1, 0), "5": (2, 0), "6": (3, 0), "7": (1, 2)}
CALLS = Counter()


def respond(body):
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    a, b = map(int, re.findall(r"\d+", prompt))
    right, fail = PLAN[str(a)]
    k = CALLS[prompt] % 4
    CALLS[prompt] += 1
    if k < fail:
        return ErrorReply(400, "scripted failure")
    return f"#### {a * b}" if k - fail < right else "#### 0"
"""


def _row(a: int) -> dict[str, Any]:
    return {"user_prompt": f"What is {a} times {a + 1}?", "ground_truth": str(a * (a + 1))}


#: 2: always solved, 3: never, 4: 1/4, 5: 2/4, 6: 3/4, 5 again (a duplicate), 7: 2 failed
#: samples and 1 of the other 2 solved.
ROWS = [_row(2), _row(3), _row(4), _row(5), _row(6), _row(5), _row(7)]


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One engine run the tests only read: made once per pytest run, shared by xdist workers."""
    return built_once(tmp_path_factory, "eval-results-curate", _make_crafted)


def _make_crafted(root: Path) -> Path:
    config = write_workspace(root / "ws", rows=ROWS, evaluation="n = 4")
    script = config.parent / "respond.py"
    script.write_text(RESPOND_PY)
    # One work item at a time, in row order: the two rows sharing a prompt get calls 0-3 and 4-7.
    plan = build_plan(config, EvalOptions(name="crafted", mock_script=script, max_in_flight=1))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OSMOSIS_HOME", str(root / "osmosis-home"))
        result = asyncio.run(run_session(plan))
    assert (result.succeeded, result.failed) == (26, 2), [r.error_message for r in result.rows]
    return result.run_dir


def test_keeps_exactly_the_rows_in_the_band(crafted: Path, tmp_path: Path) -> None:
    out = tmp_path / "curated.jsonl"
    result = curate_run(crafted, out, CurateOptions(band=(0.1, 0.9), min_n=4))
    decisions = {s.source_row_index: s.decision for s in result.rows}
    assert decisions == {
        0: "above_band",
        1: "below_band",
        2: "kept",
        3: "kept",
        4: "kept",
        5: "duplicate",
        6: "too_few_samples",
    }
    rates = {s.source_row_index: s.pass_rate for s in result.rows}
    assert rates == {0: 1.0, 1: 0.0, 2: 0.25, 3: 0.5, 4: 0.75, 5: 0.5, 6: 0.5}
    # the dataset's own records, as they were, ready for `dataset upload`
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        ROWS[2],
        ROWS[3],
        ROWS[4],
    ]
    assert (result.kept, result.duplicates, result.held_out) == (3, 1, 0)
    # signal share by hand: every row has >= 2 graded samples; rows 0 and 1 are all-alike
    # (5 of 7 carry signal); the 3 kept rows all do.
    assert result.signal_share_before == pytest.approx(5 / 7)
    assert result.signal_share_after == 1.0

    def mixed(p: float) -> float:  # a group of 4 at pass rate p is not all alike
        return 1 - p**4 - (1 - p) ** 4

    assert result.expected_signal_share_before == pytest.approx(
        (0 + 0 + mixed(0.25) + mixed(0.5) + mixed(0.75) + mixed(0.5) + mixed(0.5)) / 7
    )
    assert result.expected_signal_share_after == pytest.approx(
        (mixed(0.25) + mixed(0.5) + mixed(0.75)) / 3
    )
    assert result.cost_per_step_usd is None  # the mock policy is not priced
    provenance = json.loads(result.provenance.read_text())
    assert provenance["source_run"]["name"] == "crafted"
    assert provenance["options"]["band"] == [0.1, 0.9]
    assert provenance["figures"]["kept"] == 3
    assert [r["decision"] for r in provenance["rows"]] == [decisions[i] for i in range(7)]
    assert len(provenance["output"]["sha256"]) == 64


def test_reward_variance_and_a_lower_min_n(crafted: Path, tmp_path: Path) -> None:
    result = curate_run(crafted, tmp_path / "c.jsonl", CurateOptions(band=(0.5, 0.5), min_n=2))
    kept = [s.source_row_index for s in result.rows if s.decision == "kept"]
    assert kept == [3, 6]  # row 5 duplicates row 3; row 6 has 2 graded samples, enough now
    stats = {s.source_row_index: s for s in result.rows}
    assert stats[2].reward_variance == pytest.approx(0.1875)  # 1/4 of 1.0, 3/4 of 0.0
    assert stats[6].failed == 2
    assert stats[6].graded == 2


def test_holdout_split_mirrors_the_platform_rule(crafted: Path, tmp_path: Path) -> None:
    assert [holdout_size(n) for n in (0, 4, 5, 12, 49_999, 50_000, 80_000)] == [
        0, 0, 1, 2, 9_999, 10_000, 10_000,
    ]  # fmt: skip
    out, held = tmp_path / "train.jsonl", tmp_path / "held.jsonl"
    result = curate_run(crafted, out, CurateOptions(band=(0.0, 1.0), min_n=1, holdout=held))
    # 6 unique rows kept (row 5 is a duplicate): floor(6 * 0.2) = 1 held out
    assert (result.kept, result.held_out) == (5, 1)
    train = [json.loads(line) for line in out.read_text().splitlines()]
    heldout = [json.loads(line) for line in held.read_text().splitlines()]
    assert len(train) == 5
    assert len(heldout) == 1
    assert heldout[0] not in train
    assert (result.platform_holdout, result.platform_train) == (1, 4)


def test_cost_per_training_step_from_row_costs() -> None:
    rows = [
        RowRecord(0, k, 0, "success", reward=float(k % 2), cost={"total_usd": 0.01})
        for k in range(4)
    ] + [
        RowRecord(1, k, 1, "success", reward=float(k % 2), cost={"total_usd": 0.03})
        for k in range(4)
    ]
    stats = row_stats(rows, 1.0)
    assert [s.mean_cost_usd for s in stats] == [0.01, 0.03]
    # mean cost per sample 0.02 x 8 samples per group x 16 prompts per step
    assert cost_per_step(stats, 8, 16) == pytest.approx(0.02 * 8 * 16)
    unpriced = [*rows, RowRecord(2, 0, 2, "success", reward=1.0)]
    assert cost_per_step(row_stats(unpriced, 1.0), 8, 16) is None


def test_bad_requests_say_what_to_fix(crafted: Path, tmp_path: Path) -> None:
    for text in ("0.9:0.1", "0.1", "a:b", "0:2"):
        with pytest.raises(CurationError, match="LOW:HIGH"):
            parse_band(text)
    with pytest.raises(CurationError, match="--min-n"):
        curate_run(crafted, tmp_path / "x.jsonl", CurateOptions(min_n=0))
    manifest = json.loads((crafted / "manifest.json").read_text())
    dataset = Path(manifest["provenance"]["dataset_path"])
    dataset.write_text(dataset.read_text() + json.dumps(_row(9)) + "\n")
    with pytest.raises(CurationError, match="changed since run"):
        curate_run(crafted, tmp_path / "x.jsonl", CurateOptions())
