"""``osmosis eval run CONFIG``: evaluate a rollout locally against any OpenAI-compatible model.

A renderer of :func:`osmosis_ai.eval.run_eval`: it builds the run's
:class:`~osmosis_ai.eval.EvalOptions` from the flags (a flag named like an option field is that
option), renders the
progress updates (a Rich bar with the live mean reward and failure count, milestones with
``--plain``, only warnings with ``--json``), maps the library's errors to CLI errors, and prints
the ``eval.run`` operation envelope. Exit codes: 0 every work item
succeeded or was skipped; 1 some failed or are still pending (status ``partial``), or the run
could not start; 3 stopped by the ``--max-cost`` budget; 130 interrupted (the run is resumable
with the same ``--name``).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from osmosis_cli.commands import eval_run_options as opt
from osmosis_cli.commands.eval_budget import EXIT_BUDGET, budget_lines, confirm_cost, stop_message
from osmosis_cli.commands.eval_run_progress import make_reporter

if TYPE_CHECKING:
    from osmosis_ai.eval import EvalOptions, EvalRun
    from osmosis_cli.output import Output

EXIT_INTERRUPTED = 130


def run(
    ctx: typer.Context,
    config: opt.OptionalConfigArg = None,
    environment: opt.Environment = None,
    dataset: opt.Dataset = None,
    model: opt.Model = None,
    base_url: opt.BaseUrl = None,
    mock_script: opt.MockScript = None,
    api_key_env: opt.ApiKeyEnv = None,
    temperature: opt.Temperature = None,
    top_p: opt.TopP = None,
    max_tokens: opt.MaxTokens = None,
    seed: opt.Seed = None,
    model_arg: opt.ModelArg = None,
    n: opt.N = None,
    limit: opt.Limit = None,
    rows: opt.Rows = None,
    max_in_flight: opt.MaxInFlight = None,
    max_cost: opt.MaxCost = None,
    yes: opt.Yes = False,
    pass_threshold: opt.PassThreshold = None,
    name: opt.Name = None,
    fresh: opt.Fresh = False,
    retry_failed: opt.RetryFailed = False,
    allow_changed: opt.AllowChanged = False,
    max_failures: opt.MaxFailures = None,
    output_dir: opt.OutputDir = None,
    output_dir_short: opt.OutputDirShort = None,
    isolated: opt.Isolated = False,
    no_report: opt.NoReport = False,
    workers: opt.Workers = "auto",
    token_ids: opt.TokenIds = False,
    servers: opt.Servers = None,
    servers_file: opt.ServersFile = None,
    proxy_host: opt.ProxyHost = None,
    proxy_url: opt.ProxyUrl = None,
    require_append_only: opt.RequireAppendOnly = False,
    fail_on_tripwire: opt.FailOnTripwire = False,
    secrets_file: opt.SecretsFile = None,
    rollout_port: opt.RolloutPort = None,
    verbose: opt.Verbose = False,
    upload: opt.Upload = False,
) -> None:
    """Run an eval locally: every row x n samples through the rollout, graded, resumable.

    Starts the rollout's server (its entrypoint's `app`, or the app a 0.3.x-style `main()` passes
    to `uvicorn.run`) on 127.0.0.1, or drives running ones with --servers/--servers-file, and
    proxies its model calls to the upstream model. Results go to .osmosis/evals/<run>/; rerun
    the same --name to resume. Exit code 1 when a work item failed or is pending ("partial"),
    or a rollout is not append-only (--require-append-only), or a tripwire fired
    (--fail-on-tripwire); 3 when stopped by --max-cost; 130 when interrupted. On a terminal, a
    priced run shows its cost estimate and asks to continue (--yes skips it).
    From Python: osmosis_ai.eval.run_eval (docs/eval-library.md)."""
    from osmosis_cli.output import get_output

    out = get_output()
    _before_run(upload=upload, secrets_file=secrets_file)
    target = _target_words(config, environment)
    if isolated and config is not None:
        _refuse_legacy_sdk_pin(config)
    sampling = _sampling(temperature, top_p, max_tokens, seed, model_arg or [])
    params = _with_runs_dir(out, dict(ctx.params), output_dir, output_dir_short)
    options = eval_options(params, sampling=sampling or None)
    result = _execute(out, config, target, options, yes=yes)
    from osmosis_cli.commands.eval_report import finish_run

    # A rerun that changed nothing leaves an existing report as it is too.
    keep = result.unchanged and (result.run_dir / "report.html").is_file()
    report, failures = finish_run(result.run_dir, write=not no_report and not keep)
    if keep and not no_report:
        report = result.run_dir / "report.html"
    runs_dir = Path(options.output_dir) if options.output_dir is not None else None
    _emit(result, out, target, report, failures, runs_dir)
    _after_run(result, out, verbose=verbose, upload=upload)
    if result.status == "interrupted":
        raise typer.Exit(code=EXIT_INTERRUPTED)
    if result.stop_code == "budget":
        raise typer.Exit(code=EXIT_BUDGET)
    if result.status != "success":
        raise typer.Exit(code=1)


def _before_run(*, upload: bool, secrets_file: str | None) -> None:
    if upload:  # fail before the run, not after it
        from osmosis_cli.platform.credentials import require_token
        from osmosis_cli.platform.settings import platform_url

        require_token(platform_url())
    if secrets_file is not None:
        _load_secrets_file(secrets_file)


def _after_run(result: Any, out: Any, *, verbose: bool, upload: bool) -> None:
    if verbose:
        out.progress(f"Rollout server log: {result.run_dir / 'rollout_server.log'}")
    if upload and result.status != "interrupted":
        from osmosis_cli.platform.eval_upload import upload_run

        upload_run(result.run_dir, out, replace=False)


def _load_secrets_file(path: str) -> None:
    """``--secrets-file``: each NAME=value into this process's environment (the run's rollout
    server and the proxy inherit it), every value registered with the redactor first."""
    import os

    from osmosis_ai.rollout.integrations.spi import register_secret
    from osmosis_cli.platform.secrets import read_secrets_file

    values = read_secrets_file(path)
    register_secret(*values.values())
    os.environ.update(values)


def eval_options(params: dict[str, Any], **computed: Any) -> EvalOptions:
    """The run's options: every flag named like an :class:`~osmosis_ai.eval.EvalOptions` field,
    plus the ``computed`` ones (``sampling`` from its flags); the rest are the CLI's own."""
    from dataclasses import fields

    from osmosis_ai.eval import EvalOptions

    names = {f.name for f in fields(EvalOptions)}
    return EvalOptions(**{k: v for k, v in params.items() if k in names}, **computed)


