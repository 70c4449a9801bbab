"""Integrations with agent frameworks; each lives in its own distribution."""

from __future__ import annotations

import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
