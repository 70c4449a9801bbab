"""The library behind ``osmosis eval run``: a fully local evaluation controller.

Why a library and not command code: the Typer command is a thin shell, so that tests, benchmarks
and other tools drive exactly the same controller. The pieces, one responsibility each:

* :mod:`.plan` resolves the config and flags into a validated :class:`~.plan.EvalPlan`.
* :mod:`.dataset` reads JSONL/CSV/Parquet rows into rollout requests; :mod:`.selection` picks rows.
* :mod:`.run_layout` owns the run directory (names, paths, the exclusive lock, ``--fresh`` archive).
* :mod:`.manifest` locks a run's inputs so a resumed run cannot silently mix results.
* :mod:`.journal` is the durable, fsync'd record of finished work items (group commit).
* :mod:`.metrics` turns results into reward statistics, pass rate and unbiased pass@k.
* :mod:`.upstream` resolves ``--model``/``--base-url`` into an OpenAI-compatible endpoint.
* :mod:`.proxy` is the rollout-scoped chat-completions endpoint forwarding to that upstream.
* :mod:`.server_process` runs the rollout's server in a child process and never orphans it
  (``_server_bootstrap.py`` is what that child runs).
* :mod:`.scheduler` drives work items through ``RolloutClient`` and classifies outcomes.
* :mod:`.trajectories` adds the proxy's per-call records to the server's ATIF trajectories.
* :mod:`.run_log` writes ``logs.txt`` with secrets redacted.
* :mod:`.controller` puts it all together (:func:`~.controller.run_eval`).

Nothing here is imported by ``osmosis --help``; heavy dependencies load inside functions.
"""