def _sampling(
    temperature: float | None,
    top_p: float | None,
    max_tokens: int | None,
    seed: int | None,
    model_args: list[str],
) -> dict[str, Any]:
    """The request fields set on every model call; ``--model-arg`` values are JSON when they parse."""
    import json

    from osmosis_cli.errors import validation

    sampling: dict[str, Any] = {}
    for item in model_args:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise validation(f"--model-arg {item!r} is not KEY=VALUE (e.g. frequency_penalty=0.5)")
        try:
            sampling[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            sampling[key.strip()] = raw
    named = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
    sampling.update({key: value for key, value in named.items() if value is not None})
    for reserved in ("model", "messages", "stream"):
        if reserved in sampling:
            raise validation(f"--model-arg cannot set {reserved!r}: the rollout sends it")
    return sampling


def _refuse_legacy_sdk_pin(config: Path) -> None:
    """``--isolated`` installs the rollout's own pins: a 0.3 SDK pin would bring back osmosis-ai
    0.3.x, which cannot host this eval's server child. Say the exact edit instead."""
    from osmosis_ai.config import ConfigError, load_eval_config
    from osmosis_cli.errors import CLIError, CLIErrorCode
    from osmosis_cli.preflight.sdk_pin import legacy_sdk_pins
    from osmosis_cli.workspace import find_workspace

    try:
        rollout = load_eval_config(config).rollout
    except ConfigError:
        return  # run_eval reports the config problem itself
    root = find_workspace(config.resolve().parent)
    if root is None:
        return
    pins = legacy_sdk_pins(root / "rollouts" / rollout)
    if pins:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"--isolated installs rollouts/{rollout}'s own dependencies, and its pyproject.toml "
            "pins the 0.3 SDK (osmosis-ai<0.4), which cannot run this eval. Change "
            + "; ".join(p.describe(root) for p in pins)
            + " (`osmosis doctor --fix` does it), or drop --isolated (the rollout's code runs "
            "unmodified in this environment).",
            details={
                "edits": [{"file": str(p.pyproject), "old": p.old, "new": p.new} for p in pins]
            },
        )


