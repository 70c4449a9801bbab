"""The training-safety check through the eval engine: per-row verdicts, metrics, trajectories.

One run over :mod:`safety_rollout`'s rows (one per mode) against a scripted policy that reasons,
calls the multiply tool, then answers; token ids requested (``token_ids=True``).
"""

from __future__ import annotations

import importlib.util
import json
import pickle
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval import EvalRun, check_append_only, expand_calls, read_index
from osmosis_ai.eval._impl.plan.plan import EvalOptions, build_plan
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.pytest_plugin import built_once
from osmosis_ai.testing.replies import Reply
from osmosis_ai.testing.responders import multiply_solver

from .safety_rollout import MODES, write_safety_workspace


def reasoning_solver(body: Mapping[str, Any]) -> Reply:
    """The multiply solver, with reasoning on its tool-calling turns."""
    reply = multiply_solver(body)
    return replace(reply, reasoning="I will use the tool.") if reply.tool_calls else reply


#: mode -> (call, message, field, cause) of the first divergence (None: append-only)
EXPECTED: dict[str, tuple[int, int, str, str] | None] = {
    "safe": None,
    "subagents": None,
    "tool_args_reformatted": (1, 2, "tool_calls[0].function.arguments", "tool_args_reformatted"),
    "reasoning_dropped": (1, 2, "reasoning_content", "reasoning_dropped"),
    "history_edited": (1, 1, "content", "history_edited"),
    "history_truncated": (1, 1, "messages", "history_truncated"),
    "system_changed": (1, 0, "content", "system_changed"),
}


SAMPLING = {"temperature": 0.5, "seed": 11}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> EvalRun:
    """One run the tests only read: made once per pytest run, shared by the xdist workers."""
    saved = built_once(tmp_path_factory, "eval-training-safety", _make_run)
    run: EvalRun = pickle.loads(saved.read_bytes())
    return run


def _make_run(root: Path) -> Path:
    import asyncio

    config = write_safety_workspace(root / "ws")

    async def main() -> EvalRun:
        async with ScriptedPolicyServer(reasoning_solver) as policy:
            options = EvalOptions(
                model="m",
                base_url=policy.url,
                name="s",
                token_ids=True,
                sampling=SAMPLING,
            )
            return await run_session(build_plan(config, options))

    saved = root / "run.pickle"
    saved.write_bytes(pickle.dumps(asyncio.run(main())))
    return saved


def _mode(run: EvalRun, row_index: int) -> str:
    return MODES[row_index]


def test_every_row_is_checked_with_the_right_verdict(run: EvalRun) -> None:
    assert run.succeeded == len(EXPECTED)
    for row in read_index(run.run_dir):
        verdict = row.training_safety
        assert verdict is not None
        mode = _mode(run, row.row_index)
        expected = EXPECTED[mode]
        assert verdict["token_ids"] == "all", mode
        if expected is None:
            assert verdict["append_only"] is True, (mode, verdict)
            assert "token_mismatch" not in verdict, mode
            continue
        assert verdict["append_only"] is False, mode
        d = verdict["divergence"]
        assert (d["call"], d["message"], d["field"], d["cause"]) == expected, mode
        # re-rendering history also changes the prompt's token ids: found on the same call
        assert verdict["token_mismatch"]["call"] == expected[0], mode
    by_mode = {_mode(run, r.row_index): r.training_safety for r in read_index(run.run_dir)}
    assert by_mode["subagents"]["threads"] == 3  # type: ignore[index]


def test_metrics_summarise_the_run(run: EvalRun) -> None:
    metrics = json.loads((run.run_dir / "metrics.json").read_text())
    summary = metrics["summary"]["training_safety"]
    assert summary == run.metrics["training_safety"]
    assert summary["rollouts"] == 7
    assert summary["append_only"] == 2
    assert summary["broken"] == 5
    assert summary["causes"] == {c[3]: 1 for c in EXPECTED.values() if c is not None}
    assert summary["token_ids_rows"] == 7


def test_trajectory_keeps_calls_compact_and_the_check_reruns_on_it(run: EvalRun) -> None:
    for row in read_index(run.run_dir):
        path = row.trajectory_path(run.run_dir)
        assert path is not None
        osmosis = json.loads(path.read_text())["extra"]["osmosis"]
        assert osmosis["training_safety"] == row.training_safety
        calls = osmosis["llm_calls"]
        assert all(c["system_fingerprint"] == "fp_osmosis_scripted" for c in calls)
        if _mode(run, row.row_index) == "safe":
            assert "messages" not in calls[1]  # a reference + the appended suffix
            assert calls[1]["messages_from"] == {"call": 0, "count": 3}
        # a trainer runs the same check on its own copy of the trace
        assert check_append_only(expand_calls(calls)).to_json() == row.training_safety


def test_manifest_and_trajectories_carry_the_reproducibility_record(run: EvalRun) -> None:
    manifest = json.loads((run.run_dir / "manifest.json").read_text())
    record, inputs = manifest["reproducibility"], manifest["inputs"]
    assert record["model"] == "m"
    assert record["sampling_overrides"] == SAMPLING
    assert record["seed"] == 11
    assert record["sampling"] == [dict(sorted(SAMPLING.items()))]  # what every call carried
    assert record["seeds"] == [11]
    assert record["system_fingerprints"] == ["fp_osmosis_scripted"]
    assert record["dataset_sha256"] == inputs["dataset"]["sha256"]
    assert record["selection_sha256"] == inputs["dataset"]["selection_sha256"]
    assert record["rollout_source_digest"] == inputs["rollout"]["source_digest"]
    assert "harbor_tasks" not in record  # no Harbor rollout: no Harbor section, not an empty one
    # osmosis-cli is recorded when installed (not in the core-alone nox session)
    cli = {"osmosis-cli"} if importlib.util.find_spec("osmosis_cli") else set()
    assert {"python", "osmosis-core", *cli} <= set(record["versions"])
    for row in read_index(run.run_dir):
        path = row.trajectory_path(run.run_dir)
        assert path is not None
        osmosis = json.loads(path.read_text())["extra"]["osmosis"]
        # this rollout's own observations equal the run's (one backend, one setting)
        assert osmosis["reproducibility"] == record


def test_require_append_only_fails_the_run_and_says_so_everywhere(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The gate is the run's outcome, not only the CLI's exit code: status ``failed`` and
    ``stop_code`` ``append_only`` in the EvalRun, metrics.json and what readers load."""
    import asyncio

    from osmosis_ai.eval.report import load_run

    config = write_safety_workspace(tmp_path_factory.mktemp("gate") / "ws")

    async def main() -> EvalRun:
        async with ScriptedPolicyServer(reasoning_solver) as policy:
            options = EvalOptions(
                model="m", base_url=policy.url, name="gate", require_append_only=True
            )
            return await run_session(build_plan(config, options))

    run = asyncio.run(main())
    assert run.failed == 0  # every rollout succeeded; the gate alone fails the run
    assert (run.status, run.stop_code) == ("failed", "append_only")
    written = json.loads((run.run_dir / "metrics.json").read_text())["eval_run"]
    assert (written["status"], written["stop_code"]) == ("failed", "append_only")
    header = load_run(run.run_dir, transcripts=False).header
    assert (header.status, header.stop_code) == ("failed", "append_only")
