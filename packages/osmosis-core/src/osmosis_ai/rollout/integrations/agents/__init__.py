"""Agent-framework integrations, each shipped by its own distribution:

==============================================  ======================================
import path                                     install
==============================================  ======================================
``osmosis_ai.rollout.integrations.agents.strands``        ``pip install "osmosis-ai[strands]"``
``osmosis_ai.rollout.integrations.agents.openai_agents``  ``pip install "osmosis-ai[openai-agents]"``
``osmosis_ai.rollout.integrations.agents.pydantic_ai``    ``pip install "osmosis-ai[pydantic-ai]"``
``osmosis_ai.rollout.integrations.agents.langgraph``      ``pip install "osmosis-ai[langgraph]"``
``osmosis_ai.rollout.integrations.agents.adk``            ``pip install "osmosis-ai[adk]"``
==============================================  ======================================
"""

from __future__ import annotations

import pkgutil

from osmosis_ai.rollout.optional_imports import install_missing_extra_hints

__path__ = pkgutil.extend_path(__path__, __name__)
install_missing_extra_hints()
# As in osmosis-ai 0.3.8: import each framework's integration explicitly; nothing re-exported.
__all__: list[str] = []