def _target_words(config: Path | None, environment: str | None) -> str:
    """What names the evaluated rollout on a command line (config and/or ``--env SPEC``)."""
    if config is None and environment is None:
        from osmosis_cli.errors import validation

        raise validation(
            "Name what to evaluate: an eval config (osmosis eval run configs/eval/<name>.toml) "
            "or an environment (osmosis eval run --env SOURCE:NAME, see docs/environments.md)."
        )
    words = [shlex.quote(str(config))] if config is not None else []
    if environment is not None:
        words.append(f"--env {shlex.quote(environment)}")
    return " ".join(words)


def _execute(
    out: Output, config: Path | None, target: str, options: EvalOptions, *, yes: bool
) -> EvalRun:
    """Run :func:`osmosis_ai.eval.run_eval`, mapping its errors to CLI errors."""
    from osmosis_ai.config import ConfigError
    from osmosis_ai.eval import (
        EvalDiskFullError,
        EvalExtraMissingError,
        EvalPlanError,
        EvalRunFailed,
        ManifestError,
        ManifestMismatchError,
        RunLayoutError,
        UpstreamRejected,
        run_eval,
    )
    from osmosis_cli.errors import CLIError, CLIErrorCode

    name = options.name
    reporter = make_reporter(out)
    confirm = confirm_cost(out, yes, reporter.pause, reporter.resume)
    try:
        return run_eval(config, options, progress=reporter.update, confirm_cost=confirm)
    except ConfigError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc), details=exc.as_details()) from None
    except EvalExtraMissingError as exc:
        raise CLIError(
            CLIErrorCode.VALIDATION, str(exc), details={"missing": exc.missing}
        ) from None
    except EvalPlanError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from None
    except ManifestMismatchError as exc:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            str(exc),
            details={
                "run_name": name,
                "changed": exc.changed,
                "flags": [
                    "--fresh",
                    *(["--retry-failed", "--allow-changed"] * ("rollout" in exc.changed)),
                ],
            },
        ) from None
    except RunLayoutError as exc:
        raise CLIError(CLIErrorCode.CONFLICT, str(exc), details={"run_name": name}) from None
    except UpstreamRejected as exc:
        code = {0: CLIErrorCode.NETWORK, 401: CLIErrorCode.MODEL_AUTH, 403: CLIErrorCode.MODEL_AUTH}
        raise CLIError(
            code.get(exc.status_code, CLIErrorCode.VALIDATION),
            str(exc),
            details={"status_code": exc.status_code, "run_name": name},
        ) from None
    except EvalDiskFullError as exc:  # the message names the file; the run resumes
        output_dir = Path(options.output_dir) if options.output_dir is not None else None
        resume = _resume_command(target, exc.run_name, output_dir)
        message = f"{exc}. Resume: {resume}"
        raise CLIError(CLIErrorCode.DISK_FULL, message, details=exc.details()) from None
    except EvalRunFailed as exc:
        details: dict[str, Any] = {}
        if exc.result is not None:
            details = {
                "run_name": exc.result.run_name,
                "output_path": str(exc.result.run_dir),
                "resource": run_resource(exc.result),
            }
        raise CLIError(CLIErrorCode.INTERNAL, str(exc), details=details) from None
    except ManifestError as exc:  # unreadable manifest
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from None
    finally:
        reporter.close()


