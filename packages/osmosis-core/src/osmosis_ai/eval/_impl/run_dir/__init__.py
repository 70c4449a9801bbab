"""The run directory: layout and lock, manifest, journal, records, log, trajectories."""
