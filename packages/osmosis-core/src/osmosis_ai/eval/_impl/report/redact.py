"""The report's redactor, built from the run's manifest and the upstream key.

The same rule as the run's ``logs.txt`` (:mod:`osmosis_ai._util.redaction`): the current values
of the secrets the run declared (by name), the upstream API key (given, or read from the
variable the run took it from), URL credentials and authorization values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from osmosis_ai._util.redaction import Redactor


def run_redactor(
    run_dir: Path, *, upstream_key: str | None = None, environ: Mapping[str, str] | None = None
) -> Redactor:
    """The redactor for ``run_dir``'s report (a manifest that cannot be read gives one that
    still masks ``upstream_key``, URL credentials and authorization values)."""
    env = os.environ if environ is None else environ
    redactor = Redactor([upstream_key])
    try:
        manifest: Any = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return redactor
    inputs = manifest.get("inputs") if isinstance(manifest, dict) else None
    names = list((inputs or {}).get("secret_names") or []) if isinstance(inputs, dict) else []
    provenance = manifest.get("provenance") if isinstance(manifest, dict) else None
    request = (provenance or {}).get("request") if isinstance(provenance, dict) else None
    if isinstance(request, dict):
        names += [request.get("upstream_key_env"), request.get("api_key_env")]
    for name in names:
        if isinstance(name, str) and name:
            redactor.add(env.get(name))
    return redactor
