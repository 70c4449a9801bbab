"""``LocalBackend``: runs rollouts in this process."""

from __future__ import annotations

from osmosis_ai.rollout.backend.local.backend import LocalBackend
from osmosis_ai.rollout.backend.local.loading import share_in_config_copies

__all__ = ["LocalBackend", "share_in_config_copies"]
