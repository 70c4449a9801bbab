"""The controller side of the rollout protocol: admit, poll, cancel (needs only ``httpx``)."""

from __future__ import annotations

from osmosis_ai.rollout.client.client import RolloutClient
from osmosis_ai.rollout.client.errors import RolloutAdmissionTimeoutError, RolloutProtocolError
from osmosis_ai.rollout.client.handle import RolloutHandle

__all__ = [
    "RolloutAdmissionTimeoutError",
    "RolloutClient",
    "RolloutHandle",
    "RolloutProtocolError",
]