def _resume_command(target: str, run_name: str, output: Path | None) -> str:
    """The run's manifest stores the model, dataset and selection: ``--name`` alone resumes it
    (with ``--runs-dir`` when the run lives elsewhere than the default). ``target``: the
    config and/or ``--env SPEC`` words (:func:`_target_words`)."""
    command = f"osmosis eval run {target} --name {shlex.quote(run_name)}"
    return f"{command} --runs-dir {shlex.quote(str(output))}" if output is not None else command


def _emit(
    result: EvalRun,
    out: Output,
    target: str,
    report: Path | None,
    failures: list[str],
    output: Path | None,
) -> None:
    status = result.status if result.status in ("success", "failed") else "partial"
    passed = result.figures.passed or 0
    resource = {**run_resource(result), "report_path": str(report) if report else None}
    if result.status == "interrupted":
        message = (
            f"Interrupted: {result.pending} work item(s) pending. Rerun with --name "
            f"{result.run_name} (the stored model and rows are reused) to resume."
        )
    elif result.unchanged and result.status == "success":
        message = (
            f"Eval {result.run_name}: nothing to run, it had already finished; no file "
            f"changed. {_rewards(result)}."
        )
    elif result.stop_code == "append_only":
        broken = result.metrics.get("training_safety", {}).get("broken")
        message = (
            f"Eval {result.run_name} failed --require-append-only: {broken} rollout(s) are not "
            f"append-only (see the training-safety line); {_rewards(result)}."
        )
    elif result.stop_code == "tripwire":
        flagged = result.metrics.get("tripwires", {}).get("rows")
        message = (
            f"Eval {result.run_name} failed --fail-on-tripwire: {flagged} row(s) tripped a "
            f"reward-hacking tripwire (see the tripwires line); {_rewards(result)}."
        )
    elif result.status == "success":
        nothing = "" if passed else " (nothing passed)"
        message = f"Eval {result.run_name} finished{nothing}: {_rewards(result)}."
    elif stop_message(result) is not None:
        message = f"{stop_message(result)} {_rewards(result)}."
    else:
        stopped = f" (stopped: {result.halt_reason})" if result.halt_reason else ""
        message = (
            f"Eval {result.run_name} is partial{stopped}: {result.failed} failed, "
            f"{result.pending} pending; {_rewards(result)}."
        )
    tail = [*failures, *([f"report: {report}"] if report else [])]
    lines = [*_summary_lines(result), *tail]
    next_steps: list[str] = []
    resume = _resume_command(target, result.run_name, output)
    if result.failed:
        next_steps.append(f"{resume} --retry-failed")
    budget = result.metrics.get("budget")
    if result.stop_code == "budget" and isinstance(budget, dict) and budget.get("unknown_reason"):
        # no price: the fix is a price (the halt reason names it), not a higher budget
        next_steps.append(f"{resume} --max-cost {budget['max_cost_usd']:g}")
    elif result.stop_code == "budget":
        next_steps.append(f"{resume} --max-cost <a higher USD budget>")
    elif result.pending:
        next_steps.append(resume)
    if not out.is_json and out.mode.value == "rich":
        _print_summary_table(result, out)
        lines = [
            f"results: {result.run_dir}",
            *budget_lines(result.metrics),
            *_safety_lines(result),
            *_failed_lines(result),
            *tail,
        ]
    out.emit_operation(
        "eval.run",
        status=status,
        message=message,
        resource=resource,
        next_steps=next_steps,
        lines=lines,
        ok=result.status == "success" and passed > 0,
    )


