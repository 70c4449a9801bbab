""":class:`EvalRun`: what one session of a run leaves behind (also what ``run_eval`` returns)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from osmosis_ai.eval._impl.results.metrics import RunFigures
from osmosis_ai.eval._impl.run_dir.records import RowRecord

RunStatus = Literal["success", "partial", "interrupted", "failed"]


@dataclass(slots=True)
class EvalRun:
    """The result of :func:`~osmosis_ai.eval.run_eval`.

    ``status`` is ``success`` (every work item succeeded or was skipped), ``partial`` (some failed
    or are still pending) or ``interrupted`` (Ctrl-C/SIGTERM/cancelled; rerun with the same
    ``name`` to resume) or ``failed`` (a gate failed the run: ``stop_code`` says which, e.g.
    ``append_only`` with ``require_append_only``). ``rows`` holds one :class:`RowRecord` per finished work item (this
    session's and earlier sessions'), in row then sample order, read from the run's
    ``index.jsonl`` when asked for (a sequence, not a list: a run of any length returns
    without holding its rows); ``metrics`` is the ``summary``
    block of ``metrics.json`` and :attr:`figures` the same, typed. (The CLI's ``--json``
    envelope of a run is the CLI's: ``osmosis_cli.commands.eval_run.run_resource``.)
    """

    status: RunStatus
    run_name: str
    run_dir: Path
    local_run_id: str
    dataset: Path
    model: str
    rollout: str
    total_work_items: int
    dispatched: int
    succeeded: int
    failed: int
    skipped: int
    resumed: int
    pending: int
    duration_ms: float
    metrics: dict[str, Any]
    rows: Sequence[RowRecord] = field(default_factory=tuple)
    archived_to: Path | None = None
    halt_reason: str | None = None
    #: With ``servers=[...]``: per rollout server its url, ``status`` (``ok``, ``draining``,
    #: ``failed``), capacity, dispatched / completed / re-dispatched counts and ``failure``.
    servers: list[dict[str, Any]] = field(default_factory=list)
    #: Why dispatch stopped early on purpose: ``"budget"`` (``max_cost`` reached) or
    #: ``"declined"`` (the cost estimate was not confirmed); the run is resumable. ``"append_only"``:
    #: ``require_append_only`` and some rollout was not append-only (status ``failed``).
    #: ``"max_failures"`` (``max_failures`` failed items halted the session) and
    #: ``"endpoint_failures"`` (consecutive model-endpoint failures halted it): ``partial``.
    stop_code: str | None = None
    #: This session dispatched nothing and the run's results were already on disk: no file
    #: was rewritten (``duration_ms`` is the stored one).
    unchanged: bool = False

    @property
    def failed_servers(self) -> list[dict[str, Any]]:
        return [server for server in self.servers if server.get("status") == "failed"]

    @property
    def failed_rows(self) -> list[RowRecord]:
        return [row for row in self.rows if row.status == "failed"]

    @property
    def figures(self) -> RunFigures:
        """The run's figures (mean reward, pass rate, pass@k, ...), typed, from ``metrics``."""
        return RunFigures.of(self.metrics)

    @property
    def mean_reward(self) -> float | None:
        return self.figures.mean_reward

    @property
    def pass_rate(self) -> float | None:
        return self.figures.pass_rate

    def trajectory(self, row: RowRecord) -> dict[str, Any] | None:
        """The row's ATIF trajectory document, when one was written."""
        import json

        path = row.trajectory_path(self.run_dir)
        if path is None or not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))
