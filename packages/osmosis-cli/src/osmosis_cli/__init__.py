"""The osmosis command line. Import cost matters: keep this module free of heavy imports."""

__version__ = "0.1.0"
