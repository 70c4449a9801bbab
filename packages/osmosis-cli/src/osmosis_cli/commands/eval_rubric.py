"""``osmosis eval rubric``: grade a JSONL file of conversations with an LLM judge (0.3's flags).

A thin shell over :mod:`osmosis_ai.eval.rubric` (records, batch grading, statistics) and
:class:`osmosis_ai.eval.judge.Judge` (provider, retries, concurrency, cache). Judge failures
after retries are ``judge_error`` records, counted apart and kept out of the statistics. Exit
codes: 0 every call was graded; 1 some were not (status ``partial``) or the run could not start.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from osmosis_ai.eval.rubric.batch import RubricReport
    from osmosis_cli.output import Output

DEFAULT_OUTPUT_NAME = "rubric_eval_result.json"


def rubric(
    data: Annotated[str, typer.Option("-d", "--data", help="JSONL file of conversations.")],
    rubric: Annotated[
        str,
        typer.Option("-r", "--rubric", help="Rubric text, or @file.txt to read it from a file."),
    ],
    model: Annotated[
        str, typer.Option("--model", help="Judge model as provider/model, e.g. openai/gpt-5-mini.")
    ],
    number: Annotated[
        int, typer.Option("-n", "--number", help="Judge calls per record.", min=1)
    ] = 1,
    output_path: Annotated[
        str | None, typer.Option("-o", "--output", help="Write the full results as JSON here.")
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="Deprecated: the judge's API key (prefer the provider's variable, e.g. OPENAI_API_KEY).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds a judge request may take in all, its whole reply included (default 60).",
        ),
    ] = None,
    score_min: Annotated[float, typer.Option("--score-min", help="Lowest score.")] = 0.0,
    score_max: Annotated[float, typer.Option("--score-max", help="Highest score.")] = 1.0,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="Any OpenAI-compatible judge endpoint (vLLM, Ollama...)."),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", help="Cache verdicts in this folder: reruns cost no calls."),
    ] = None,
) -> None:
    """Grade conversations against a rubric with an LLM judge."""
    from osmosis_cli.output import get_output

    out = get_output()
    if api_key is not None:
        out.warn(
            "DEPRECATION",
            "--api-key is deprecated and will be removed in a future release. "
            "Set the provider environment variable instead.",
        )
    report = _run(
        data=data,
        rubric_arg=rubric,
        model=model,
        number=number,
        judge_options={
            "api_key": api_key,
            "timeout": timeout,
            "score_min": score_min,
            "score_max": score_max,
            "base_url": base_url,
            "cache": cache if cache is not None else None,
        },
        out=out,
    )
    written = _write(report, output_path) if output_path else None
    _emit(report, written, out)
    if report.error_count:
        raise typer.Exit(code=1)


def _run(
    *,
    data: str,
    rubric_arg: str,
    model: str,
    number: int,
    judge_options: dict[str, Any],
    out: Output,
) -> RubricReport:
    import asyncio

    from osmosis_ai.errors import ConfigurationError
    from osmosis_ai.eval.judge import Judge
    from osmosis_ai.eval.judge.transport import aclose_clients
    from osmosis_ai.eval.rubric.batch import grade_records
    from osmosis_ai.eval.rubric.dataset import load_rubric_records, read_rubric_text
    from osmosis_cli.errors import CLIError, CLIErrorCode

    data_path = Path(data).expanduser()
    try:
        rubric_text = read_rubric_text(rubric_arg)
        records = load_rubric_records(data_path)
        judge = Judge(model, **judge_options)
    except ConfigurationError as exc:  # includes MissingAPIKeyError
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from exc
    except ModuleNotFoundError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from exc
    bar = _ProgressBar(out, len(records) * number)

    async def main() -> RubricReport:
        try:
            return await grade_records(
                records,
                rubric=rubric_text,
                judge=judge,
                number=number,
                data_path=data_path,
                on_progress=bar.update,
            )
        finally:
            await aclose_clients()

    try:
        return asyncio.run(main())
    finally:
        bar.close()


class _ProgressBar:
    """A Rich bar on an interactive stderr (score calls done, judge errors); silent otherwise."""

    def __init__(self, out: Output, total: int) -> None:
        self._bar: Any = None
        self._task: Any = None
        if out.is_json or out.mode != "rich" or total < 2 or not out.stderr.isatty():
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from osmosis_cli.output import make_console

        self._bar = Progress(
            TextColumn("judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[errors]}"),
            console=make_console(out.stderr),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task("judge", total=total, errors="")

    def update(self, done: int, total: int, judge_errors: int) -> None:
        if self._bar is not None:
            errors = f"{judge_errors} judge error(s)" if judge_errors else ""
            self._bar.update(self._task, completed=done, errors=errors)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _write(report: RubricReport, output_path: str) -> Path:
    import json
    from datetime import UTC, datetime

    target = Path(output_path).expanduser()
    if output_path.endswith(("/", "\\")) or target.is_dir():
        target = target / DEFAULT_OUTPUT_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "generated_at": datetime.now(UTC).isoformat(),
        "rubric": report.rubric,
        **report.summary(),
        "overall_statistics": report.summary()["statistics"],
        "records": [record.to_payload() for record in report.records],
    }
    target.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    return target


def _emit(report: RubricReport, written: Path | None, out: Output) -> None:
    resource = report.summary()
    if written is not None:
        resource["output_path"] = str(written)
    else:
        resource["records"] = [record.to_payload() for record in report.records]
    stats = resource["statistics"]
    graded, calls = resource["graded"], resource["total_calls"]
    average = "n/a" if stats["average"] is None else f"{stats['average']:.4f}"
    message = f"Graded {graded}/{calls} judge call(s) with {report.model}: average {average}."
    if report.judge_errors:
        message += f" {report.judge_errors} judge error(s), not counted as scores."
    lines = [
        f"{r.label}: scores {', '.join(f'{s:.3f}' for s in r.scores) or '-'}"
        + (f"; errors: {'; '.join(r.errors)}" if r.errors else "")
        for r in report.records
    ]
    if written is not None:
        lines.append(f"Wrote results to {written}")
    out.emit_operation(
        "eval.rubric",
        status="partial" if report.error_count else "success",
        message=message,
        resource=resource,
        lines=lines,
    )
