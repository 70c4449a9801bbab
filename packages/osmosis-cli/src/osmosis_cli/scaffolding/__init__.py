"""Writing files into a workspace: templates (``template apply``), the rollout scaffold
(``rollout init``) and the workspace skeleton (``osmosis init``)."""
