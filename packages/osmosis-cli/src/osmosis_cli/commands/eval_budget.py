"""``osmosis eval run --max-cost/--yes``: the cost-estimate prompt and the budget's exit code.

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
    """``budget: $spent of $max`` for the summary, when the run has a budget."""
    budget = metrics.get("budget")
    if not isinstance(budget, dict) or budget.get("max_cost_usd") is None:
        return []
    line = f"budget: ${budget.get('spent_usd') or 0.0:.4f} spent of ${budget['max_cost_usd']:.4f}"
    return [line + (" (stopped)" if budget.get("stopped") else "")]
