"""The offline report of a local eval run, and the readers behind ``osmosis eval show/list/compare``.

* :func:`load_run` reads a run directory into :class:`RunData`: its header, its rows (the
  :class:`~osmosis_ai.eval.RowRecord` of ``index.jsonl``, optional facts filled from the
  trajectory and diagnostics when the run did not store them) and their transcripts;
* :func:`compare_runs` pairs two runs row by row (flips, deltas, paired-bootstrap interval);
* :func:`group_failures` groups failed rows by type, message and code location;
* :func:`write_report` writes one self-contained ``report.html`` (opens from ``file://``);
  :func:`run_redactor` is its redactor (the run's secrets, as in ``logs.txt``).
"""

from __future__ import annotations

from osmosis_ai.eval._impl.report.compare import RowPair, RunComparison, compare_runs
from osmosis_ai.eval._impl.report.failures import FailureGroup, group_failures, innermost_frame
from osmosis_ai.eval._impl.report.html import render_report, write_report
from osmosis_ai.eval._impl.report.index_page import INDEX_FILE, render_runs_index, write_runs_index
from osmosis_ai.eval._impl.report.redact import run_redactor
from osmosis_ai.eval._impl.report.run_data import (
    RunData,
    RunHeader,
    RunNotFoundError,
    Transcript,
    find_runs,
    is_run_dir,
    load_run,
    read_header,
)
from osmosis_ai.eval._impl.report.stats import (
    Interval,
    mean_interval,
    paired_bootstrap,
    score_range,
    wilson_interval,
)
from osmosis_ai.eval._impl.report.transcript import format_transcript
from osmosis_ai.eval._impl.run_dir.layout import DEFAULT_OUTPUT_ROOT as RUNS_FOLDER

REPORT_FILE = "report.html"
"""The report's file name inside a run folder. ``RUNS_FOLDER``: where runs live, relative to
the workspace (``.osmosis/evals``)."""

__all__ = [
    "INDEX_FILE",
    "REPORT_FILE",
    "RUNS_FOLDER",
    "FailureGroup",
    "Interval",
    "RowPair",
    "RunComparison",
    "RunData",
    "RunHeader",
    "RunNotFoundError",
    "Transcript",
    "compare_runs",
    "find_runs",
    "format_transcript",
    "group_failures",
    "innermost_frame",
    "is_run_dir",
    "load_run",
    "mean_interval",
    "paired_bootstrap",
    "read_header",
    "render_report",
    "render_runs_index",
    "run_redactor",
    "score_range",
    "wilson_interval",
    "write_report",
    "write_runs_index",
]
