"""The rollout server's internals: one private package, fenced from other distributions.

Nothing here is public API. The public server is :mod:`osmosis_ai.rollout.server`
(``create_rollout_server``, ``serve`` and the ``DEFAULT_*`` constants), its 0.3 module path
:mod:`osmosis_ai.rollout.server.app`, :mod:`osmosis_ai.rollout.server.serving` (documented:
``uvicorn_config``) and :mod:`osmosis_ai.rollout.server.lease` (a facade kept for old code; the
server's compatibility shims are all in :mod:`.compat`).
Sibling distributions (the CLI, the integrations, Harbor) must not import this package; one
import-linter line in the root ``pyproject.toml`` forbids it and
``tests/test_private_fences.py`` fails on any private module left unfenced.

Layout: :mod:`.service` (the lifecycle owner) with :mod:`.admission`, :mod:`.polling` and
:mod:`.drain`; :mod:`.entry` and :mod:`.retention` (what is kept per rollout);
:mod:`.delivery`, :mod:`.callbacks` and :mod:`.outbox` (getting results out, durably);
:mod:`.fastpath`, :mod:`.wire`, :mod:`.auth`, :mod:`.openapi`, :mod:`.connections` and
:mod:`.coalesce` (HTTP); :mod:`.settings` (validated options); :mod:`.heap` (GC tuning);
:mod:`.workers` (worker processes behind one protocol loop).
"""
