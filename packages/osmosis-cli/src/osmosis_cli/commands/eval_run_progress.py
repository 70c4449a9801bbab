"""Progress rendering of ``osmosis eval run``: a Rich bar, ``--plain`` milestones, or (with
``--json``) only the coded warnings on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_ai.eval import EvalProgress, EvalUpdate
    from osmosis_cli.output import Output


def make_reporter(out: Output) -> _Reporter:
    from osmosis_cli.output import Mode

    if out.mode is Mode.JSON:
        return _Reporter(out)
    if out.mode is Mode.PLAIN:
        return _PlainReporter(out)
    return _RichReporter(out)


class _Reporter:
    """Routes progress updates; with ``--json`` only coded warnings are shown (on stderr)."""

    def __init__(self, out: Output) -> None:
        self.out = out

    def update(self, update: EvalUpdate) -> None:
        if update.kind == "started":
            self.started(update.progress)
        elif update.kind == "row":
            self.row(update.progress)
        elif update.details.get("code") == "COST_ESTIMATE":
            self.say(update.message or "")
        elif update.details.get("code"):
            self.out.warn(str(update.details["code"]), update.message or "")
        else:
            self.notice(update.level or "info", update.message or "", dict(update.details))

    def started(self, progress: EvalProgress) -> None:
        return None

    def row(self, progress: EvalProgress) -> None:
        return None

    def notice(self, level: str, message: str, details: dict[str, Any]) -> None:
        return None

    def say(self, message: str) -> None:
        self.out.progress(message)

    def pause(self) -> None:
        return None

    def resume(self) -> None:
        return None

    def close(self) -> None:
        return None


class _PlainReporter(_Reporter):
    """Milestones on stderr; one line per 10% of progress."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self._next_mark = 0

    def started(self, progress: EvalProgress) -> None:
        self.out.progress(_plan_line(progress))
        self._step = max(1, progress.pending_at_start // 10)
        self._next_mark = self._step

    def row(self, progress: EvalProgress) -> None:
        if progress.finished_this_session >= self._next_mark:
            self._next_mark += self._step
            self.out.progress(_status_line(progress))

    def notice(self, level: str, message: str, details: dict[str, Any]) -> None:
        if level in ("error", "warning") and message != "upstream_retry":
            self.out.progress(f"{level}: {message} {details.get('reason', '')}".rstrip())


class _RichReporter(_Reporter):
    """A live bar on stderr: done/total, mean reward, failures, rate."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self._progress: Any = None
        self._task: Any = None
        self._retries = 0

    def started(self, progress: EvalProgress) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from osmosis_cli.output import escape_markup, make_console

        console = make_console(self.out.stderr)
        console.print(escape_markup(_plan_line(progress)))
        if progress.pending_at_start == 0:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            escape_markup(progress.run_name),
            total=progress.total,
            completed=progress.already_done,
            stats="",
        )

    def row(self, progress: EvalProgress) -> None:
        if self._progress is None:
            return
        self._progress.update(
            self._task,
            completed=progress.done,
            stats=_stats(progress, self._retries),
        )

    def notice(self, level: str, message: str, details: dict[str, Any]) -> None:
        if message == "upstream_retry":
            self._retries += 1
            return
        if self._progress is not None and level in ("error", "warning"):
            reason = details.get("reason", "")
            from osmosis_cli.output import escape_markup

            text = escape_markup(f"{message} {reason}".rstrip())
            self._progress.console.print(f"[yellow]{level}:[/yellow] {text}")

    def say(self, message: str) -> None:
        if self._progress is not None:
            from osmosis_cli.output import escape_markup

            self._progress.console.print(escape_markup(message))
        else:
            self.out.progress(message)

    def pause(self) -> None:
        if self._progress is not None:
            self._progress.stop()

    def resume(self) -> None:
        if self._progress is not None:
            self._progress.start()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _stats(progress: EvalProgress, retries: int = 0) -> str:
    mean = progress.mean_reward
    parts = [f"mean reward {mean:.3f}" if mean is not None else "mean reward -"]
    parts.append(f"failed {progress.failed}")
    if progress.skipped:
        parts.append(f"skipped {progress.skipped}")
    if retries:
        parts.append(f"upstream retries {retries}")
    parts.append(f"model calls {progress.policy_calls}")
    limit = progress.policy_limit
    if limit is not None:  # the adaptive concurrency of model calls, live
        parts.append(f"in flight {limit.in_flight} (limit {int(limit.limit)} of {limit.ceiling})")
    return " · ".join(parts)


def _status_line(progress: EvalProgress) -> str:
    return f"{progress.done}/{progress.total} done · {_stats(progress)}"


def _plan_line(progress: EvalProgress) -> str:
    what = "resuming" if progress.resumed else "starting"
    return (
        f"→ {progress.run_name}: {what}, {progress.pending_at_start} of {progress.total} work "
        f"items pending ({progress.rows} rows x n={progress.n}, model {progress.model}, "
        f"rollout {progress.rollout})"
    )