def _with_runs_dir(
    out: Any, params: dict[str, Any], output_dir: Path | None, output_dir_short: Path | None
) -> dict[str, Any]:
    """``params`` with the deprecated ``-o DIR`` folded into ``--runs-dir`` (with a warning)."""
    if output_dir_short is not None:
        out.warn(
            "DEPRECATED_OPTION",
            "`eval run -o DIR` is the old spelling of `--runs-dir DIR` (-o names the file a "
            "command writes, as in `eval report -o`)",
        )
        params["output_dir"] = output_dir if output_dir is not None else output_dir_short
    return params


def run_resource(result: EvalRun) -> dict[str, Any]:
    """The ``eval.run`` resource of ``osmosis eval run --json`` (documented in docs/cli.md)."""
    return {
        "run_name": result.run_name,
        "local_run_id": result.local_run_id,
        "output_path": str(result.run_dir),
        "dataset_source": str(result.dataset),
        "model": result.model,
        "rollout": result.rollout,
        "total_work_items": result.total_work_items,
        "dispatched": result.dispatched,
        "succeeded": result.succeeded,
        "failed": result.failed,
        "skipped": result.skipped,
        "resumed": result.resumed,
        "pending": result.pending,
        "cancelled": result.pending if result.status == "interrupted" else 0,
        "duration_ms": round(result.duration_ms, 1),
        "metrics": result.metrics,
        "failed_rows": [
            {
                "row_index": row.row_index,
                "source_row_index": row.source_row_index,
                "run_index": row.run_index,
                "rollout_id": row.rollout_id,
                "error_type": row.error_type,
                "error_message": row.error_message,
                "rollout_dir": str(result.run_dir / "rollout_trials" / str(row.rollout_id)),
            }
            for row in result.failed_rows
        ],
        "archived_to": str(result.archived_to) if result.archived_to is not None else None,
        "halt_reason": result.halt_reason,
        "servers": result.servers,
        "stop_code": result.stop_code,
    }


def _rewards(result: EvalRun) -> str:
    """The success line reports rewards over graded rows, with the denominator."""
    figures = result.figures
    graded, passed, mean = figures.graded or 0, figures.passed or 0, figures.mean_reward
    return (
        f"mean reward {'-' if mean is None else f'{mean:.4f}'} over {graded} graded, "
        f"{passed}/{graded} passed"
    )


def _failed_lines(result: EvalRun) -> list[str]:
    """Where dispatch stopped, if it did (the failures themselves: ``finish_run``), and the
    rollout servers that failed during a ``--servers`` run."""
    lines = [
        f"server failed: {server['url']}: {server['failure']} "
        f"({server['redispatched']} rollout(s) re-dispatched)"
        for server in result.failed_servers
    ]
    return lines + ([f"dispatch stopped: {result.halt_reason}"] if result.halt_reason else [])


def _summary_lines(result: EvalRun) -> list[str]:
    figures = result.figures
    mean, pass_rate = figures.mean_reward, figures.pass_rate
    lines = [
        f"work items: {result.total_work_items}  succeeded: {result.succeeded}  "
        f"failed: {result.failed}  skipped: {result.skipped}  pending: {result.pending}",
        f"mean reward: {'-' if mean is None else f'{mean:.4f}'}  pass rate: "
        f"{'-' if pass_rate is None else f'{pass_rate:.4f}'}",
    ]
    for point in figures.pass_at_k:
        value = point.get("value")
        lines.append(f"pass@{point['k']}: {'-' if value is None else f'{value:.4f}'}")
    lines += [f"{key}: {value}" for key, value in _cost_rows(result.metrics.get("cost"))]
    lines += budget_lines(result.metrics)
    lines.append(f"results: {result.run_dir}")
    return lines + _safety_lines(result) + _failed_lines(result)


