"""``osmosis eval run``: the cost-estimate prompt, the budget's exit code and summary lines (budget,
adaptive concurrency).

The library (:mod:`osmosis_ai.eval`, ``max_cost`` / ``confirm_cost``) owns the budget; this module
only asks the question on a terminal and says how the run stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from osmosis_ai.eval import CostEstimate, EvalRun
    from osmosis_cli.output import Output

#: Exit code of a run stopped by its ``--max-cost`` budget (resumable with a higher budget).
EXIT_BUDGET = 3


def confirm_cost(
    out: Output, yes: bool, pause: Callable[[], None], resume: Callable[[], None]
) -> Callable[[CostEstimate], bool] | None:
    """The prompt shown after the probe row, or ``None`` (``--yes``, ``--json``/``--plain``, no TTY)."""
    if yes or not out.interactive:
        return None

    def ask(estimate: CostEstimate) -> bool:
        pause()  # the live progress bar would draw over the question
        try:
            return out.confirm(f"{estimate.describe()}. Continue?", assume_yes=False)
        finally:
            resume()

    return ask


def stop_message(result: EvalRun) -> str | None:
    """The summary's first line when dispatch stopped on purpose, else ``None``."""
    if result.stop_code == "budget":
        return (
            f"Eval {result.run_name} stopped at its cost budget: {result.succeeded} succeeded, "
            f"{result.failed} failed, {result.pending} pending. {result.halt_reason}"
        )
    if result.stop_code == "declined":
        return (
            f"Eval {result.run_name} stopped: the cost estimate was not confirmed; "
            f"{result.pending} work item(s) pending (rerun with --yes to go on)."
        )
    return None


def budget_lines(metrics: dict[str, object]) -> list[str]:
    """``budget: $spent of $max`` when the run has a budget, and the adaptive concurrency's
    final figures (``model calls: limit 8.4 (min 6.0) of 32, ...``) when it backed off."""
    lines: list[str] = []
    budget = metrics.get("budget")
    if isinstance(budget, dict) and budget.get("max_cost_usd") is not None:
        line = (
            f"budget: ${budget.get('spent_usd') or 0.0:.4f} spent of ${budget['max_cost_usd']:.4f}"
        )
        lines.append(line + (" (stopped)" if budget.get("stopped") else ""))
    concurrency = metrics.get("concurrency")
    policy = concurrency.get("policy") if isinstance(concurrency, dict) else None
    if isinstance(policy, dict) and policy.get("decreases"):
        lines.append(
            f"model calls at once: limit {policy['final_limit']} (min {policy['min_limit']}) of "
            f"{policy['ceiling']}, mean {policy['mean_in_flight']} in flight, backed off "
            f"{policy['decreases']}x on {policy['congestion_signals']} 429/503/timeout(s)"
        )
    return lines
