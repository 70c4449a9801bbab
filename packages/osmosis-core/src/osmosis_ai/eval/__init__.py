"""``osmosis_ai.eval``: evaluating rollouts locally, including LLM-as-judge grading.

::

    from osmosis_ai.eval import run_eval

    run = run_eval("configs/eval/multiply.toml", model="mock", limit=5)
    print(run.status, run.mean_reward, run.run_dir)
    for row in run.rows:  # one RowRecord per finished work item
        print(row.source_row_index, row.run_index, row.status, row.reward, row.error_type)

``osmosis eval run`` renders exactly this (progress and summary); it needs the ``eval`` extra
(``pip install 'osmosis-ai[eval]'``), the judge needs the ``openai`` client
(``pip install 'osmosis-ai[rubric]'``). Guide: ``docs/eval-library.md``.

Names resolve on first use so that ``import osmosis_ai.eval`` stays cheap. This table is the
public surface; everything under ``osmosis_ai.eval._impl`` (the private wing) is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai._lazy import lazy_exports

_EXPORTS = {
    # local evaluation (run_eval: what `osmosis eval run` renders)
    "run_eval": "osmosis_ai.eval._impl.api",
    "run_eval_async": "osmosis_ai.eval._impl.api",
    "EvalOptions": "osmosis_ai.eval._impl.plan.options",
    "EvalOptionsDict": "osmosis_ai.eval._impl.plan.options",
    "EvalRun": "osmosis_ai.eval._impl.results.run",
    "RunFigures": "osmosis_ai.eval._impl.results.metrics",
    "RowRecord": "osmosis_ai.eval._impl.run_dir.records",
    "read_index": "osmosis_ai.eval._impl.run_dir.records",
    "runs_frame": "osmosis_ai.eval._impl.results.frame",
    "EvalProgress": "osmosis_ai.eval._impl.progress",
    "EvalUpdate": "osmosis_ai.eval._impl.progress",
    "CostEstimate": "osmosis_ai.eval._impl.cost.budget",
    "EvalPlanError": "osmosis_ai.eval._impl.plan.source",
    "EvalRunFailed": "osmosis_ai.eval._impl.errors",
    "EvalDiskFullError": "osmosis_ai.eval._impl.errors",
    "EvalExtraMissingError": "osmosis_ai.eval._impl.errors",
    "UpstreamRejected": "osmosis_ai.eval._impl.errors",
    "ManifestError": "osmosis_ai.eval._impl.run_dir.manifest",
    "ManifestMismatchError": "osmosis_ai.eval._impl.run_dir.manifest",
    "RunLayoutError": "osmosis_ai.eval._impl.run_dir.layout",
    # after a run: regrade its samples, curate its rows, export its transcripts, tripwires
    "regrade_run": "osmosis_ai.eval._impl.regrade",
    "regrade_run_async": "osmosis_ai.eval._impl.regrade",
    "RegradeOptions": "osmosis_ai.eval._impl.regrade",
    "RegradeResult": "osmosis_ai.eval._impl.regrade",
    "RegradeError": "osmosis_ai.eval._impl.regrade_grader",
    "TRIPWIRES": "osmosis_ai.eval._impl.results.tripwires",
    "CurateOptions": "osmosis_ai.eval._impl.results.curate",
    "CurationError": "osmosis_ai.eval._impl.results.curate",
    "CurationResult": "osmosis_ai.eval._impl.results.curate",
    "curate_run": "osmosis_ai.eval._impl.results.curate",
    "parse_band": "osmosis_ai.eval._impl.results.curate",
    "holdout_size": "osmosis_ai.eval._impl.results.curate",
    "ExportError": "osmosis_ai.eval._impl.report.export",
    "ExportFilter": "osmosis_ai.eval._impl.report.export",
    "ExportRecord": "osmosis_ai.eval._impl.report.export",
    "export_records": "osmosis_ai.eval._impl.report.export",
    "read_export": "osmosis_ai.eval._impl.report.export",
    "write_export": "osmosis_ai.eval._impl.report.export",
    # benchmarks run locally (osmosis benchmark run) and their leaderboard
    "run_benchmark": "osmosis_ai.eval._impl.benchmark",
    "BenchmarkRun": "osmosis_ai.eval._impl.benchmark",
    "BenchmarkRunError": "osmosis_ai.eval._impl.benchmark",
    "build_leaderboard": "osmosis_ai.eval._impl.results.leaderboard",
    "pass_at_k": "osmosis_ai.eval._impl.results.leaderboard",
    "AgentScore": "osmosis_ai.eval._impl.results.leaderboard",
    "TaskOutcome": "osmosis_ai.eval._impl.results.leaderboard",
    # dataset files and row selections, as run_eval reads them
    "DatasetRow": "osmosis_ai.eval._impl.plan.dataset",
    "DatasetError": "osmosis_ai.eval._impl.plan.dataset",
    "iter_dataset": "osmosis_ai.eval._impl.plan.dataset",
    "load_dataset": "osmosis_ai.eval._impl.plan.dataset",
    "missing_label_warning": "osmosis_ai.eval._impl.plan.dataset",
    "SelectionError": "osmosis_ai.eval._impl.plan.selection",
    "parse_rows_spec": "osmosis_ai.eval._impl.plan.selection",
    # training safety: is a rollout append-only (safe for token-in/token-out training)?
    "check_append_only": "osmosis_ai.eval._impl.results.training_safety",
    "AppendOnlyVerdict": "osmosis_ai.eval._impl.results.training_safety",
    "Divergence": "osmosis_ai.eval._impl.results.training_safety",
    "TokenMismatch": "osmosis_ai.eval._impl.results.training_safety",
    "expand_calls": "osmosis_ai.eval._impl.proxy.calls",
    "describe_training_safety": "osmosis_ai.eval._impl.results.safety_summary",
    # LLM-as-judge (osmosis_ai.eval.judge; 0.3's API in osmosis_ai.eval.rubric)
    "Judge": "osmosis_ai.eval.judge.judge",
    "JudgeUsage": "osmosis_ai.judge_usage",
    "RubricResult": "osmosis_ai.eval.judge.result",
    "evaluate_rubric": "osmosis_ai.eval.rubric.engine",
    "evaluate_rubric_sync": "osmosis_ai.eval.rubric.engine",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.api import run_eval, run_eval_async
    from osmosis_ai.eval._impl.benchmark import BenchmarkRun, BenchmarkRunError, run_benchmark
    from osmosis_ai.eval._impl.cost.budget import CostEstimate
    from osmosis_ai.eval._impl.errors import (
        EvalDiskFullError,
        EvalExtraMissingError,
        EvalRunFailed,
        UpstreamRejected,
    )
    from osmosis_ai.eval._impl.plan.dataset import (
        DatasetError,
        DatasetRow,
        iter_dataset,
        load_dataset,
        missing_label_warning,
    )
    from osmosis_ai.eval._impl.plan.options import EvalOptions, EvalOptionsDict
    from osmosis_ai.eval._impl.plan.selection import SelectionError, parse_rows_spec
    from osmosis_ai.eval._impl.plan.source import EvalPlanError
    from osmosis_ai.eval._impl.progress import EvalProgress, EvalUpdate
    from osmosis_ai.eval._impl.proxy.calls import expand_calls
    from osmosis_ai.eval._impl.regrade import (
        RegradeOptions,
        RegradeResult,
        regrade_run,
        regrade_run_async,
    )
    from osmosis_ai.eval._impl.regrade_grader import RegradeError
    from osmosis_ai.eval._impl.report.export import (
        ExportError,
        ExportFilter,
        ExportRecord,
        export_records,
        read_export,
        write_export,
    )
    from osmosis_ai.eval._impl.results.curate import (
        CurateOptions,
        CurationError,
        CurationResult,
        curate_run,
        holdout_size,
        parse_band,
    )
    from osmosis_ai.eval._impl.results.frame import runs_frame
    from osmosis_ai.eval._impl.results.leaderboard import (
        AgentScore,
        TaskOutcome,
        build_leaderboard,
        pass_at_k,
    )
    from osmosis_ai.eval._impl.results.metrics import RunFigures
    from osmosis_ai.eval._impl.results.run import EvalRun
    from osmosis_ai.eval._impl.results.safety_summary import describe_training_safety
    from osmosis_ai.eval._impl.results.training_safety import (
        AppendOnlyVerdict,
        Divergence,
        TokenMismatch,
        check_append_only,
    )
    from osmosis_ai.eval._impl.results.tripwires import TRIPWIRES
    from osmosis_ai.eval._impl.run_dir.layout import RunLayoutError
    from osmosis_ai.eval._impl.run_dir.manifest import ManifestError, ManifestMismatchError
    from osmosis_ai.eval._impl.run_dir.records import RowRecord, read_index
    from osmosis_ai.eval.judge.judge import Judge
    from osmosis_ai.eval.judge.result import RubricResult
    from osmosis_ai.eval.rubric.engine import evaluate_rubric, evaluate_rubric_sync
    from osmosis_ai.judge_usage import JudgeUsage

__all__ = [
    "TRIPWIRES",
    "AgentScore",
    "AppendOnlyVerdict",
    "BenchmarkRun",
    "BenchmarkRunError",
    "CostEstimate",
    "CurateOptions",
    "CurationError",
    "CurationResult",
    "DatasetError",
    "DatasetRow",
    "Divergence",
    "EvalDiskFullError",
    "EvalExtraMissingError",
    "EvalOptions",
    "EvalOptionsDict",
    "EvalPlanError",
    "EvalProgress",
    "EvalRun",
    "EvalRunFailed",
    "EvalUpdate",
    "ExportError",
    "ExportFilter",
    "ExportRecord",
    "Judge",
    "JudgeUsage",
    "ManifestError",
    "ManifestMismatchError",
    "RegradeError",
    "RegradeOptions",
    "RegradeResult",
    "RowRecord",
    "RubricResult",
    "RunFigures",
    "RunLayoutError",
    "SelectionError",
    "TaskOutcome",
    "TokenMismatch",
    "UpstreamRejected",
    "build_leaderboard",
    "check_append_only",
    "curate_run",
    "describe_training_safety",
    "evaluate_rubric",
    "evaluate_rubric_sync",
    "expand_calls",
    "export_records",
    "holdout_size",
    "iter_dataset",
    "load_dataset",
    "missing_label_warning",
    "parse_band",
    "parse_rows_spec",
    "pass_at_k",
    "read_export",
    "read_index",
    "regrade_run",
    "regrade_run_async",
    "run_benchmark",
    "run_eval",
    "run_eval_async",
    "runs_frame",
    "write_export",
]
