"""Reading and stopping platform runs: ``list``, ``info``, ``stop`` for eval and training runs.

Submitting is :mod:`osmosis_cli.platform.runs`; logs are :mod:`osmosis_cli.platform.run_logs`;
downloads are :mod:`osmosis_cli.platform.run_download`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from osmosis_ai.atomic_file import write_atomic
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient

Kind = Literal["eval", "training", "benchmark"]
ENDPOINTS: dict[Kind, str] = {
    "eval": "/api/cli/eval-runs",
    "training": "/api/cli/training-runs",
    "benchmark": "/api/cli/benchmark-runs",
}
COMMANDS: dict[Kind, str] = {"eval": "eval", "training": "train", "benchmark": "benchmark runs"}
TERMINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})
RUN_COLUMNS = [
    Column("id", "ID"),
    Column("name", "Name"),
    Column("status", "Status"),
    Column("model_name", "Model"),
    Column("dataset_name", "Dataset"),
    Column("created_at", "Created"),
]


def run_path(kind: Kind, run: str, *rest: str) -> str:
    """``/api/cli/eval-runs/<run>[/rest...]`` with the id or name URL-encoded."""
    return "/".join([ENDPOINTS[kind], quote(run, safe=""), *rest])


def label(kind: Kind) -> str:
    return {"eval": "eval", "training": "training", "benchmark": "benchmark"}[kind]


def list_runs(kind: Kind, output: Output, *, limit: int, offset: int, all_pages: bool) -> None:
    from osmosis_cli.platform.listing import Listing

    Listing(
        ENDPOINTS[kind],
        RUN_COLUMNS,
        plain=lambda r: f"{r.get('id')}\t{r.get('name')}\t{r.get('status')}",
        title=f"{label(kind).capitalize()} runs",
        empty="No runs yet.",
    ).emit(output, limit=limit, offset=offset, all_pages=all_pages)


def fetch_run(kind: Kind, run: str, client: PlatformClient) -> dict[str, Any]:
    data = client.request("GET", run_path(kind, run))
    if not isinstance(data, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no run.")
    return data


def show_run(
    kind: Kind, run: str, output: Output, *, out: Path | None = None, overwrite: bool = False
) -> None:
    """Print a run, or with ``out`` write it as JSON to that file (atomically)."""
    data = fetch_run(kind, run, PlatformClient.from_login())
    if out is None:
        output.emit_detail(data, title=f"Run {data.get('name') or run}")
        return
    import json

    write_output_file(out, json.dumps(data, indent=2, ensure_ascii=False) + "\n", overwrite)
    output.emit_operation(
        f"{COMMANDS[kind].replace(' ', '.')}.info",
        message=f"Wrote {label(kind)} run {data.get('name') or run} to {out}.",
        resource={"id": data.get("id"), "name": data.get("name"), "path": str(out)},
    )


def write_output_file(out: Path, text: str, overwrite: bool) -> None:
    """Write ``text`` to ``out`` (a file the user named with ``--output``) atomically, creating
    its folder; an existing file is replaced only with ``--overwrite`` (else a CONFLICT error
    that says so)."""
    if out.exists() and not overwrite:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"{out} already exists. Pass --overwrite to replace it.",
            details={"path": str(out), "flags": ["--overwrite"]},
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)


def stop_run(kind: Kind, run: str, output: Output, *, yes: bool) -> None:
    """Ask the platform to stop a run (after a confirmation unless ``yes``)."""
    client = PlatformClient.from_login()
    current = fetch_run(kind, run, client)
    name = current.get("name") or run
    if current.get("status") in TERMINAL_STATUSES:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"The {label(kind)} run {name} already ended ({current.get('status')}); "
            "there is nothing to stop.",
            details={"id": current.get("id"), "status": current.get("status")},
        )
    if not output.confirm(f"Stop the {label(kind)} run {name}?", assume_yes=yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Not stopped; nothing was sent.")
    stopped = client.request("POST", run_path(kind, str(current.get("id") or run), "stop"))
    stopped = stopped if isinstance(stopped, dict) else current
    output.emit_operation(
        f"{COMMANDS[kind].replace(' ', '.')}.stop",
        message=f"Stopping {label(kind)} run {name} ({stopped.get('status')}).",
        resource={k: stopped.get(k) for k in ("id", "name", "status", "updated_at")},
        next_steps=[f"osmosis {COMMANDS[kind]} logs {name} --follow"],
    )


def retry_eval_run(run: str, output: Output, *, yes: bool, secrets_file: str | None) -> None:
    """``eval retry NAME``: re-run a finished eval run's failed and skipped samples.

    The run's own secrets (``secret_names`` on the run: values it was given at submit time are
    never stored) are asked for again, from ``--secrets-file``, the environment or a prompt.
    """
    from osmosis_cli.platform.secrets import resolve_secrets

    client = PlatformClient.from_login()
    current = fetch_run("eval", run, client)
    name = current.get("name") or run
    if current.get("status") not in TERMINAL_STATUSES:
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"The eval run {name} is still {current.get('status')}; retry it once it has "
            f"ended (or stop it: osmosis eval stop {name}).",
            details={"id": current.get("id"), "status": current.get("status")},
        )
    names = [str(n) for n in current.get("secret_names") or [] if isinstance(n, str)]
    secrets = resolve_secrets(names, secrets_file=secrets_file, output=output) if names else None
    if not output.confirm(f"Retry the failed and skipped samples of {name}?", assume_yes=yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Not retried; nothing was sent.")
    body = {"secrets": secrets.values} if secrets else {}
    retried = client.request(
        "POST",
        run_path("eval", str(current.get("id") or run), "retry"),
        json=body,
        redact=list(secrets.values.values()) if secrets else [],
    )
    retried = retried if isinstance(retried, dict) else current
    count = retried.get("retryable_samples")
    what = (
        f"{count} failed and skipped sample{'s' if count != 1 else ''}"
        if isinstance(count, int) and count > 0
        else "the whole run (no sample was recorded)"
    )
    output.emit_operation(
        "eval.retry",
        message=f"Retrying {what} of eval run {name} ({retried.get('status')}).",
        resource={
            k: retried.get(k)
            for k in ("id", "name", "status", "retryable_samples", "url", "updated_at")
        },
        next_steps=[f"osmosis eval logs {name} --follow"],
    )
