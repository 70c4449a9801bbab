"""The preflight steps in order: config, containment (both in :mod:`.target`), declared
dependencies, then one import of the entrypoint in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.preflight.dependencies import check_declared_dependencies
from osmosis_cli.preflight.report import Check, PreflightReport
from osmosis_cli.preflight.sdk_pin import LegacyPin, legacy_sdk_pins
from osmosis_cli.preflight.target import RolloutTarget

DEFAULT_IMPORT_TIMEOUT_SEC = 60.0


def run_preflight(
    target: RolloutTarget,
    *,
    timeout_sec: float = DEFAULT_IMPORT_TIMEOUT_SEC,
    local: bool = False,
) -> PreflightReport:
    """Run every step; the report holds an ``error`` check when the rollout would not start.

    ``local`` (``osmosis rollout validate``): the rollout runs in this environment, so an
    entrypoint importing a module that is not installed is an error. Without it (submit's
    best-effort rule) that is a warning: the platform installs the rollout's dependencies.

    Raises :class:`CLIError` only for failures of the preflight itself (e.g. the child process
    cannot be started); a broken rollout is a report with an error, so callers can show all of it.
    """
    report = PreflightReport(
        rollout=target.rollout_label,
        entrypoint=target.entrypoint_label,
        workspace=str(target.workspace) if target.workspace else None,
    )
    if target.config is not None:
        report.add(Check("config", "ok", f"{target.config.kind} config is valid"))
        _dataset_check(report, target)
    report.add(
        Check(
            "paths", "ok", f"{target.rollout_label}/{target.entrypoint_label} is inside the rollout"
        )
    )

    pins = legacy_sdk_pins(target.rollout_dir)
    if pins:
        report.add(_pin_check(pins, target))
    deps = check_declared_dependencies(target.rollout_dir, ignore={p.old for p in pins})
    if deps.problem:
        report.add(Check("dependencies", "warning", deps.problem))
    elif deps.unsatisfied:
        report.add(
            Check(
                "dependencies",
                "warning",
                "This environment does not satisfy the rollout's declared dependencies ("
                + "; ".join(deps.unsatisfied)
                + "), so the import check was skipped. Install them (e.g. `uv pip install -e "
                + f"{target.rollout_label}`) to run it; the rollout's own environment is "
                "checked again when it starts.",
                {"unsatisfied": deps.unsatisfied},
            )
        )
        report.add(Check("import", "skipped", "skipped: declared dependencies not installed"))
        return report
    else:
        count = len(deps.declared)
        report.add(
            Check(
                "dependencies",
                "ok",
                f"{count} declared dependenc{'y' if count == 1 else 'ies'} installed",
            )
        )

    imported = _import_check(target, timeout_sec, local=local)
    report.add(imported)
    backend = str((imported.details.get("attributes") or {}).get("backend") or "")
    if local and backend.startswith(_HARBOR_BACKEND):
        report.add(_uv_check())
    return report


_HARBOR_BACKEND = "osmosis_ai.rollout.backend.harbor."


def _pin_check(pins: list[LegacyPin], target: RolloutTarget) -> Check:
    """A 0.3 SDK pin: its code runs here, but installs would bring back the old SDK."""
    root = target.workspace or target.rollout_dir.parent
    edits = [pin.describe(root) for pin in pins]
    return Check(
        "sdk pin",
        "warning",
        f"{target.rollout_label} pins the 0.3 SDK. Its code runs unmodified on this SDK (the "
        "import check below uses this environment), but `pip install -e "
        f"{target.rollout_label}` and `osmosis eval run --isolated` would install the old "
        "osmosis-ai from that pin. Change it: "
        + "; ".join(edits)
        + " (`osmosis doctor --fix` applies it).",
        {"edits": [{"file": str(p.pyproject), "old": p.old, "new": p.new} for p in pins]},
    )


def _uv_check() -> Check:
    """The Harbor backend builds the rollout bundle with uv: without it every row would fail."""
    from osmosis_ai.uv_binary import INSTALL_HINT, UvNotFoundError, find_uv, uv_version

    needs = "the Harbor backend builds the rollout bundle with uv (every rollout would fail)"
    try:
        uv = find_uv()
    except UvNotFoundError as exc:
        return Check("uv", "error", f"{needs}: {exc}")
    try:
        version = uv_version(uv)
    except OSError as exc:
        return Check("uv", "error", f"{needs}: {exc}; reinstall it: {INSTALL_HINT}")
    return Check("uv", "ok", f"{version} ({uv}) builds the Harbor bundle", {"path": uv})


def _dataset_check(report: PreflightReport, target: RolloutTarget) -> None:
    if target.config is None or target.workspace is None:
        return
    name = target.config.experiment.dataset
    data = target.workspace / "data"
    candidates = [data / name, *(data / f"{name}{s}" for s in (".jsonl", ".csv", ".parquet"))]
    found = next((c for c in candidates if c.is_file()), None)
    if found is not None:
        report.add(_dataset_rows_check(found, found.relative_to(target.workspace).as_posix()))
    else:
        report.add(
            Check(
                "dataset",
                "warning",
                f"no local file for dataset {name!r} under data/; a local eval needs one "
                "(or --dataset), a platform run uses the platform dataset of that name",
            )
        )


def _dataset_rows_check(path: Path, shown: str) -> Check:
    """Read the local dataset as ``eval run`` would; unreadable rows or no labels warn."""
    from osmosis_ai.eval import DatasetError, load_dataset, missing_label_warning

    try:
        rows = load_dataset(path)
    except DatasetError as exc:
        return Check("dataset", "warning", f"{shown}: {exc}")
    no_label = missing_label_warning(path, rows)
    if no_label is not None:
        return Check("dataset", "warning", no_label, {"code": "NO_LABEL"})
    return Check("dataset", "ok", f"local dataset {shown} ({len(rows)} rows)")


def _import_check(target: RolloutTarget, timeout_sec: float, *, local: bool) -> Check:
    with tempfile.TemporaryDirectory(prefix="osmosis-preflight-") as tmp:
        result_path = Path(tmp) / "result.json"
        command = [
            sys.executable,
            "-m",
            "osmosis_cli.preflight.probe_child",
            str(target.rollout_dir),
            str(target.entrypoint),
            str(result_path),
        ]
        env = dict(os.environ)
        try:
            completed = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout_sec,
                env=env,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Check(
                "import",
                "error",
                f"importing {target.entrypoint_label} did not finish within {timeout_sec:g}s. "
                "Does it start a server or wait for something at import time? Keep startup "
                'under `if __name__ == "__main__":`.',
                {"timeout_sec": timeout_sec},
            )
        except OSError as exc:
            raise CLIError(
                CLIErrorCode.INTERNAL, f"could not start the preflight child process: {exc}"
            ) from exc
        if not result_path.is_file():
            tail = (completed.stderr or "").strip().splitlines()[-8:]
            return Check(
                "import",
                "error",
                f"importing {target.entrypoint_label} killed the interpreter "
                f"(exit code {completed.returncode})"
                + (":\n  " + "\n  ".join(tail) if tail else ""),
                {"exit_code": completed.returncode},
            )
        result: dict[str, Any] = json.loads(result_path.read_text(encoding="utf-8"))
    return _interpret(result, target, local=local)


def _interpret(result: dict[str, Any], target: RolloutTarget, *, local: bool = False) -> Check:
    if result.get("ok"):
        attributes = result.get("attributes") or {}
        mode = result.get("mode", "app" if attributes.get("app") else None)
        details: dict[str, Any] = {"attributes": attributes, "mode": mode}
        if attributes.get("app") is None:
            return Check(
                "import",
                "warning",
                f"{target.entrypoint_label} imports, but defines no module-level `app`"
                + (f" ({result['script_error']})" if result.get("script_error") else "")
                + "; `osmosis rollout serve` needs `app = create_rollout_server(backend=...)` "
                "(or a `main()` that calls `uvicorn.run(app, ...)`).",
                details,
            )
        if mode == "script":
            script = result.get("script") or {}
            details["script"] = script
            host = script.get("host")
            bind = (
                f"; run directly (`python {target.entrypoint_label}`) it binds {host}, "
                "reachable from other machines"
                if script.get("binds_all_interfaces")
                else (f"; run directly it binds {host}" if host else "")
            )
            return Check(
                "import",
                "ok",
                f"{target.entrypoint_label} imports; script mode: its {script.get('via')} "
                "builds the app and calls uvicorn.run (0.3.x style). `osmosis rollout serve` "
                "and `osmosis eval run` capture that app and bind it where they are told "
                "(loopback unless --host says otherwise), not where the script says"
                + bind
                + ". Module mode (`app = create_rollout_server(...)` at module level) starts "
                "faster.",
                details,
            )
        label = "exposes `app` (module mode)" if mode == "app" else "exposes `create_app()`"
        return Check("import", "ok", f"{target.entrypoint_label} imports and {label}", details)
    location = _location_label(result, target)
    if result.get("module_not_found") and local:
        missing = result.get("missing_module")
        return Check(
            "import",
            "error",
            f"{location}: {result.get('message')}: module {missing!r} is not installed in "
            "this environment. Fix the import if it is a typo, else add the package to the "
            f"rollout's pyproject.toml and install it (e.g. `uv pip install -e "
            f"{target.rollout_label}`).",
            {"missing_module": missing, "file": result.get("file"), "line": result.get("line")},
        )
    if result.get("module_not_found"):
        return Check(
            "import",
            "warning",
            f"skipped: {result.get('message')} (at {location}). Install the rollout's "
            "dependencies to check the import; it is validated again when the rollout starts.",
            {
                "missing_module": result.get("missing_module"),
                "file": result.get("file"),
                "line": result.get("line"),
            },
        )
    return Check(
        "import",
        "error",
        f"{location}: {result.get('error_type')}: {result.get('message')}",
        {
            "error_type": result.get("error_type"),
            "file": result.get("file"),
            "line": result.get("line"),
            "traceback": result.get("traceback"),
        },
    )


def _location_label(result: dict[str, Any], target: RolloutTarget) -> str:
    filename = result.get("file")
    if not filename:
        return target.entrypoint_label
    path = Path(filename)
    base = target.workspace or target.rollout_dir
    try:
        shown = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        shown = str(path)
    line = result.get("line")
    return f"{shown}:{line}" if line else shown