def _safety_lines(result: EvalRun) -> list[str]:
    """The training-safety line (append-only rollouts, causes, token ids), when checked."""
    from osmosis_ai.eval import describe_training_safety

    summary = result.metrics.get("training_safety")
    lines = (
        [f"training safety: {describe_training_safety(summary)}"]
        if summary and summary.get("rollouts")
        else []
    )
    return lines + _tripwire_lines(result)


def _tripwire_lines(result: EvalRun) -> list[str]:
    """The tripwires line: rows flagged, findings per tripwire, silenced ones."""
    tripwires = result.metrics.get("tripwires")
    if not isinstance(tripwires, dict) or not (tripwires.get("rows") or tripwires.get("silenced")):
        return []
    by_name = ", ".join(f"{k} {v}" for k, v in (tripwires.get("by_name") or {}).items())
    silenced = ", ".join(tripwires.get("silenced") or {})
    text = f"tripwires: {tripwires.get('rows', 0)} row(s) flagged"
    text += f" ({by_name})" if by_name else ""
    text += f"; silenced: {silenced}" if silenced else ""
    return [text + " - see docs/tripwires.md"]


def _print_summary_table(result: EvalRun, out: Output) -> None:
    from rich.table import Table

    from osmosis_cli.output import escape_markup, make_console

    metrics, figures = result.metrics, result.figures

    def fmt(value: Any) -> str:
        return "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)

    table = Table(
        title=escape_markup(f"eval {result.run_name}"), show_header=False, show_edge=False
    )
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("work items", result.total_work_items),
        ("succeeded", result.succeeded),
        ("failed", result.failed),
        ("skipped", result.skipped),
        ("pending", result.pending),
        ("resumed from earlier sessions", result.resumed),
        ("mean reward", figures.mean_reward),
        ("median / std", f"{fmt(figures.median_reward)} / {fmt(figures.reward_std)}"),
        ("min / max", f"{fmt(figures.min_reward)} / {fmt(figures.max_reward)}"),
        (f"pass rate (reward ≥ {figures.pass_threshold})", figures.pass_rate),
    ]
    rows += [(f"pass@{p['k']}", p.get("value")) for p in figures.pass_at_k]
    if figures.failures_by_type:
        rows.append(
            (
                "failures by type",
                ", ".join(f"{k}={v}" for k, v in figures.failures_by_type.items()),
            )
        )
    rows.append(("tokens", figures.tokens_used))
    judge = metrics.get("judge")
    if judge:  # the graders' LLM-judge calls, apart from the policy's tokens
        cost = judge.get("cost_usd")
        rows.append(
            (
                "judge calls / tokens",
                f"{judge.get('calls', 0):g} / {judge.get('total_tokens', 0):g}"
                + (f" (${cost:.4f})" if cost is not None else ""),
            )
        )
    rows.extend(_cost_rows(metrics.get("cost")))
    for key, value in rows:
        table.add_row(escape_markup(key), escape_markup(fmt(value)))
    make_console(out.stdout).print(table)


def _cost_rows(cost: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """The cost ledger's lines: USD per kind ("unknown" with the reason, never $0) and tokens."""
    if not cost:
        return []

    def usd(kind: str) -> str:
        value = cost.get(f"{kind}_usd")
        if value is not None:
            return f"${value:.4f}"
        known = cost.get(f"{kind}_known_usd") or 0.0
        return f"unknown (${known:.4f} priced)" if known else "unknown"

    tokens = cost.get("tokens") or {}
    rows: list[tuple[str, Any]] = [
        ("cost policy / judge / total", f"{usd('policy')} / {usd('judge')} / {usd('total')}"),
        (
            "tokens in / cached / out / reasoning",
            " / ".join(
                str(tokens.get(k, 0)) for k in ("input", "cached_input", "output", "reasoning")
            ),
        ),
    ]
    if cost.get("unknown_reason"):
        rows.append(("cost unknown because", cost["unknown_reason"]))
    return rows
