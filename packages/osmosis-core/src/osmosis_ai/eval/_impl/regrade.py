""":func:`regrade_run`: re-run only the grader on a finished run's saved samples.

Why: after a grader change (a fixed parser, a stricter rubric, another judge) the policy need
not run again: every sample is in the run's trajectories. The regrade rebuilds each graded
sample from its trajectory (the chat messages, the row's label and metadata exactly as the
rollout got them), runs the new grader through the engine's grader phase (same reward rules,
timeout, judge-usage accounting) and writes a **new run** next to the source, linked to it by
``manifest.json["regraded_from"]``, so ``osmosis eval compare SOURCE NEW`` shows what flipped.

* No policy call is made; rows that failed before grading (the workflow crashed, timed out,
  left no sample) are copied as they were: there is nothing to grade.
* The regraded sample starts with the source sample's ``extra_fields`` (tool errors) but no
  metrics: the new run's ``metrics`` per row are exactly what the new grader set.
* LLM-judge calls go through the on-disk judge cache (:mod:`osmosis_ai.eval.judge.cache`,
  content-addressed by judge model, prompt and settings): ``$OSMOSIS_JUDGE_CACHE``, else
  ``<osmosis home>/judge-cache``; a second regrade with the same judge costs nothing.
* The grader is ``grader="module:Class"`` (or ``path/to/file.py:Class``; the module is found
  in the source run's rollout folder, then the current folder, and reloaded when this process
  imported it before, so an edited grader is the one that runs), else the grader of the rollout
  an eval config (``config=``) names, else the source run's own rollout's grader (its
  entrypoint imported, the run's ``[env]`` applied while importing and grading).
* Trajectories are the source's (hard-linked, else copied): the transcript did not change; the
  new reward, metrics and explanation are the new run's ``index.jsonl``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from osmosis_ai.eval._impl.plan.options import PathLike
from osmosis_ai.eval._impl.regrade_grader import (
    RegradeError,
    applied_env,
    judge_cache,
    resolve_grader,
)
from osmosis_ai.eval._impl.report.transcript import sample_messages
from osmosis_ai.eval._impl.results.metrics import ItemResult, RunFigures, compute_metrics
from osmosis_ai.eval._impl.run_dir.records import RowRecord

if TYPE_CHECKING:
    from typing import TypedDict

    from osmosis_ai.rollout.grader import Grader

    class RegradeOptionsDict(TypedDict, total=False):
        name: str
        grader: str | type[Grader] | None
        grader_config: Any
        config: PathLike | None
        output_dir: PathLike | None
        grader_timeout_sec: float | None
        max_concurrency: int
        judge_cache: PathLike | bool
        fresh: bool


#: Error types of a failure that happened while grading (the sample exists: regrade it).
_GRADING_FAILURES = frozenset({"judge_error", "not_graded"})


@dataclass(frozen=True, slots=True)
class RegradeOptions:
    """How to regrade a run (:func:`regrade_run`)."""

    #: The new run's name (``--name``); required.
    name: str = ""
    #: ``"module:Class"`` / ``"path/to/file.py:Class"`` or a :class:`Grader` subclass;
    #: ``None``: ``config``'s rollout's grader, else the source run's rollout's.
    grader: str | type[Grader] | None = None
    #: The config the grader is built with (a ``GraderConfig``), when ``grader`` is a class.
    grader_config: Any = None
    #: An eval config whose rollout's grader regrades (``--config``).
    config: PathLike | None = None
    #: Where the new run goes (default: next to the source run).
    output_dir: PathLike | None = None
    #: Per-sample grader deadline (default: the source run's ``grader_timeout_s``).
    grader_timeout_sec: float | None = None
    #: Samples graded at once (judge graders wait on the network).
    max_concurrency: int = 16
    #: The judge verdict cache: ``True`` (``$OSMOSIS_JUDGE_CACHE`` or ``<home>/judge-cache``),
    #: a directory, or ``False`` (off).
    judge_cache: PathLike | bool = True
    #: Archive an existing run of the same name first (else it is refused).
    fresh: bool = False


@dataclass(slots=True)
class RegradeResult:
    """What :func:`regrade_run` wrote: the new run, its rows and figures, and the counts."""

    run_name: str
    run_dir: Path
    source_dir: Path
    grader: str
    rows: list[RowRecord]
    metrics: dict[str, Any]
    #: Samples the grader ran on; rows copied unchanged (failed before grading, no trajectory).
    regraded: int
    copied: int
    #: Rows whose reward (or status) differs from the source's.
    changed: int
    duration_ms: float
    judge_calls: int = 0
    judge_cached_calls: int = 0
    source_rows: list[RowRecord] = field(default_factory=list)

    @property
    def figures(self) -> RunFigures:
        return RunFigures.of(self.metrics)


def regrade_run(
    source: PathLike, options: RegradeOptions | None = None, **kwargs: Unpack[RegradeOptionsDict]
) -> RegradeResult:
    """Regrade the run at ``source`` (a run folder) into a new run; see the module docstring.

    ``options`` or the same names as keywords (``regrade_run(path, name="v2",
    grader="graders:Strict")``). Raises :class:`RegradeError` for a bad request.
    """
    return asyncio.run(regrade_run_async(source, options, **kwargs))


async def regrade_run_async(
    source: PathLike, options: RegradeOptions | None = None, **kwargs: Unpack[RegradeOptionsDict]
) -> RegradeResult:
    """:func:`regrade_run` in a running event loop."""
    opts = replace(options or RegradeOptions(), **kwargs)  # type: ignore[arg-type]
    started = time.perf_counter()
    job = await asyncio.to_thread(_prepare, Path(source), opts)
    with _run_lock(job), applied_env(job.env), judge_cache(opts.judge_cache):
        build, grader_label, grader_file = await asyncio.to_thread(
            resolve_grader, opts, job.manifest, job.src
        )
        await asyncio.to_thread(_create_run_dir, job, opts.fresh)
        graded = await _grade_all(job, build, opts.max_concurrency)
    return await asyncio.to_thread(_finish, job, graded, grader_label, grader_file, started)


@dataclass(slots=True)
class _Job:
    src: Path
    name: str
    output_root: Path
    header: Any
    manifest: dict[str, Any]
    inputs: dict[str, Any]
    env: dict[str, str]
    grader_timeout: float | None
    source_rows: list[RowRecord]

    @property
    def run_dir(self) -> Path:
        return self.output_root / self.name


def _prepare(src: Path, opts: RegradeOptions) -> _Job:
    from osmosis_ai.eval._impl.report.run_data import RunNotFoundError, read_header
    from osmosis_ai.eval._impl.run_dir.layout import RunLayoutError, validate_run_name

    try:
        header = read_header(src)
    except RunNotFoundError as exc:
        raise RegradeError(str(exc)) from exc
    if not opts.name:
        raise RegradeError("give the new run a name (--name NEW): the source run is never changed")
    try:
        name = validate_run_name(opts.name)
    except RunLayoutError as exc:
        raise RegradeError(str(exc)) from exc
    output_root = Path(opts.output_dir) if opts.output_dir is not None else src.parent
    if (output_root / name).resolve() == src.resolve():
        raise RegradeError(f"--name {name!r} is the source run itself; choose a new name")
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    inputs = manifest.get("inputs") if isinstance(manifest.get("inputs"), dict) else {}
    timeouts = inputs.get("timeouts") or {}
    return _Job(
        src=src,
        name=name,
        output_root=output_root,
        header=header,
        manifest=manifest,
        inputs=inputs,
        env={str(k): str(v) for k, v in (inputs.get("env") or {}).items()},
        grader_timeout=opts.grader_timeout_sec or timeouts.get("grader_timeout_s"),
        source_rows=_source_rows(src),
    )


@contextlib.contextmanager
def _run_lock(job: _Job) -> Iterator[None]:
    """The new run's lock (``eval run`` of the same name excludes it)."""
    from osmosis_ai.eval._impl.run_dir.layout import RunLock

    job.output_root.mkdir(parents=True, exist_ok=True)
    with RunLock(job.output_root, job.name):
        yield


