"""``python -m osmosis_cli`` runs the CLI (same as the ``osmosis`` script)."""

from osmosis_cli.main import main

if __name__ == "__main__":
    main()
