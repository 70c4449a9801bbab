"""``regrade_run``: the grader re-run on a real run's saved samples (the tiny rollout, the mock
policy), written as a new run that ``compare_runs`` pairs with its source."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval import RegradeError, regrade_run, regrade_run_async
from osmosis_ai.eval._impl.plan.plan import EvalOptions, build_plan
from osmosis_ai.eval._impl.report.transcript import sample_messages
from osmosis_ai.eval._impl.run_dir.manifest import ManifestMismatchError
from osmosis_ai.eval._impl.session import run_session
from osmosis_ai.eval.judge import Judge
from osmosis_ai.eval.report import compare_runs, load_run
from osmosis_ai.rollout import Grader, GraderConfig, GraderContext
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.judge import scripted_judge

MakeWorkspace = Callable[..., Path]

#: A changed grader: the same check as the tiny rollout's, plus "the product is above 10"
#: and "the row's metadata says it counts"; it records what it saw.
GRADERS_PY = r"""
import re

from osmosis_ai.rollout import Grader

SEEN = []


class Over10(Grader):
    async def grade(self, ctx):
        SEEN.append((ctx.label, ctx.metadata, [m.get("role") for m in ctx.sample.messages]))
        text = ctx.sample.messages[-1].get("content") or ""
        found = re.search(r"####\s*(-?\d+)", text)
        ok = found is not None and int(found.group(1)) == int(ctx.label)
        counts = (ctx.metadata or {}).get("counts", True)
        ctx.set_reward(1.0 if ok and int(ctx.label) > 10 and counts else 0.0)
        ctx.sample.metrics["over_10"] = 1.0 if int(ctx.label) > 10 else 0.0


class Broken(Grader):
    async def grade(self, ctx):
        raise RuntimeError("broken grader")
