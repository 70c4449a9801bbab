"""``osmosis_ai.cli.main``: the CLI's entry point and composition API, as in osmosis-ai 0.3.8.

``create_app()`` builds an independent, extensible root holding every osmosis command;
``run_cli(app, argv)`` runs it with the CLI's output modes, envelopes and exit codes; ``main()``
is the ``osmosis`` console script. See :mod:`osmosis_cli.composition`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from osmosis_cli.composition import create_app, run_cli


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``osmosis`` on ``argv`` (default: ``sys.argv[1:]``) and return its exit code."""
    from osmosis_cli.main import run

    return run(list(sys.argv[1:] if argv is None else argv))


__all__ = ["create_app", "main", "run_cli"]
