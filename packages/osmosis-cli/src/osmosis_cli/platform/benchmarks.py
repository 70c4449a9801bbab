"""``osmosis benchmark list | info | submit`` and the leaderboard's text form
(``docs/platform-api.md``, "Benchmarks"). ``benchmark runs ...`` reuse the run plumbing with
the ``benchmark`` kind (:mod:`.run_ops`, :mod:`.run_logs`, :mod:`.run_download`); ``benchmark
run`` (local) is :func:`run_local`, over :func:`osmosis_ai.eval.run_benchmark`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient

if TYPE_CHECKING:
    from osmosis_ai.config import BenchmarkConfig

ENDPOINT = "/api/cli/benchmarks"
RUNS_ENDPOINT = "/api/cli/benchmark-runs"
#: The platform's task sets (a local run takes a folder instead).
PLATFORM_TASK_SETS = ("parity",)
COLUMNS = [
    Column("key", "Key"),
    Column("name", "Name"),
    Column("task_count", "Tasks"),
    Column("last_run_status", "Last run"),
    Column("run_count", "Runs"),
]
RUN_COLUMNS = [
    Column("name", "Name"),
    Column("status", "Status"),
    Column("benchmark_name", "Benchmark"),
    Column("agent_count", "Agents"),
    Column("best_pass_at_1", "Best pass@1"),
    Column("created_at", "Created"),
]
TIE_NOTE = "* tied for first (its 95 % interval overlaps the leader's)"


def _pct(value: Any) -> str:
    return f"{float(value) * 100:.1f}%" if isinstance(value, int | float) else "-"


def leaderboard_lines(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per agent (``#1* agent  pass@1 83.3% (61.0-100.0%)  pass@2 100.0%``), then the
    tie note when any agent is tied for first."""
    lines = []
    for entry in entries:
        rank = f"#{entry['rank']}" if isinstance(entry.get("rank"), int) else "-"
        rank += "*" if entry.get("tied") else ""
        p1 = entry.get("pass_at_1") or {}
        text = f"{rank:<5} {entry.get('agent') or entry.get('model') or '-'}  pass@1 {_pct(p1.get('value'))}"
        if p1.get("ci_low") is not None:
            text += f" ({_pct(p1.get('ci_low'))}-{_pct(p1.get('ci_high'))})"
        points = [p for p in entry.get("pass_at_k") or [] if isinstance(p, dict)]
        if points and points[-1].get("k", 1) > 1:
            text += f"  pass@{points[-1]['k']} {_pct(points[-1].get('value'))}"
        lines.append(text)
    if any(entry.get("tied") for entry in entries):
        lines.append(TIE_NOTE)
    return lines


def list_benchmarks(output: Output, *, limit: int, offset: int, all_pages: bool) -> None:
    from osmosis_cli.platform.listing import Listing

    Listing(
        ENDPOINT,
        COLUMNS,
        plain=lambda b: f"{b.get('key')}\t{b.get('name')}\t{b.get('task_count')}",
        title="Benchmarks",
        empty="No benchmarks in this workspace.",
    ).emit(output, limit=limit, offset=offset, all_pages=all_pages)
    output.progress("Leaderboard, task sets and runs: osmosis benchmark info KEY")


def show_benchmark(key: str, output: Output, *, limit: int, all_pages: bool) -> None:
    """A benchmark's metadata, task sets, leaderboard and (a page of, or ``--all``) its runs."""
    from osmosis_cli.platform.listing import MAX_PAGES, fetch_page

    client = PlatformClient.from_login()
    try:
        bench = client.request("GET", f"{ENDPOINT}/{quote(key, safe='')}")
    except CLIError as error:
        if error.code is CLIErrorCode.NOT_FOUND:
            raise CLIError(
                CLIErrorCode.NOT_FOUND,
                f"No benchmark {key!r} in this workspace. See 'osmosis benchmark list' for keys.",
                details={"benchmark": key, **error.details},
            ) from None
        raise
    if not isinstance(bench, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no benchmark.")
    params = {"benchmark": bench.get("id") or key}
    page = fetch_page(client, RUNS_ENDPOINT, limit=limit, offset=0, params=params)
    runs = [r for r in page["items"] if isinstance(r, dict)]
    pages = 1
    while all_pages and page.get("has_more") and isinstance(page.get("next_offset"), int):
        if pages >= MAX_PAGES:
            break
        page = fetch_page(
            client, RUNS_ENDPOINT, limit=limit, offset=page["next_offset"], params=params
        )
        runs.extend(r for r in page["items"] if isinstance(r, dict))
        pages += 1
    more = page.get("next_offset") if page.get("has_more") else None
    data = {**bench, "runs": runs, "runs_next_offset": more}
    if output.is_json:
        output.emit_detail(data)
        return
    summary = {k: v for k, v in bench.items() if k not in ("leaderboard", "tasks", "categories")}
    summary["task_sets"] = [
        f"{s.get('name')} ({s.get('task_count')}{', recommended' if s.get('recommended') else ''})"
        for s in bench.get("task_sets") or []
        if isinstance(s, dict)
    ]
    output.emit_detail(summary, title=f"Benchmark {bench.get('key') or key}")
    entries = [e for e in bench.get("leaderboard") or [] if isinstance(e, dict)]
    output.emit_message("Leaderboard:")
    for line in leaderboard_lines(entries) or ["No finished runs with scores yet."]:
        output.emit_message(f"  {line}")
    output.emit_message(f"Runs ({len(runs)}{'+' if more is not None else ''}):")
    for run in runs:
        output.emit_message(f"  {run.get('name')}  {run.get('status')}  {run.get('created_at')}")
    if more is not None:
        output.progress("More runs: --all")


def load_config(path: Path) -> BenchmarkConfig:
    from osmosis_ai.config import ConfigError, load_benchmark_config

    try:
        return load_benchmark_config(path)
    except ConfigError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, exc.render(), details=exc.as_details()) from None


