"""Where the platform is and where the CLI keeps its own files."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from osmosis_cli.errors import CLIError, CLIErrorCode

DEFAULT_PLATFORM_URL = "https://platform.osmosis.ai"
ENV_PLATFORM_URL = "OSMOSIS_PLATFORM_URL"
ENV_ALLOW_INSECURE = "OSMOSIS_ALLOW_INSECURE_PLATFORM_URL"


def platform_url() -> str:
    """``OSMOSIS_PLATFORM_URL`` (default the hosted platform), without a trailing slash.

    Tokens travel in headers, so plain ``http`` is refused except to this machine, unless
    ``OSMOSIS_ALLOW_INSECURE_PLATFORM_URL=1``.
    """
    url = (os.environ.get(ENV_PLATFORM_URL) or DEFAULT_PLATFORM_URL).strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{ENV_PLATFORM_URL}={url!r} is not an http(s) URL, e.g. https://platform.osmosis.ai",
            details={"platform_url": url},
        )
    from osmosis_ai.rollout.server.serving import is_loopback_host

    insecure = parts.scheme == "http" and not is_loopback_host(parts.hostname)
    if insecure and os.environ.get(ENV_ALLOW_INSECURE) != "1":
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Refusing to send credentials over plain http to {url}. Use https, or set "
            f"{ENV_ALLOW_INSECURE}=1 if you really mean it.",
            details={"platform_url": url},
        )
    return url


def config_dir() -> Path:
    """``OSMOSIS_CONFIG_DIR``, else ``OSMOSIS_HOME``, else ``~/.osmosis``."""
    for var in ("OSMOSIS_CONFIG_DIR", "OSMOSIS_HOME"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser()
    return Path.home() / ".osmosis"
