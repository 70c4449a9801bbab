"""content_text: the one reading of a chat message's text."""

from __future__ import annotations

from osmosis_ai.rollout.types.messages import content_text


def test_string_and_none() -> None:
    assert content_text("hello") == "hello"
    assert content_text(None) == ""


def test_text_parts_are_joined_and_non_text_parts_skipped() -> None:
    content = [{"type": "text", "text": "a"}, "b", {"type": "image_url", "image_url": {"url": "u"}}]
    assert content_text(content) == "a\nb"


def test_non_text_parts_kept_as_json_when_asked() -> None:
    content = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}]
    assert content_text(content, keep_non_text=True) == (
        'a\n{"type": "image_url", "image_url": {"url": "u"}}'
    )


def test_other_values() -> None:
    assert content_text({"k": 1}) == "{'k': 1}"
    assert content_text({"k": 1}, keep_non_text=True) == '{"k": 1}'
    assert content_text(b"raw") == "b'raw'"
