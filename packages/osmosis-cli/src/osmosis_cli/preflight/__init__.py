"""The rollout preflight (``osmosis rollout validate``, and the first step of every submit).

It answers "will this rollout start?" before anyone spends GPU hours: the config is valid, the
rollout folder and entrypoint stay inside the workspace, the declared dependencies are installed,
and the entrypoint imports. The import runs in a child process with a timeout, so a rollout that
crashes, hangs or calls ``sys.exit`` at import time cannot take the CLI down with it.
"""

from osmosis_cli.preflight.report import Check, PreflightReport
from osmosis_cli.preflight.runner import run_preflight
from osmosis_cli.preflight.target import RolloutTarget, resolve_target

__all__ = ["Check", "PreflightReport", "RolloutTarget", "resolve_target", "run_preflight"]
