"""The one redaction rule (:mod:`osmosis_ai._util.redaction`)."""

from __future__ import annotations

import pytest

from osmosis_ai._util.redaction import MARK, MIN_SECRET_LENGTH, Redactor, mask_url, redact


@pytest.mark.parametrize("secret", ["Qz7w", "Jx3Kv", "sk-8char", "sk-very-long-secret-123"])
def test_given_secrets_of_four_characters_or_more_are_masked(secret: str) -> None:
    assert redact(f"<{secret}>", [secret]) == f"<{MARK}>"


@pytest.mark.parametrize("secret", ["x", "ab", "key"])
def test_shorter_values_are_left_alone_so_ordinary_text_is_not_rewritten(secret: str) -> None:
    assert len(secret) < MIN_SECRET_LENGTH
    text = f"exit: the {secret} key was used"
    assert redact(text, [secret]) == text


def test_longest_first_so_a_secret_inside_another_is_not_half_revealed() -> None:
    assert redact("x abcdefgh y", ["abcd", "abcdefgh"]) == f"x {MARK} y"


def test_none_and_empty_are_ignored() -> None:
    assert Redactor([None, ""]).secrets == ()
    assert redact("plain text", [None, ""]) == "plain text"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET https://alice:pa55@host/v1 ok", f"GET https://{MARK}@host/v1 ok"),
        ("url=http://h/v1?api_key=abc123&x=1", f"url=http://h/v1?api_key={MARK}&x=1"),
        ("u http://h/?token=t0k3n end", f"u http://h/?token={MARK} end"),
        ("Authorization: Bearer sk-abc.def", f"Authorization: Bearer {MARK}"),
        ("Authorization: Basic YWxpY2U6cGFzcw==", f"Authorization: Basic {MARK}"),
        ("no credentials here", "no credentials here"),
    ],
)
def test_url_credentials_and_authorization_values_are_masked(text: str, expected: str) -> None:
    assert Redactor()(text) == expected


def test_mask_url_masks_userinfo_and_query() -> None:
    assert mask_url("https://u:p@host/v1?api_key=k") == f"https://{MARK}@host/v1?{MARK}"
    assert mask_url("http://host/v1") == "http://host/v1"


def test_bytes_are_masked_for_given_secrets_only() -> None:
    redactor = Redactor(["Qz7w"])
    assert redactor.redact_bytes(b"\x00Qz7w\xff Bearer x") == b"\x00***\xff Bearer x"


def test_a_secret_is_masked_in_every_form_an_echo_carries_it() -> None:
    import html
    import json
    from urllib.parse import quote, quote_plus

    from osmosis_ai._util.redaction import Redactor

    secret = 'k"y\\é /+&<4'
    redactor = Redactor([secret])
    for form in (
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
        repr(secret)[1:-1],
        html.escape(secret),
        json.dumps(json.dumps(secret)[1:-1])[1:-1],
    ):
        assert redactor(f"echo: {form} end") == "echo: *** end", form


def test_process_credentials_come_from_credential_named_variables_only() -> None:
    from osmosis_ai._util.redaction import env_secrets, url_secrets

    env = {
        "OPENAI_API_KEY": "Zq7x",
        "HF_TOKEN": "hf_abcdef",
        "USE_AUTH": "true",  # a flag, not a secret: masking it would rewrite JSON
        "MAX_TOKENS_PER_KEY": "4096",
        "SSH_AUTH_SOCK": "/tmp/agent.1",
        "HOME": "/root",
        # a bare KEY/PASS name is as often a setting: its value counts only when key-like
        "SORT_KEY": "name",
        "PRIMARY_KEY": "created_at",
        "BYPASS": "proxy",
        "STRIPE_KEY": "rk_live_51Hx9",
        "_OSMOSIS_REDACT_VALUES": '["from-the-parent"]',
    }
    assert sorted(env_secrets(env)) == ["Zq7x", "from-the-parent", "hf_abcdef", "rk_live_51Hx9"]
    found = url_secrets("http://bob:pw%21x@h/v1?key=Zq7xW&api-version=2024")
    assert {"pw!x", "pw%21x", "Zq7xW", "Ym9iOnB3IXg="} <= set(found)
