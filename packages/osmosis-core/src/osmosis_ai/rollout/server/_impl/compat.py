"""The rollout server's 0.3 compatibility, in one place.

Speaking both protocol generations is a feature, not a shim: 0.3.8 polling and 0.3.0 callbacks
are the server's protocol (:mod:`.wire`, :mod:`.delivery`). What lives here exists only so that
code and controllers written for the public 0.3 SDK keep working unmodified; each item says
what it keeps and where it is used. Delete an item here when that 0.3 behaviour is dropped.

* **0.3.8 backends** implement ``execute(request)`` (no ``progress``) and read the ambient
  context: :func:`legacy_backend` tells them apart; :func:`execute_legacy` (the backend
  module's, shared with the worker processes) runs them. Used by :mod:`.service`.
* **0.3.0 requests** carry the policy key as ``controller_api_key`` when the callback protocol is
  used: :func:`policy_api_key`. Used by :mod:`.admission`.
* **0.3.8's registry attribute**: ``app.state.rollout_futures`` is the service
  (:data:`LEGACY_STATE_ATTRIBUTE`). Used by :mod:`osmosis_ai.rollout.server.app`.
* **0.3.0's status route** ``GET /rollout/{id}/status`` (removed upstream in 0.3.8) stays, as an
  operator view: :data:`STATUS_ROUTE_SUMMARY`. Used by :mod:`osmosis_ai.rollout.server.app`.
* **0.3.8's module path** ``osmosis_ai.rollout.server.lease`` stays importable: that file is a
  facade over :mod:`.lease` (it has to be a module at that path, so it cannot live here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.backend.base import accepts_progress, execute_legacy

if TYPE_CHECKING:
    from osmosis_ai.rollout.backend.base import ExecutionBackend
    from osmosis_ai.rollout.types.protocol import RolloutInitRequest

__all__ = [
    "LEGACY_STATE_ATTRIBUTE",
    "STATUS_ROUTE_SUMMARY",
    "execute_legacy",
    "legacy_backend",
    "policy_api_key",
]

LEGACY_STATE_ATTRIBUTE = "rollout_futures"
STATUS_ROUTE_SUMMARY = "Operator view of one rollout's status (removed upstream in 0.3.8)"


def legacy_backend(backend: ExecutionBackend) -> bool:
    """Whether ``backend`` is a 0.3.8 backend: ``execute(request)`` without ``progress``."""
    return not accepts_progress(backend)


def policy_api_key(request: RolloutInitRequest, callbacks: bool) -> str | None:
    """The key for the policy endpoint: ``llm_api_key``; in the 0.3.0 callback protocol, else
    the ``controller_api_key`` (0.3.0 controllers sent only that one)."""
    api_key = request.llm_api_key
    if api_key is None and callbacks:
        api_key = request.controller_api_key
    return api_key
