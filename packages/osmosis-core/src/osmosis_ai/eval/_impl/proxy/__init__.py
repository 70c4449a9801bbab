"""The policy proxy: the rollout's model calls to the upstream, recorded per call."""
