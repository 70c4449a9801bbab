"""``osmosis secret set | list | delete``: named secrets stored on the platform.

A value comes from an environment variable (``--env VAR``) or a hidden prompt, never from
argv (which shells keep in history and ``ps`` shows). It is sent once, in a ``PUT`` body, and
scrubbed from anything the platform answers; the CLI never prints, logs or writes it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Literal
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.listing import Listing

ENDPOINT = "/api/cli/secrets"
NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
Scope = Literal["personal", "workspace"]
COLUMNS = [
    Column("name", "Name"),
    Column("scope", "Scope"),
    Column("updated_at", "Updated"),
]


def check_name(name: str) -> None:
    if not NAME_RE.match(name):
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Secret name {name!r} is invalid: use upper-case letters, digits and '_', "
            "starting with a letter (e.g. OPENAI_API_KEY).",
            details={"name": name},
        )


def read_value(name: str, env_var: str | None, output: Output) -> str:
    """The secret's value from ``$env_var`` or a hidden prompt (a terminal is needed)."""
    if env_var is not None:
        value = os.environ.get(env_var, "")
        if not value:
            raise CLIError(
                CLIErrorCode.VALIDATION,
                f"--env {env_var}: that environment variable is not set or is empty.",
                details={"flags": ["--env"], "env": env_var},
            )
        return value
    if not output.interactive:
        raise CLIError(
            CLIErrorCode.INTERACTIVE_REQUIRED,
            f"No value for {name}: pass --env VAR to read it from an environment variable "
            "(this session is not interactive, so it cannot be asked for).",
            details={"flags": ["--env"]},
        )
    value = output.prompt_secret(f"Value for {name} (hidden)")
    if not value:
        raise CLIError(CLIErrorCode.VALIDATION, f"No value entered for {name}; nothing was sent.")
    return value


def scrub_answer(value: str) -> Callable[[str], str]:
    """What the platform's answer to a ``PUT`` may show: with the value masked (in any encoding)."""
    from osmosis_ai.rollout.integrations.spi import Redactor

    return Redactor([value])


def set_secret(name: str, output: Output, *, env_var: str | None, scope: Scope) -> None:
    check_name(name)
    value = read_value(name, env_var, output)
    client = PlatformClient.from_login()
    stored = client.request(
        "PUT",
        f"{ENDPOINT}/{quote(name, safe='')}",
        json={"value": value, "scope": scope},
        redact=[value],
    )
    stored = stored if isinstance(stored, dict) else {}
    scrubbed = scrub_answer(value)
    resource = {k: stored.get(k) for k in ("name", "scope", "created_at", "updated_at")}
    resource = {k: scrubbed(v) if isinstance(v, str) else v for k, v in resource.items()}
    resource["name"] = resource["name"] or name
    output.emit_operation(
        "secret.set",
        message=f"Stored secret {name} ({scope}).",
        resource=resource,
    )


SECRETS = Listing(
    ENDPOINT,
    COLUMNS,
    plain=lambda s: f"{s.get('name')}\t{s.get('scope')}",
    title="Secrets (names only)",
    empty="No secrets yet. Store one with 'osmosis secret set NAME --env VAR'.",
)


def list_secrets(output: Output, *, scope: str, limit: int, offset: int, all_pages: bool) -> None:
    SECRETS.emit(output, limit=limit, offset=offset, all_pages=all_pages, params={"scope": scope})


def delete_secret(name: str, output: Output, *, scope: Scope, yes: bool) -> None:
    check_name(name)
    if not output.confirm(f"Delete the {scope} secret {name}?", assume_yes=yes):
        raise CLIError(CLIErrorCode.VALIDATION, "Not deleted; nothing was sent.")
    PlatformClient.from_login().request(
        "DELETE", f"{ENDPOINT}/{quote(name, safe='')}", params={"scope": scope}
    )
    output.emit_operation(
        "secret.delete",
        message=f"Deleted the {scope} secret {name}.",
        resource={"name": name, "scope": scope},
    )