def submit(path: Path, output: Output, *, yes: bool, secrets_file: str | None) -> None:
    """``benchmark submit CONFIG``: validate, resolve the secrets, summarise, confirm, POST."""
    from osmosis_cli.platform.secrets import resolve_secrets

    config = load_config(path)
    task_set = config.tasks.task_set
    if task_set is not None and task_set not in PLATFORM_TASK_SETS:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"[tasks] task_set = {task_set!r}: the platform knows the task sets "
            f"{', '.join(PLATFORM_TASK_SETS)} (a folder of tasks is for 'osmosis benchmark "
            "run'); remove task_set to run every task, or use task_names / categories.",
            details={"key": "tasks.task_set"},
        )
    for index, agent in enumerate(config.agents):
        model = agent.model
        if model.type in ("provider", "endpoint") and not model.api_key_secret:
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"agents[{index}].model.api_key_secret: the platform needs the model's key; "
                'name a secret (e.g. api_key_secret = "OPENAI_API_KEY").',
                details={"key": f"agents[{index}].model.api_key_secret"},
            )
    client = PlatformClient.from_login()
    secrets = resolve_secrets(config.required_secrets, secrets_file=secrets_file, output=output)
    agents = [agent.label(i) for i, agent in enumerate(config.agents)]
    summary = {
        "Platform": client.base_url,
        "Benchmark": config.experiment.benchmark,
        "Tasks": config.tasks.task_set
        or config.tasks.task_names
        or config.tasks.categories
        or "all",
        "Agents": agents,
        "Attempts per task": config.execution.attempts_per_task,
        "Secrets": [f"{n} ({secrets.sources[n]})" for n in config.required_secrets] or None,
    }
    if not output.is_json:
        output.emit_detail(summary, title="Benchmark run")
    if not output.confirm(f"Submit this benchmark run to {client.base_url}?", assume_yes=yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Submission cancelled; nothing was sent.")
    body = config.platform_body()
    body["secrets"] = {"required": config.required_secrets, "provided": secrets.values}
    run = client.request("POST", RUNS_ENDPOINT, json=body, redact=secrets.values.values())
    if not isinstance(run, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no benchmark run.")
    name = run.get("name") or run.get("id")
    output.emit_operation(
        "benchmark.submit",
        message=f"Submitted benchmark run {name} ({run.get('status')}, "
        f"{run.get('task_count')} tasks).",
        resource={
            k: run.get(k)
            for k in ("id", "name", "status", "benchmark_name", "task_count", "created_at", "url")
        },
        lines=[f"url: {run['url']}"] if run.get("url") else [],
        next_steps=[f"osmosis benchmark runs info {name}"],
    )


def run_local(
    path: Path,
    output: Output,
    *,
    name: str | None,
    output_dir: Path | None,
    secrets_file: str | None,
) -> None:
    """``benchmark run CONFIG``: the TOML run locally, then the leaderboard."""
    from osmosis_ai.errors import ConfigurationError
    from osmosis_ai.eval import run_benchmark
    from osmosis_cli.platform.secrets import resolve_secrets

    config = load_config(path)
    secrets = resolve_secrets(config.required_secrets, secrets_file=secrets_file, output=output)
    execution = config.execution
    if execution.judge_model or execution.judge_api_key_secret:
        output.warn(
            "JUDGE_NOT_USED_LOCALLY",
            "[execution] judge_model/judge_api_key_secret apply on the platform; locally each "
            "Harbor task's own verifier decides the reward",
        )
    if execution.timeout_multiplier not in (None, 1.0):
        output.warn(
            "TIMEOUT_MULTIPLIER_NOT_USED_LOCALLY",
            "[execution] timeout_multiplier applies on the platform; locally the tasks' own "
            "timeouts (task.toml) apply",
        )

    def on_agent(label: str, index: int, count: int) -> None:
        output.progress(f"Agent {index + 1}/{count}: {label}")

    try:
        result = run_benchmark(
            config, name=name, output_dir=output_dir, secrets=secrets.values, on_agent=on_agent
        )
    except ConfigurationError as exc:
        raise CLIError(CLIErrorCode.VALIDATION, str(exc)) from None
    data = result.as_dict()
    lines = leaderboard_lines(data["leaderboard"])
    lines.append(f"report: {result.html_path}")
    output.emit_operation(
        "benchmark.run",
        message=f"Benchmark {result.benchmark}: {len(result.tasks)} tasks x "
        f"{result.attempts_per_task} attempts, {len(result.leaderboard)} agents.",
        resource=data,
        lines=lines,
        next_steps=[f"osmosis eval report {p}" for p in list(result.eval_runs.values())[:1]],
    )
