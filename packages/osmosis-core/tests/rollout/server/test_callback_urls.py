"""Callback URLs are judged and split per origin: the same answers as parsing each whole URL."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from osmosis_ai.rollout.server._impl.callbacks import split_http_url
from osmosis_ai.rollout.types.protocol import callback_url_problem, url_origin

URLS = [
    "http://127.0.0.1:8000/cb/r-1/completion",
    "http://h/a?b#c",
    "http://h?x=/y#z",
    "http://h#f/g?x",
    "https://u:p@h:99/x",
    "http://[::1]:80/p",
    "http://h:/x",
    "http://u@h/x",
    "HTTP://h/x",
    "http://h",
    "http://h/%20?a=%2F",
    "http://h/ü?é#ñ",
    "x:y://h/z",
    "http:h/x",
]


@pytest.mark.parametrize("url", URLS)
def test_split_http_url_equals_urlsplit(url: str) -> None:
    assert split_http_url(url) == urlsplit(url)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://h:0/x", "its port is not valid"),
        ("http://h:abc/x", "it is not a valid URL"),
        ("https://h:65536/", "it is not a valid URL"),
        ("http://[::1/x", "it is not a valid URL"),
        ("http:///x", "it has no host"),
        ("ftp://h/x", "got scheme 'ftp'"),
        ("http://h/a b", "it contains whitespace or control characters"),
        ("http://h/a\nb", "it contains whitespace or control characters"),
        ("\t", "got an empty string"),
        ("", "got an empty string"),
        ("http://h/cb/r-7/grader?sig=1", None),
    ],
)
def test_callback_url_problem_reads_the_origin_and_the_whole_url(
    url: str, problem: str | None
) -> None:
    assert callback_url_problem(url) == problem


def test_url_origin_ends_at_the_first_delimiter() -> None:
    assert url_origin("http://h:1/p?q#f") == "http://h:1"
    assert url_origin("https://h?q/p") == "https://h"
    assert url_origin("ftp://h/p") == "ftp://h/p"  # not http(s): the whole URL
