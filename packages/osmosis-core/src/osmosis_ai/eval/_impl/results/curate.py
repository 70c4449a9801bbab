"""Curating a dataset by difficulty from an eval run (``osmosis dataset curate``).

Why: GRPO learns only from groups whose samples disagree. A row every sample solves (or none
does) gives every sample the same advantage, zero, and costs rollouts for nothing. An eval
run with ``n`` samples per row measures each row's pass rate; curation keeps the rows whose
pass rate lies in a band (``0.1:0.9``), drops duplicates, and writes the dataset rows as they
were (ready for ``osmosis dataset upload``) with a provenance sidecar.

Definitions (also docs/guides/after-an-eval.md):

* a row's figures are over its **graded** samples (failed samples are left out, as the
  platform leaves failed rollouts out of the update): ``n`` graded, ``pass_rate`` = passed /
  n at the run's pass threshold, ``reward_variance`` = the population variance of the rewards;
* a row is kept when ``n >= min_n`` and ``low <= pass_rate <= high``;
* duplicates: rows whose rollout input (the messages it starts from, the label, the metadata)
  equals an earlier kept row's are dropped;
* a group **carries signal** when its rewards are not all equal (variance > 0); the share is
  over rows with at least two graded samples, before (every row) and after (the kept rows);
  the *expected* share at training group size ``G`` is the mean over rows of
  ``1 - p^G - (1 - p)^G`` (the chance that G samples at pass rate p are not all alike);
* held-out split (the platform's rule): ``min(floor(0.2 x rows), 10,000)`` rows are held out
  for validation; ``holdout`` writes that many (a seeded random choice) to its own file;
* rollout cost per training step: the kept rows' mean cost per sample (the run's priced
  cost, policy and judge) x ``G`` x the prompts per step.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.run_dir.records import RowRecord

#: The platform holds out this share of a training dataset for validation, rounded down...
HOLDOUT_SHARE = 0.2
#: ...and at most this many rows.
HOLDOUT_CAP = 10_000


class CurationError(EvalError, ValueError):
    """The curation cannot run as asked; the message says what to fix."""


def parse_band(text: str) -> tuple[float, float]:
    """``"0.1:0.9"`` -> ``(0.1, 0.9)``; both within [0, 1], low <= high."""
    low, sep, high = text.partition(":")
    try:
        band = (float(low), float(high)) if sep else None
    except ValueError:
        band = None
    if band is None or not (0.0 <= band[0] <= band[1] <= 1.0):
        raise CurationError(
            f"--band {text!r} is not LOW:HIGH with 0 <= LOW <= HIGH <= 1 (e.g. --band 0.1:0.9)"
        )
    return band


def holdout_size(rows: int) -> int:
    """The rows the platform holds out of a ``rows``-row dataset: 20 %, rounded down, at most
    10,000."""
    return min(math.floor(rows * HOLDOUT_SHARE), HOLDOUT_CAP)


@dataclass(frozen=True, slots=True)
class CurateOptions:
    """How to curate (:func:`curate_run`)."""

    band: tuple[float, float] = (0.1, 0.9)
    #: Rows with fewer graded samples are dropped (their pass rate is too coarse).
    min_n: int = 1
    #: Write the held-out rows here (the rest go to the output file).
    holdout: Path | None = None
    seed: int = 0
    #: GRPO group size at training (default: the run's samples per row).
    group_size: int | None = None
    #: Prompts per training step (rollout batch size), for the cost per step.
    prompts_per_step: int = 1


@dataclass(frozen=True, slots=True)
class RowStats:
    """One dataset row's figures in the run."""

    source_row_index: int
    graded: int
    passed: int
    failed: int
    pass_rate: float | None
    reward_variance: float | None
    mean_cost_usd: float | None
    #: ``kept``, ``below_band``, ``above_band``, ``too_few_samples``, ``duplicate``, ``held_out``
    decision: str = ""

    @property
    def signal(self) -> bool:
        return self.reward_variance is not None and self.reward_variance > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "source_row_index": self.source_row_index,
            "graded": self.graded,
            "passed": self.passed,
            "failed": self.failed,
            "pass_rate": self.pass_rate,
            "reward_variance": self.reward_variance,
            "mean_cost_usd": self.mean_cost_usd,
            "decision": self.decision,
        }


@dataclass(slots=True)
class CurationResult:
    """What :func:`curate_run` decided and wrote."""

    output: Path
    provenance: Path
    holdout: Path | None
    rows: list[RowStats]
    kept: int
    held_out: int
    duplicates: int
    signal_share_before: float | None
    signal_share_after: float | None
    expected_signal_share_before: float | None
    expected_signal_share_after: float | None
    group_size: int
    prompts_per_step: int
    cost_per_step_usd: float | None
    #: Rows the platform would hold out of the output file, and train on.
    platform_holdout: int
    platform_train: int
    figures: dict[str, Any] = field(default_factory=dict)