"""

ROWS = [
    {"user_prompt": "What is 2 times 3?", "ground_truth": "6", "metadata": {"counts": True}},
    {"user_prompt": "What is 3 times 4?", "ground_truth": "12", "metadata": {"counts": True}},
    {"user_prompt": "What is 4 times 5?", "ground_truth": "20", "metadata": {"counts": False}},
    {"user_prompt": "What is 5 times 6?", "ground_truth": "30", "metadata": {"counts": True}},
]


async def _source_run(workspace: MakeWorkspace) -> tuple[Path, Path]:
    config = workspace(rows=ROWS, evaluation="n = 2")
    (config.parent.parent.parent / "graders.py").write_text(GRADERS_PY)
    plan = build_plan(config, EvalOptions(name="src"))
    result = await run_session(plan)
    assert (result.status, result.succeeded) == ("success", 8)
    return result.run_dir, config.parent.parent.parent


@pytest.fixture
async def source(workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    run_dir, root = await _source_run(workspace)
    monkeypatch.delitem(sys.modules, "graders", raising=False)  # another test's workspace
    monkeypatch.chdir(root)  # --grader graders:Over10 is found in the current folder
    return run_dir, root


def test_regrade_flips_exactly_the_rows_the_new_grader_fails(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    src, _ = source
    source_calls = (src / "llm_calls.jsonl").read_text()
    result = regrade_run(src, name="strict", grader="graders:Over10", judge_cache=tmp_path / "jc")
    assert result.run_dir == src.parent / "strict"
    assert (result.regraded, result.copied) == (8, 0)
    rewards = {(r.source_row_index, r.run_index): r.reward for r in result.rows}
    # 2x3=6 is not above 10, row 2's metadata says it does not count: both samples of each flip
    assert rewards == {
        (0, 0): 0.0, (0, 1): 0.0, (1, 0): 1.0, (1, 1): 1.0,
        (2, 0): 0.0, (2, 1): 0.0, (3, 0): 1.0, (3, 1): 1.0,
    }  # fmt: skip
    assert result.changed == 4
    assert all(r.metrics is not None and "over_10" in r.metrics for r in result.rows)
    # no policy call was made: the source's call log is untouched, the new run has none
    assert (src / "llm_calls.jsonl").read_text() == source_calls
    assert not (result.run_dir / "llm_calls.jsonl").exists()

    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    link = manifest["regraded_from"]
    assert link["run"] == "src"
    assert link["grader"] == "graders:Over10"
    assert link["grader_sha256"]
    assert (link["regraded"], link["copied"]) == (8, 0)
    source_inputs = json.loads((src / "manifest.json").read_text())["inputs"]
    assert manifest["inputs"] == {
        **source_inputs,
        "regraded_from": {"run": "src", "grader": "graders:Over10"},
    }

    comparison = compare_runs(load_run(src), load_run(result.run_dir))
    flipped = sorted(p.key for p in comparison.flipped)
    assert flipped == [(0, 0), (0, 1), (2, 0), (2, 1)]
    assert {p.change for p in comparison.flipped} == {"regressed"}
    summary = comparison.summary()
    assert (summary["regressed"], summary["improved"], summary["graded_in_both"]) == (4, 0, 8)
    assert summary["regraded_from"]["grader"] == "graders:Over10"
    assert summary["reproducibility_differences"] == []  # same samples, same model, same code
    # the new run reads like any run (report, show): figures from its metrics.json
    assert load_run(result.run_dir).header.figures.mean_reward == 0.5


async def test_eval_run_refuses_to_resume_a_regraded_run(source: tuple[Path, Path]) -> None:
    src, root = source
    await regrade_run_async(src, name="strict", grader="graders:Over10", judge_cache=False)
    config = root / "configs" / "eval" / "tiny.toml"
    with pytest.raises(ManifestMismatchError, match="regraded_from"):
        await run_session(build_plan(config, EvalOptions(name="strict")))


def test_the_grader_sees_the_saved_label_metadata_and_messages(source: tuple[Path, Path]) -> None:
    src, _ = source
    regrade_run(src, name="seen", grader="graders:Over10", judge_cache=False)
    import graders  # type: ignore[import-not-found]  # the module the regrade imported

    seen = sorted(graders.SEEN, key=lambda s: int(s[0]))
    assert [s[0] for s in seen] == ["6", "6", "12", "12", "20", "20", "30", "30"]
    assert [s[1]["counts"] for s in seen][::2] == [True, True, False, True]
    # the tiny rollout's transcript: prompt, tool call turn, tool result, answer
    assert seen[0][2] == ["user", "assistant", "tool", "assistant"]


def test_default_grader_is_the_source_rollouts_own_and_reproduces_its_rewards(
    source: tuple[Path, Path],
) -> None:
    src, _ = source
    result = regrade_run(src, name="same")
    assert result.grader.endswith(":TinyGrader")
    assert result.changed == 0
    assert [r.reward for r in result.rows] == [r.reward for r in result.source_rows]
    assert compare_runs(load_run(src), load_run(result.run_dir)).flipped == []


def test_a_raising_grader_fails_rows_in_the_grader_phase(source: tuple[Path, Path]) -> None:
    src, root = source
    result = regrade_run(src, name="broken", grader=f"{root / 'graders.py'}:Broken")
    assert {r.status for r in result.rows} == {"failed"}
    assert {r.failed_phase for r in result.rows} == {"grader"}
    assert all("broken grader" in (r.error_message or "") for r in result.rows)
    assert load_run(result.run_dir).header.status == "partial"


def test_bad_requests_say_what_to_fix(source: tuple[Path, Path]) -> None:
    src, _ = source
    with pytest.raises(RegradeError, match="--name"):
        regrade_run(src, grader="graders:Over10")
    with pytest.raises(RegradeError, match="source run itself"):
        regrade_run(src, name="src", grader="graders:Over10")
    with pytest.raises(RegradeError, match="MODULE:CLASS"):
        regrade_run(src, name="x", grader="graders.Over10")
    with pytest.raises(RegradeError, match="cannot import"):
        regrade_run(src, name="x", grader="no_such_module:G")
    with pytest.raises(RegradeError, match="no 'Nope'"):
        regrade_run(src, name="x", grader="graders:Nope")
    regrade_run(src, name="twice", grader="graders:Over10", judge_cache=False)
    with pytest.raises(RegradeError, match="--fresh"):
        regrade_run(src, name="twice", grader="graders:Over10", judge_cache=False)
    again = regrade_run(src, name="twice", grader="graders:Over10", fresh=True, judge_cache=False)
    assert again.regraded == 8


def test_sample_messages_reads_an_atif_document_back() -> None:
    document: dict[str, Any] = {
        "steps": [
            {"step_id": 1, "source": "system", "message": "be brief"},
            {"step_id": 2, "source": "user", "message": "2*3?"},
            {
                "step_id": 3,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "multiply", "arguments": {"a": 2}}
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": "6"}]},
            },
            {"step_id": 4, "source": "agent", "message": "#### 6"},
        ]
    }
    assert sample_messages(document) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "2*3?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "multiply", "arguments": '{"a": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "6"},
        {"role": "assistant", "content": "#### 6"},
    ]


class _JudgeConfig(GraderConfig):
    judge_url: str


class _JudgeGrader(Grader):
    """An LLM-judge grader: 1 when the judge finds the label in the answer."""

    async def grade(self, ctx: GraderContext) -> None:
        assert isinstance(self.config, _JudgeConfig)
        assert ctx.sample is not None
        judge = Judge("openai/judge-model", base_url=self.config.judge_url, retry_base_delay=0.01)
        result = await judge.score(
            solution_str=str(ctx.sample.messages[-1]["content"]),
            rubric="1 if the answer states the expected product",
            ground_truth=ctx.label,
        )
        ctx.set_reward(result.score)


async def test_judge_calls_are_cached_on_disk_across_regrades(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    src, _ = source
    cache = tmp_path / "judge-cache"
    async with ScriptedPolicyServer(scripted_judge(lambda a: 1.0 if "####" in a else 0.0)) as judge:
        config = _JudgeConfig(name="judge", judge_url=judge.url)
        first = await regrade_run_async(
            src, name="judged", grader=_JudgeGrader, grader_config=config, judge_cache=cache
        )
        calls_after_first = len(judge.requests)
        second = await regrade_run_async(
            src, name="judged-again", grader=_JudgeGrader, grader_config=config, judge_cache=cache
        )
        assert len(judge.requests) == calls_after_first  # no judge request the second time
    assert calls_after_first == 8
    assert (first.judge_calls, first.judge_cached_calls) == (8, 0)
    assert (second.judge_calls, second.judge_cached_calls) == (8, 8)
    assert [r.reward for r in second.rows] == [r.reward for r in first.rows] == [1.0] * 8
    assert all(r.judge and r.judge["calls"] == 1 for r in first.rows)
