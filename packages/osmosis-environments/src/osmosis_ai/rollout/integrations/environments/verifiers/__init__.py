"""verifiers environments as osmosis environments (``pip install 'osmosis-ai[verifiers]'``).

``verifiers:<module>?<load_environment arguments>``; see :mod:`.adapter` and
docs/guides/verifiers.md. Importing this package does not import verifiers.
"""

from __future__ import annotations

from .adapter import SOURCE, VerifiersGrader, VerifiersSource, VerifiersWorkflow

__all__ = ["SOURCE", "VerifiersGrader", "VerifiersSource", "VerifiersWorkflow"]
