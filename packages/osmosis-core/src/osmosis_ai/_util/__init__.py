"""Core's private wing: plumbing with one owner each. Internal: sibling distributions reach what
they need through :mod:`osmosis_ai.rollout.integrations.spi`, and the import-linter contracts
fence this whole package with one line.

* :mod:`.serving`: serving an ASGI app with uvicorn (config, server, in-loop, in-thread);
* :mod:`.asgi`: request body, JSON replies and the bearer rule of bare-ASGI apps;
* :mod:`.backoff`: :class:`~.backoff.Backoff` and ``Retry-After``;
* :mod:`.redaction`: the one redaction rule, mark and threshold;
* :mod:`.framing`: JSON lines to and from supervised children; :mod:`.child_process`: the
  orphan rule (``die_with_parent``);
* :mod:`.http_transport` / :mod:`.http1`: the plain-HTTP transport; :mod:`.file_lock`,
  :mod:`.group_sync`, :mod:`.jsonl`, :mod:`.model_slots`, :mod:`.tracebacks`: small helpers.

Atomic writes stay at :mod:`osmosis_ai.atomic_file` (documented, used by the CLI),
:mod:`osmosis_ai.listening_socket` stays where an older osmosis-core has it (the eval's server
child imports it there), and :mod:`osmosis_ai._lazy` stays put (every package ``__init__`` and
the spi use it).
"""