def _create_run_dir(job: _Job, fresh: bool) -> None:
    from osmosis_ai._util.redaction import redact_files_under
    from osmosis_ai.eval._impl.run_dir.layout import RunPaths, archive_run

    if job.run_dir.exists():
        if not fresh:
            raise RegradeError(
                f"run {job.name!r} already exists in {job.output_root}; choose another --name "
                "or pass --fresh to archive it"
            )
        archive_run(job.run_dir)
    RunPaths(job.run_dir).create()
    redact_files_under(job.run_dir)  # every file written under the new run, as eval run does


def _finish(
    job: _Job,
    graded: list[tuple[RowRecord, bool]],
    grader_label: str,
    grader_file: Path | None,
    started: float,
) -> RegradeResult:
    from osmosis_ai.eval._impl.run_dir.layout import RunPaths

    paths = RunPaths(job.run_dir)
    rows = [row for row, _ in graded]
    regraded = sum(1 for _, ran in graded if ran)
    _link_trajectories(job.src, paths.root, rows)
    summary = _summary(job.header, rows)
    link = {
        "run": job.header.name,
        "path": str(job.src.resolve()),
        "local_run_id": job.header.run_id,
        "grader": grader_label,
        "grader_sha256": _file_sha256(grader_file) if grader_file else None,
        "regraded": regraded,
        "copied": len(rows) - regraded,
    }
    _write_run(paths, job.manifest, job.name, rows, summary, job.header, link, started)
    before = {(r.row_index, r.run_index): r for r in job.source_rows}
    changed = sum(
        1
        for r in rows
        if (old := before.get((r.row_index, r.run_index))) is None
        or (old.status, old.reward) != (r.status, r.reward)
    )
    judge = summary.get("judge") or {}
    return RegradeResult(
        run_name=job.name,
        run_dir=paths.root,
        source_dir=job.src,
        grader=grader_label,
        rows=rows,
        metrics=summary,
        regraded=regraded,
        copied=len(rows) - regraded,
        changed=changed,
        duration_ms=(time.perf_counter() - started) * 1000,
        judge_calls=int(judge.get("calls") or 0),
        judge_cached_calls=int(judge.get("cached_calls") or 0),
        source_rows=job.source_rows,
    )


