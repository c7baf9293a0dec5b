"""The handler URL check (`handler_url_problem`), by example and by property: for any input it
gives a verdict (None or a reason), never an exception, and a URL it accepts is called exactly as
written by both dispatch clients."""

from __future__ import annotations

import string
from urllib.parse import urlsplit

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from yarl import URL

from app.delivery.http11 import split_url
from app.domain.handler_urls import handler_url_problem

any_text = st.text(st.characters(exclude_categories=()))
labels = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=12)
# A host whose last label is a number (decimal or 0x…) is an IPv4 address to every parser: not a name.
hosts = st.lists(labels, min_size=1, max_size=4).map(".".join).filter(
    lambda h: not (h.split(".")[-1].isdigit() or h.split(".")[-1].startswith("0x")))
path_chars = st.sampled_from(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/")
deliverable = st.builds(
    lambda scheme, host, port, path, query: f"{scheme}://{host}{port}/{path}{query}",
    st.sampled_from(["http", "https"]),
    hosts | st.ip_addresses(v=4).map(str) | st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
    st.just("") | st.integers(1, 65535).map(lambda p: f":{p}"),
    st.text(path_chars, max_size=30),
    st.just("") | st.text(path_chars | st.just("?"), min_size=1, max_size=20).map(lambda q: f"?{q}"),
)


@given(any_text | st.integers() | st.none() | st.binary())
@example("http://[::1")
@example("http://[::1]]/")
@example("http://h:1:2/")
@example("http://h%00/")
@example("http://xn--/")
@example("http://\udcff/")
@example("http://a.b.c.d.e.f.123/")
def test_any_input_gets_a_verdict(url: object) -> None:
    problem = handler_url_problem(url)
    assert problem is None or (isinstance(problem, str) and problem)


@given(deliverable)
def test_a_deliverable_url_is_called_exactly_as_written_by_both_clients(url: str) -> None:
    assert handler_url_problem(url) is None, handler_url_problem(url)
    parts = urlsplit(url)
    # The built-in client: the target is the URL after its authority, byte for byte.
    origin, target = split_url(url)
    assert url == f"{parts.scheme}://{parts.netloc}{target}"
    assert origin.host == parts.hostname
    # aiohttp is given URL(url, encoded=True): nothing re-encoded, lower-cased or dropped.
    yarl_url = URL(url, encoded=True)
    assert yarl_url.raw_path_qs == target and str(yarl_url) == url.replace(f":{_default(parts.scheme)}/", "/", 1)


def _default(scheme: str) -> int:
    return 443 if scheme == "https" else 80


@given(any_text)
def test_an_accepted_url_is_printable_ascii_without_user_info_or_fragment(url: str) -> None:
    if handler_url_problem(url) is None:
        assert url.isascii() and url.isprintable() and " " not in url
        assert "#" not in url and "@" not in urlsplit(url).netloc
        assert urlsplit(url).scheme in ("http", "https") and urlsplit(url).hostname


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/jobs",
    "https://example.com/hook",
    "http://xn--bcher-kva.example/%C3%BC?q=%E2%82%AC",
    "http://[::ffff:127.0.0.1]:80/x",
    "http://my_service:8080",
    "http://h?x=1",
])
def test_deliverable_urls(url: str) -> None:
    assert handler_url_problem(url) is None


@pytest.mark.parametrize(("url", "says"), [
    ("http://user:pw@h/", "user-info"),
    ("http://h/#top", "fragment"),
    ("javascript:alert(1)", "http:// or https://"),
    ("http://", "no host"),
    ("http://bücher.example/", "'xn--bcher-kva.example'"),
    ("http://ex\u00a0ample.com/", "internationalised"),  # a no-break space is no IDNA host
    ("http://h/ü", "%C3%BC"),
    ("http://h/\x00", "control character"),
    ("http://0177.0.0.1/", "a.b.c.d"),
    ("http://h/%", "two hex digits"),
    ("http://h/" + "a" * 2048, "limit is 2048"),
])
def test_undeliverable_urls(url: str, says: str) -> None:
    assert says in (handler_url_problem(url) or "")