def row_stats(rows: Iterable[RowRecord], pass_threshold: float) -> list[RowStats]:
    """Per dataset row (source row index) its graded samples' figures, in row order."""
    groups: dict[int, list[RowRecord]] = defaultdict(list)
    for row in rows:
        groups[row.source_row_index].append(row)
    out: list[RowStats] = []
    for source in sorted(groups):
        members = groups[source]
        rewards = [r.reward for r in members if r.status == "success" and r.reward is not None]
        costs = [r.cost_usd for r in members if r.status != "skipped"]
        priced = [c for c in costs if c is not None]
        out.append(
            RowStats(
                source_row_index=source,
                graded=len(rewards),
                passed=sum(1 for value in rewards if value >= pass_threshold),
                failed=sum(1 for r in members if r.status == "failed"),
                pass_rate=sum(1 for v in rewards if v >= pass_threshold) / len(rewards)
                if rewards
                else None,
                reward_variance=statistics.pvariance(rewards) if rewards else None,
                mean_cost_usd=statistics.fmean(priced)
                if priced and len(priced) == len(costs)
                else None,
            )
        )
    return out


def signal_share(stats: Iterable[RowStats]) -> float | None:
    """Share of groups (rows with >= 2 graded samples) whose rewards are not all equal."""
    groups = [s for s in stats if s.graded >= 2]
    return sum(1 for s in groups if s.signal) / len(groups) if groups else None


def expected_signal_share(stats: Iterable[RowStats], group_size: int) -> float | None:
    """Mean over rows of ``1 - p^G - (1-p)^G``: a group of G samples is not all alike."""
    rates = [s.pass_rate for s in stats if s.pass_rate is not None]
    if not rates or group_size < 2:
        return None
    return statistics.fmean(1 - p**group_size - (1 - p) ** group_size for p in rates)


def cost_per_step(stats: Iterable[RowStats], group_size: int, prompts: int) -> float | None:
    """The kept rows' mean cost per sample x group size x prompts per step (``None``: some
    row not priced)."""
    costs = [s.mean_cost_usd for s in stats]
    if not costs or any(c is None for c in costs):
        return None
    return statistics.fmean(c for c in costs if c is not None) * group_size * prompts


def _canonical(index: int, record: Mapping[str, Any]) -> str:
    """What makes two dataset rows the same rollout input: the messages the rollout starts
    from, the label and the metadata (other columns do not reach the rollout)."""
    from osmosis_ai.eval._impl.plan.dataset import normalize_row

    row = normalize_row(index, record)
    return json.dumps(
        [row.initial_messages, row.label, row.metadata],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )


def curate_run(run_dir: str | Path, output: str | Path, options: CurateOptions) -> CurationResult:
    """Curate the run at ``run_dir`` into ``output`` (JSONL) and ``<output>.provenance.json``."""
    from osmosis_ai.eval._impl.plan.dataset import DatasetError, file_sha256, raw_records
    from osmosis_ai.eval._impl.report.run_data import RunNotFoundError, load_run

    if options.min_n < 1:
        raise CurationError(f"--min-n must be at least 1, got {options.min_n}")
    if options.prompts_per_step < 1:
        raise CurationError(
            f"--prompts-per-step must be at least 1, got {options.prompts_per_step}"
        )
    root = Path(run_dir)
    try:
        data = load_run(root, transcripts=False)
    except RunNotFoundError as exc:
        raise CurationError(str(exc)) from exc
    header = data.header
    group_size = options.group_size or header.n
    if group_size < 1:
        raise CurationError(f"--group-size must be at least 1, got {group_size}")
    dataset = _dataset_path(root)
    if header.dataset_sha256 and file_sha256(dataset) != header.dataset_sha256:
        raise CurationError(
            f"{dataset} changed since run {header.name!r} read it (its sha256 differs): the "
            "run's pass rates describe other rows; rerun the eval on the current file"
        )
    try:
        records = list(raw_records(dataset))
    except DatasetError as exc:
        raise CurationError(str(exc)) from exc
    stats = row_stats(data.rows, header.pass_threshold)
    decided, kept, duplicates = _decide(stats, records, options)
    held: set[int] = set()
    if options.holdout is not None:
        count = holdout_size(len(kept))
        chosen = random.Random(options.seed).sample(range(len(kept)), count)
        held = {kept[i][0].source_row_index for i in chosen}
        decided = [
            _with_decision(s, "held_out") if s.source_row_index in held else s for s in decided
        ]
    train = [(s, r) for s, r in kept if s.source_row_index not in held]
    out = Path(output)
    _write_jsonl(out, [r for _, r in train])
    holdout_path = Path(options.holdout) if options.holdout is not None else None
    if holdout_path is not None:
        _write_jsonl(holdout_path, [r for s, r in kept if s.source_row_index in held])
    kept_stats = [s for s, _ in kept]
    result = CurationResult(
        output=out,
        provenance=out.with_name(out.name + ".provenance.json"),
        holdout=holdout_path,
        rows=decided,
        kept=len(train),
        held_out=len(held),
        duplicates=duplicates,
        signal_share_before=signal_share(stats),
        signal_share_after=signal_share(kept_stats),
        expected_signal_share_before=expected_signal_share(stats, group_size),
        expected_signal_share_after=expected_signal_share(kept_stats, group_size),
        group_size=group_size,
        prompts_per_step=options.prompts_per_step,
        cost_per_step_usd=cost_per_step(kept_stats, group_size, options.prompts_per_step),
        platform_holdout=holdout_size(len(train)),
        platform_train=len(train) - holdout_size(len(train)),
    )
    _write_provenance(result, header, dataset, options)
    return result


