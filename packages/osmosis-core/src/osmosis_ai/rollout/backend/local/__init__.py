"""``LocalBackend``: runs rollouts in this process."""

from __future__ import annotations

from osmosis_ai.rollout.backend.local.backend import LocalBackend

__all__ = ["LocalBackend"]
