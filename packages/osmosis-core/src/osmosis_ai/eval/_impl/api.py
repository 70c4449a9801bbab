""":func:`run_eval` / :func:`run_eval_async`: evaluate a rollout from Python.

``osmosis eval run`` is a renderer of exactly these functions (progress + summary).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from dataclasses import fields, replace
from typing import Any, Unpack

from osmosis_ai.eval._impl.cost.budget import CostEstimate
from osmosis_ai.eval._impl.plan.options import EvalOptions, EvalOptionsDict, PathLike
from osmosis_ai.eval._impl.progress import ProgressCallback
from osmosis_ai.eval._impl.results.run import EvalRun

#: The names :func:`run_eval` accepts as keywords: :class:`EvalOptions`' fields.
EVAL_OPTION_NAMES = frozenset(f.name for f in fields(EvalOptions))


async def run_eval_async(
    rollout: PathLike | None,
    options: EvalOptions | None = None,
    *,
    confirm_cost: Callable[[CostEstimate], bool] | None = None,
    progress: ProgressCallback | None = None,
    **kwargs: Unpack[EvalOptionsDict],
) -> EvalRun:
    """Evaluate ``rollout`` over a dataset against a model; returns the :class:`EvalRun`.

    The run's settings are an :class:`~osmosis_ai.eval.EvalOptions` (``options=``), or the same
    names as keyword arguments (``run_eval(config, model="mock", limit=5)``); keywords given
    with ``options`` override its fields.

    ``environment="SOURCE:NAME?k=v"`` evaluates an environment from another ecosystem
    (docs/environments.md): its rows are the dataset, ``rollout`` is then ``None`` or an eval
    config whose settings apply.
    ``rollout`` is an eval config (``configs/eval/x.toml``: it supplies the dataset, model, ``n``,
    timeouts, ``[env]`` and secrets, which the arguments override), a rollout folder (entrypoint
    ``main.py``) or an entrypoint file. ``model`` is ``'<provider>/<model>'`` (e.g.
    ``'openai/gpt-4.1-mini'``, key from ``OPENAI_API_KEY``), any served name with ``base_url`` (vLLM,
    SGLang, Ollama...), or ``'mock'`` (the offline scripted policy: a plumbing check). ``api_key``
    overrides ``api_key_env``. ``sampling`` (e.g. ``{"temperature": 0.2, "seed": 7}``) is set on
    every model call, overriding the rollout's own values, and recorded in the manifest. ``rows`` selects 0-based dataset rows (``'0-9,20'`` or a list),
    ``limit`` the first N. Results go to ``<output_dir or <workspace>/.osmosis/evals>/<name>``;
    calling again with the same ``name`` resumes the run (``fresh=True`` archives it and starts
    over, ``retry_failed=True`` reruns failed rows; with
    ``allow_changed=True`` too, on changed rollout code, recorded in the manifest). ``max_failures`` halts the session once that
    many work items failed (resumable; the run's ``halt_reason`` says why); independently, 5
    failed items in a row whose model calls failed at the endpoint halt it. ``workers`` is how many worker processes the
    rollout server runs rollouts in (``"auto"``: the usable cores, at most 8, at most
    ``max_in_flight`` and one per 32 work items; 1 runs them in the server process).
    ``token_ids=True`` asks the upstream for token ids (vLLM's ``return_token_ids``; only for
    engines that accept it) so the training-safety check also compares ids. ``mock_script``
    (implies ``model='mock'``) makes the offline policy answer from a reply script: a ``.jsonl``
    of replies per dataset row or prompt, or a ``.py`` with ``respond(body)`` (see
    :mod:`osmosis_ai.testing.script`). ``progress`` is
    called with an :class:`~osmosis_ai.eval.EvalUpdate` when the session starts, after every row
    and on notices.

    ``servers`` (base URLs) or ``servers_file`` (one URL per line, what ``osmosis rollout deploy``
    writes) drive already-running rollout servers instead of starting one: rows go to the server
    with the most free capacity, a server that fails has its running rows re-dispatched to the
    others, and ``EvalRun.servers`` says how each fared. Their inbound key is read from
    ``OSMOSIS_ROLLOUT_API_KEY``. The policy proxy listens on 127.0.0.1 unless ``proxy_host`` says
    otherwise; ``proxy_url`` is the address the servers reach it at (see docs/operations.md).
    ``max_cost`` (USD; the config's ``evaluation.max_cost_usd`` otherwise) is the run's budget:
    one probe row runs first, then no new row starts once the next would not fit, rows in
    flight finish, and the run returns ``partial`` with ``stop_code="budget"`` (resumable with a
    higher ``max_cost``). ``confirm_cost`` is called (on a helper thread) with the
    :class:`~osmosis_ai.eval.CostEstimate` after the probe; returning ``False`` stops dispatch
    (``stop_code="declined"``). See docs/cost-and-rate-limits.md. ``require_append_only=True``
    fails the run (status ``failed``, ``stop_code="append_only"``, also in ``metrics.json``)
    when any rollout is not append-only; ``fail_on_tripwire=True`` likewise (``stop_code=
    "tripwire"``) when a reward-hacking tripwire fired on a row and is not silenced in
    ``[evaluation.silence_tripwires]`` (docs/tripwires.md; the findings are on every run's rows
    and in ``metrics["tripwires"]`` either way). Calling again on a finished run dispatches nothing
    and rewrites no file (``EvalRun.unchanged``).

    Raises ``ConfigurationError`` subclasses for bad arguments or config files
    (``EvalPlanError``, ``ConfigError``), ``ManifestMismatchError`` when a resumed run's inputs
    changed, ``RunLayoutError`` when another process holds the run, ``UpstreamRejected`` when the
    model endpoint refuses the preflight call, ``EvalRunFailed`` when the rollout server cannot
    start, and ``EvalExtraMissingError`` without the ``eval`` extra. Cancelling the task (Ctrl-C)
    returns an ``interrupted`` run that the same call resumes.
    """
    from osmosis_ai.eval._impl.errors import require_eval_extra
    from osmosis_ai.eval._impl.plan.plan import build_plan
    from osmosis_ai.eval._impl.session import run_session

    require_eval_extra()
    plan = build_plan(rollout, with_keywords(options, kwargs))
    return await run_session(plan, progress, confirm_cost)


def with_keywords(options: EvalOptions | None, keywords: EvalOptionsDict) -> EvalOptions:
    """``options`` (default: all defaults) with ``keywords`` set on top; an unknown keyword is
    a ``TypeError`` as for any function."""
    unknown = sorted(set(keywords) - EVAL_OPTION_NAMES)
    if unknown:
        raise TypeError(f"run_eval() got unexpected keyword arguments: {', '.join(unknown)}")
    base = options if options is not None else EvalOptions()
    return replace(base, **keywords) if keywords else base


def run_eval(
    rollout: PathLike | None,
    options: EvalOptions | None = None,
    *,
    confirm_cost: Callable[[CostEstimate], bool] | None = None,
    progress: ProgressCallback | None = None,
    **kwargs: Unpack[EvalOptionsDict],
) -> EvalRun:
    """Blocking :func:`run_eval_async` (same arguments); usable in scripts and notebooks.

    Runs its own event loop (uvloop when installed). Inside a running loop (Jupyter) it runs
    on a helper thread instead; use ``await run_eval_async(...)`` there to be able to interrupt.
    """
    return _run_blocking(
        lambda: run_eval_async(
            rollout, options, confirm_cost=confirm_cost, progress=progress, **kwargs
        )
    )


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when installed (the ``eval`` extra): the controller is event-loop bound."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _run_blocking(make: Callable[[], Coroutine[Any, Any, EvalRun]]) -> EvalRun:
    outcome: dict[str, Any] = {}

    async def main() -> None:
        # The run comes back through ``outcome``, not as the main task's result: asyncio.run
        # formats its main task (result included) twice when it restores the SIGINT handler,
        # and the repr of an EvalRun holds every row (some 20 us of controller CPU per row).
        outcome["run"] = await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main(), loop_factory=loop_factory())
        return outcome["run"]

    def target() -> None:
        try:
            asyncio.run(main(), loop_factory=loop_factory())
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="osmosis-eval")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["run"]
