"""``osmosis rollout deploy``: a SkyPilot fleet of rollout servers (task, launch, teardown)."""