def _decide(
    stats: list[RowStats], records: list[Mapping[str, Any]], options: CurateOptions
) -> tuple[list[RowStats], list[tuple[RowStats, Mapping[str, Any]]], int]:
    """Each row's decision, the kept rows with their dataset records, the duplicates."""
    low, high = options.band
    decided: list[RowStats] = []
    seen: set[str] = set()
    kept: list[tuple[RowStats, Mapping[str, Any]]] = []
    duplicates = 0
    for stat in stats:
        if stat.graded < options.min_n or stat.pass_rate is None:
            decision = "too_few_samples"
        elif stat.pass_rate < low:
            decision = "below_band"
        elif stat.pass_rate > high:
            decision = "above_band"
        else:
            record = records[stat.source_row_index]
            key = _canonical(stat.source_row_index, record)
            if key in seen:
                decision = "duplicate"
                duplicates += 1
            else:
                seen.add(key)
                decision = "kept"
                kept.append((stat, record))
        decided.append(_with_decision(stat, decision))
    return decided, kept, duplicates


def _with_decision(stat: RowStats, decision: str) -> RowStats:
    from dataclasses import replace

    return replace(stat, decision=decision)


def _dataset_path(root: Path) -> Path:
    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CurationError(f"{root}/manifest.json is unreadable ({exc})") from exc
    path = ((manifest.get("provenance") or {}) if isinstance(manifest, dict) else {}).get(
        "dataset_path"
    )
    if not isinstance(path, str) or not Path(path).is_file():
        raise CurationError(
            f"the dataset run {root.name!r} read ({path}) is not there any more; curation "
            "writes that file's rows, so restore it (same bytes) first"
        )
    return Path(path)


def _write_jsonl(path: Path, records: list[Mapping[str, Any]]) -> None:
    from osmosis_ai.atomic_file import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(
        path,
        "".join(json.dumps(dict(r), ensure_ascii=False, default=str) + "\n" for r in records),
    )


def _write_provenance(
    result: CurationResult, header: Any, dataset: Path, options: CurateOptions
) -> None:
    from osmosis_ai.eval._impl.run_dir.manifest import write_json_atomic

    figures = {
        "kept": result.kept,
        "held_out": result.held_out,
        "duplicates": result.duplicates,
        "signal_share_before": result.signal_share_before,
        "signal_share_after": result.signal_share_after,
        "expected_signal_share_before": result.expected_signal_share_before,
        "expected_signal_share_after": result.expected_signal_share_after,
        "group_size": result.group_size,
        "prompts_per_step": result.prompts_per_step,
        "cost_per_step_usd": result.cost_per_step_usd,
        "platform_holdout": result.platform_holdout,
        "platform_train": result.platform_train,
    }
    result.figures = figures
    write_json_atomic(
        result.provenance,
        {
            "schema_version": 1,
            "created_at": datetime.now(UTC).isoformat(),
            "source_run": {
                "name": header.name,
                "path": str(header.path.resolve()),
                "local_run_id": header.run_id,
                "model": header.model,
                "rollout": header.rollout,
                "samples_per_row": header.n,
                "pass_threshold": header.pass_threshold,
            },
            "dataset": {"path": str(dataset), "sha256": header.dataset_sha256},
            "options": {
                "band": list(options.band),
                "min_n": options.min_n,
                "seed": options.seed,
                "holdout": str(options.holdout) if options.holdout else None,
            },
            "output": {
                "path": str(result.output),
                "sha256": hashlib.sha256(result.output.read_bytes()).hexdigest(),
            },
            "figures": figures,
            "rows": [s.to_json() for s in result.rows],
        },
    )


__all__ = [
    "HOLDOUT_CAP",
    "HOLDOUT_SHARE",
    "CurateOptions",
    "CurationError",
    "CurationResult",
    "RowStats",
    "cost_per_step",
    "curate_run",
    "expected_signal_share",
    "holdout_size",
    "parse_band",
    "row_stats",
    "signal_share",
]
