"""Grade many records with one judge: what ``osmosis eval rubric`` runs.

Every ``(record, run)`` pair is one judge call; all run concurrently under the judge's
concurrency bound. A call the judge could not answer (a ``JudgeError`` after retries) is a
``judge_error``: it is listed with the record, counted in ``judge_errors``, and kept out of
every statistic (a failed judge is never a score of 0). Statistics are over the scores that
exist; with none they are ``None``.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osmosis_ai.errors import JudgeError
from osmosis_ai.eval.judge.judge import Judge
from osmosis_ai.eval.judge.result import RubricResult
from osmosis_ai.eval.rubric.dataset import RubricRecord
from osmosis_ai.judge_usage import JudgeUsage, collect_judge_usage

type ProgressCallback = Callable[[int, int, int], None]
"""Called as ``(done, total, judge_errors)`` after every call."""


def score_statistics(scores: list[float]) -> dict[str, float | None]:
    """average, variance and stdev (population), min, max; ``None`` without scores."""
    if not scores:
        return {"average": None, "variance": None, "stdev": None, "min": None, "max": None}
    return {
        "average": statistics.fmean(scores),
        "variance": statistics.pvariance(scores),
        "stdev": statistics.pstdev(scores),
        "min": min(scores),
        "max": max(scores),
    }


@dataclass
class RecordResult:
    index: int
    label: str
    scores: list[float] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_types: list[str] = field(default_factory=list)

    def to_payload(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "label": self.label,
            "scores": self.scores,
            "explanations": self.explanations,
            "errors": self.errors,
            "error_types": self.error_types,
            "statistics": score_statistics(self.scores),
        }


@dataclass
class RubricReport:
    model: str
    rubric: str
    data_path: Path
    number: int
    records: list[RecordResult]
    usage: JudgeUsage

    @property
    def scores(self) -> list[float]:
        return [score for record in self.records for score in record.scores]

    @property
    def judge_errors(self) -> int:
        return sum(t == "judge_error" for r in self.records for t in r.error_types)

    @property
    def error_count(self) -> int:
        return sum(len(r.errors) for r in self.records)

    def summary(self) -> dict[str, Any]:
        """The envelope's resource (without the per-record list)."""
        return {
            "model": self.model,
            "data_path": str(self.data_path),
            "number": self.number,
            "record_count": len(self.records),
            "total_calls": len(self.records) * self.number,
            "graded": len(self.scores),
            "error_count": self.error_count,
            "judge_errors": self.judge_errors,
            "statistics": score_statistics(self.scores),
            "judge": self.usage.as_dict(),
        }


async def _one(judge: Judge, record: RubricRecord, rubric: str) -> RubricResult | Exception:
    try:
        return await judge.score(
            solution_str=record.solution_str,
            rubric=rubric,
            ground_truth=record.ground_truth,
            original_input=record.original_input,
            metadata=record.metadata,
        )
    except (JudgeError, TypeError, ValueError) as exc:
        return exc


async def grade_records(
    records: list[RubricRecord],
    *,
    rubric: str,
    judge: Judge,
    number: int = 1,
    data_path: Path = Path(),
    on_progress: ProgressCallback | None = None,
) -> RubricReport:
    """Score every record ``number`` times; see the module docstring."""
    if number < 1:
        raise ValueError("number must be at least 1")
    results = [RecordResult(index=i + 1, label=r.label(i + 1)) for i, r in enumerate(records)]
    total = len(records) * number
    done = 0
    failed = 0

    async def run(position: int) -> None:
        nonlocal done, failed
        outcome = await _one(judge, records[position], rubric)
        target = results[position]
        if isinstance(outcome, RubricResult):
            target.scores.append(outcome.score)
            target.explanations.append(outcome.explanation)
        else:
            is_judge = isinstance(outcome, JudgeError)
            failed += is_judge
            target.errors.append(str(outcome))
            target.error_types.append("judge_error" if is_judge else "validation_error")
        done += 1
        if on_progress is not None:
            on_progress(done, total, failed)

    with collect_judge_usage() as usage:
        await asyncio.gather(*(run(i) for i in range(len(records)) for _ in range(number)))
    return RubricReport(
        model=judge.model,
        rubric=rubric,
        data_path=data_path,
        number=number,
        records=results,
        usage=usage,
    )
