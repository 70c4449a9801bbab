"""The ``osmosis`` CLI under the path osmosis-ai 0.3.8 gave it (``osmosis_ai.cli.main``).

The implementation is the ``osmosis_cli`` package of the osmosis-cli distribution; this package
keeps 0.3.x code that builds on the CLI (``create_app`` / ``run_cli``) working unmodified.
"""
