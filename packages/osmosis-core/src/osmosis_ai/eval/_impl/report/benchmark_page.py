"""``leaderboard.html`` of a local benchmark run (``osmosis benchmark run``): one offline page
in the eval report's style (its stylesheet, no script, no network): the leaderboard with
pass@1 and its 95 % interval drawn as a bar, pass@k, and each agent's per-task results."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from osmosis_ai.eval._impl.report.html import _asset

__all__ = ["render_leaderboard_page"]


def _pct(value: Any) -> str:
    return f"{float(value) * 100:.1f}%" if isinstance(value, int | float) else "-"


def _errors(count: Any) -> str:
    if not isinstance(count, int) or count <= 0:
        return ""
    return f" ({count} error{'s' if count != 1 else ''})"


def _interval_bar(p1: Mapping[str, Any]) -> str:
    """An inline SVG: the interval as a line, the estimate as a dot, on a 0-100 % axis."""
    raw = (p1.get("value"), p1.get("ci_low"), p1.get("ci_high"))
    if not all(isinstance(v, int | float) for v in raw):
        return ""
    value, low, high = (float(v) for v in raw)  # pyright: ignore[reportArgumentType]
    width = 160

    def x(v: float) -> float:
        return 4 + v * (width - 8)

    return (
        f'<svg class="ci" width="{width}" height="14" role="img" aria-label="95% interval '
        f'{_pct(low)} to {_pct(high)}"><line class="axis" x1="4" y1="7" x2="{width - 4}" '
        f'y2="7"/><line x1="{x(low):.1f}" y1="7" x2="{x(high):.1f}" y2="7" stroke="#3b6fd8" '
        f'stroke-width="4" stroke-linecap="round"/><circle cx="{x(value):.1f}" cy="7" r="4" '
        'fill="#1d2330"/></svg>'
    )


def render_leaderboard_page(run: Mapping[str, Any]) -> str:
    """The page of a benchmark run's ``as_dict()``."""
    e = html.escape
    entries = list(run.get("leaderboard") or [])
    max_k = max((len(s.get("pass_at_k") or []) for s in entries), default=0)
    head = "".join(
        f"<th>{e(h)}</th>"
        for h in ["rank", "agent", "pass@1", "95% interval", "", f"pass@{max_k}" if max_k else "pass@k",
                  "passed / attempts", "model", "rollout"]
    )  # fmt: skip
    rows = []
    for s in entries:
        p1 = s.get("pass_at_1") or {}
        deepest = (s.get("pass_at_k") or [{}])[-1]
        rank = f"#{s['rank']}" if s.get("rank") else "-"
        if s.get("tied"):
            rank += "*"
        rows.append(
            "<tr>"
            f'<td class="rank">{e(rank)}</td><td>{e(str(s.get("agent")))}</td>'
            f"<td><b>{_pct(p1.get('value'))}</b></td>"
            f"<td>{_pct(p1.get('ci_low'))} &ndash; {_pct(p1.get('ci_high'))}</td>"
            f"<td>{_interval_bar(p1)}</td><td>{_pct(deepest.get('value'))}</td>"
            f"<td>{s.get('passed', 0)} / {s.get('attempts', 0)}</td>"
            f"<td>{e(str(s.get('model') or '-'))}</td><td>{e(str(s.get('rollout') or '-'))}</td>"
            "</tr>"
        )
    tasks = list(run.get("tasks") or [])
    task_head = "".join(f"<th>{e(t)}</th>" for t in tasks)
    task_rows = []
    for s in entries:
        by_task = {t["task"]: t for t in s.get("tasks") or []}
        cells = "".join(
            f"<td>{by_task.get(t, {}).get('passed', 0)} / {by_task.get(t, {}).get('attempts', 0)}"
            f"{_errors(by_task.get(t, {}).get('errors'))}</td>"
            for t in tasks
        )
        task_rows.append(f"<tr><td>{e(str(s.get('agent')))}</td>{cells}</tr>")
    tied = any(s.get("tied") for s in entries)
    note = (
        '<p class="muted">* tied for first: the 95 % interval overlaps the best agent\'s, so the '
        "two cannot be told apart on these tasks.</p>"
        if tied
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>osmosis benchmark · {e(str(run.get('name')))}</title>\n"
        f"<style>\n{_asset('report.css')}\n.ci {{ vertical-align: middle; }}\n"
        ".rank { font-weight: 600; }\n</style>\n</head>\n<body>\n"
        f'<header class="top"><h1 id="title">osmosis benchmark · {e(str(run.get("name")))}</h1>'
        "</header>\n<main>\n"
        f'<p class="muted">Benchmark {e(str(run.get("benchmark")))}: {len(tasks)} tasks &times; '
        f"{run.get('attempts_per_task')} attempts per agent. pass@1 is the mean per-task pass "
        "rate; its 95 % interval is the Wilson score interval over all attempts; pass@k is the "
        "unbiased estimator averaged over tasks. Ties: "
        f"{e(str(run.get('tie_rule')))}.</p>\n"
        f'<h2>Leaderboard</h2>\n<table class="grid" id="leaderboard"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>\n{note}"
        f'<h2>Per task (passed / attempts)</h2>\n<table class="grid" id="per-task"><thead><tr>'
        f"<th>agent</th>{task_head}</tr></thead><tbody>{''.join(task_rows)}</tbody></table>\n"
        "</main>\n</body>\n</html>\n"
    )
