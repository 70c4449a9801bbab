"""Errors raised by :class:`~osmosis_ai.rollout.client.RolloutClient`.

They are defined once, in :mod:`osmosis_ai.errors` (under ``RolloutClientError`` and
``OsmosisError``), and re-exported here, where osmosis-ai 0.3.8 code imports them from:

* ``RolloutProtocolError(RuntimeError)``: the server answered outside the protocol (a status
  code or body it must not send); ``.status_code`` is the HTTP status, or 0 when there was none.
* ``RolloutAdmissionTimeoutError(TimeoutError)``: admission did not succeed within
  ``admission_timeout_sec``; ``__cause__`` is the ``TimeoutError`` of the expired deadline.
"""

from __future__ import annotations

from osmosis_ai.errors import RolloutAdmissionTimeoutError, RolloutProtocolError

__all__ = ["RolloutAdmissionTimeoutError", "RolloutProtocolError"]