def _source_rows(src: Path) -> list[RowRecord]:
    from osmosis_ai.eval._impl.run_dir.records import read_index

    if not (src / "index.jsonl").is_file():
        raise RegradeError(
            f"{src} has no index.jsonl: the run never finished a session; finish or resume it "
            "(osmosis eval run --name ...) before regrading"
        )
    return read_index(src)


def _regradable(row: RowRecord) -> bool:
    if row.trajectory_filename is None:
        return False
    if row.status in ("success", "skipped"):
        return True
    return row.failed_phase == "grader" or row.error_type in _GRADING_FAILURES


#: Trajectories read per thread hand-off while grading, and chunks read at once.
_READ_CHUNK = 256
_READ_THREADS = 4


def _read_documents(src: Path, rows: list[RowRecord]) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    root = str(src)
    for row in rows:
        try:
            with open(f"{root}/{row.trajectory_filename}", "rb") as fh:
                document = json.loads(fh.read())
        except (OSError, ValueError):
            document = None
        out.append(document if isinstance(document, dict) else None)
    return out


async def _grade_all(job: _Job, build: Any, concurrency: int) -> list[tuple[RowRecord, bool]]:
    """Every row, regraded where it can be (trajectories read in chunks on a thread)."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    out: list[tuple[RowRecord, bool]] = [(row, False) for row in job.source_rows]
    todo = [i for i, row in enumerate(job.source_rows) if _regradable(row)]

    async def one(index: int, document: dict[str, Any] | None) -> None:
        row = job.source_rows[index]
        if document is None:
            return
        async with semaphore:
            out[index] = (await _grade_row(row, document, build, job.grader_timeout), True)

    chunks = [todo[at : at + _READ_CHUNK] for at in range(0, len(todo), _READ_CHUNK)]
    for at in range(0, len(chunks), _READ_THREADS):
        # A few chunks read at once: on a busy disk each open waits, and the waits overlap.
        window = chunks[at : at + _READ_THREADS]
        read = await asyncio.gather(
            *(
                asyncio.to_thread(_read_documents, job.src, [job.source_rows[i] for i in chunk])
                for chunk in window
            )
        )
        for chunk, documents in zip(window, read, strict=True):
            await asyncio.gather(*(one(i, d) for i, d in zip(chunk, documents, strict=True)))
    return out


async def _grade_row(
    row: RowRecord, document: dict[str, Any], build: Any, grader_timeout: float | None
) -> RowRecord:
    from osmosis_ai.judge_usage import judge_usage_from_metrics
    from osmosis_ai.rollout._execution import run_grader_phase
    from osmosis_ai.rollout.types.sample import RolloutSample

    osmosis = (document.get("extra") or {}).get("osmosis") or {}
    label = osmosis.get("label", row.label)
    if label is not None and not isinstance(label, str):
        label = json.dumps(label)
    metadata = osmosis.get("request_metadata")
    extra = dict(osmosis.get("sample_extra_fields") or {})
    extra.pop("explanation", None)
    sample = RolloutSample(messages=sample_messages(document), label=label, extra_fields=extra)
    result = await run_grader_phase(
        build,
        workflow_sample=sample,
        label=label,
        metadata=metadata if isinstance(metadata, dict) else None,
        artifacts_dir=None,
        timeout=grader_timeout,
    )
    graded = result.sample
    metrics = dict(graded.metrics) if graded is not None else {}
    judge = judge_usage_from_metrics(metrics)
    fields = graded.extra_fields if graded is not None else {}
    explanation = fields.get("explanation") if isinstance(fields, dict) else None
    common: dict[str, Any] = {
        "label": label,
        "metrics": {k: v for k, v in metrics.items() if not k.startswith("judge_")} or None,
        "judge": judge or None,
        "explanation": explanation if isinstance(explanation, str) and explanation else None,
        "resumed": False,
        "traceback": None,
    }
    if str(result.status) == "success" and graded is not None:
        if graded.remove_sample:
            new = replace(row, status="skipped", reward=None, error_type=None,
                          error_message=None, failed_phase=None, **common)  # fmt: skip
        else:
            new = replace(row, status="success", reward=graded.reward, error_type=None,
                          error_message=None, failed_phase=None, **common)  # fmt: skip
    else:
        category = result.err_category.value if result.err_category is not None else None
        if result.extra_fields and isinstance(result.extra_fields.get("traceback"), str):
            common["traceback"] = result.extra_fields["traceback"]
        new = replace(row, status="failed", reward=None,
                      error_type="judge_error" if judge and judge.get("failed_calls")
                      else (category or "rollout_failed"),
                      error_message=result.err_message, failed_phase="grader", **common)  # fmt: skip
    return new


def _link_trajectories(src: Path, dst: Path, rows: list[RowRecord]) -> None:
    """The source's trajectory files in the new run (hard links; copies across devices)."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    names = [r.trajectory_filename for r in rows if r.trajectory_filename is not None]
    for folder in {(dst / name).parent for name in names}:
        folder.mkdir(parents=True, exist_ok=True)

    def link(name: str) -> None:
        source, target = f"{src}/{name}", f"{dst}/{name}"
        try:
            os.link(source, target)
        except FileNotFoundError:
            return  # the source run lost this file: the row keeps its record, no transcript
        except OSError:
            with contextlib.suppress(OSError):
                shutil.copyfile(source, target)

    with ThreadPoolExecutor(max_workers=_READ_THREADS) as pool:
        list(pool.map(link, names, chunksize=_READ_CHUNK))


