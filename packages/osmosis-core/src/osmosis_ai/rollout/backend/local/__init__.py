"""``LocalBackend``: runs rollouts in this process."""

from __future__ import annotations

from osmosis_ai.rollout.backend.local._loading import share_in_config_copies
from osmosis_ai.rollout.backend.local.backend import LocalBackend

__all__ = ["LocalBackend", "share_in_config_copies"]
