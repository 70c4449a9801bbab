"""Already-running rollout servers (``--servers``): addresses, capacity, one client each."""