def _summary(header: Any, rows: list[RowRecord]) -> dict[str, Any]:
    from osmosis_ai.eval._impl.results import tripwires

    summary = compute_metrics(
        (ItemResult.of_row(r) for r in rows),
        samples_per_row=header.n,
        pass_threshold=header.pass_threshold,
        total_work_items=header.summary.get("total_work_items", len(rows)),
        metric_thresholds={
            key: float(figures["threshold"])
            for key, figures in (header.summary.get("grader_metrics") or {}).items()
            if isinstance(figures, Mapping) and isinstance(figures.get("threshold"), int | float)
        },
    )
    summary["tripwires"] = tripwires.summarize(rows, {})
    return summary


def _file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _write_run(
    paths: Any,
    source_manifest: Mapping[str, Any],
    name: str,
    rows: list[RowRecord],
    summary: dict[str, Any],
    header: Any,
    link: dict[str, Any],
    started: float,
) -> None:
    from osmosis_ai.atomic_file import write_atomic
    from osmosis_ai.eval._impl.run_dir.manifest import write_json_atomic
    from osmosis_ai.eval._impl.run_dir.records import write_index

    now = datetime.now(UTC).isoformat()
    manifest = {
        **{k: v for k, v in source_manifest.items() if k not in ("code_revisions",)},
        "local_run_id": uuid.uuid4().hex,
        "run_name": name,
        "created_at": now,
        # An input group of its own: `eval run --name NEW` with the source's inputs is refused
        # (changed: regraded_from) instead of resuming a run no rollout server made.
        "inputs": {
            **(source_manifest.get("inputs") or {}),
            "regraded_from": {"run": link["run"], "grader": link["grader"]},
        },
        "regraded_from": link,
    }
    write_json_atomic(paths.manifest, manifest)
    journal_keys = ("row_index", "run_index", "source_row_index", "rollout_id", "status",
                    "reward", "tokens", "duration_ms", "error_type", "error_message", "attempt",
                    "judge", "cost", "training_safety", "policy_calls")  # fmt: skip
    write_atomic(
        paths.journal,
        "".join(
            json.dumps({k: row.to_json().get(k) for k in journal_keys}, allow_nan=False) + "\n"
            for row in rows
        ),
    )
    write_index(paths.index, rows)
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("success", "failed", "skipped")}
    write_json_atomic(
        paths.metrics,
        {
            "eval_run": {
                "id": manifest["local_run_id"],
                "status": "partial" if counts["failed"] else "success",
                "name": name,
                "dataset_name": header.dataset_file,
                "model_name": header.model,
                "rollout_name": header.rollout,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                "started_at": now,
                "completed_at": datetime.now(UTC).isoformat(),
                "pending": header.pending,
                "halt_reason": None,
                "stop_code": None,
                "command_line": _command_line(),
                "versions": header.versions,
                "regraded_from": link,
            },
            "summary": summary,
        },
    )


def _command_line() -> str:
    """This process's command line, its credentials masked (the process redactor)."""
    import shlex

    from osmosis_ai._util.redaction import process_redactor

    return process_redactor()(shlex.join(sys.argv))


__all__ = [
    "RegradeError",
    "RegradeOptions",
    "RegradeResult",
    "regrade_run",
    "regrade_run_async",
]
