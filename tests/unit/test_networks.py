"""JOBWIRE_HANDLER_NETWORKS (the policy: keywords, CIDRs, the classes never called, IPv4 carried
in IPv6) and the handler URL check, by example and by property: for any input each gives a
verdict (a policy or InvalidNetworks; True or False; None or a reason), never another exception."""

from __future__ import annotations

import ipaddress
import string
from urllib.parse import urlsplit

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from yarl import URL

from app.config import Settings
from app.domain.networks import (
    ANY_NETWORK,
    InvalidNetworks,
    NetworkPolicy,
    address_class,
    handler_url_problem,
    judged,
    parse_networks,
)
from app.delivery.http11 import split_url
from app.main import handler_networks
from app.startup import StartupFailure

any_text = st.text(st.characters(exclude_categories=()))
addresses = st.ip_addresses()
NEVER = ["0.0.0.0", "0.1.2.3", "::", "169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0", "224.0.0.1",
         "239.255.255.250", "ff02::1", "255.255.255.255", "::ffff:169.254.169.254", "::ffff:0.0.0.0",
         "64:ff9b::a9fe:a9fe", "100.100.100.200", "fd00:ec2::254"]
POLICIES = ["any", "private", "public", "loopback", "0.0.0.0/0", "::/0", "any,private,public,loopback,10.0.0.0/8"]


# -- the policy ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("address", "any_", "private", "public", "loopback"), [
    ("127.0.0.1", True, True, False, True),
    ("127.255.0.9", True, True, False, True),
    ("::1", True, True, False, True),
    ("10.1.2.3", True, True, False, False),
    ("172.16.0.1", True, True, False, False),
    ("172.32.0.1", True, False, True, False),
    ("192.168.1.1", True, True, False, False),
    ("100.64.0.1", True, True, False, False),
    ("fd12::1", True, True, False, False),
    ("8.8.8.8", True, False, True, False),
    ("2606:4700::1111", True, False, True, False),
    ("192.0.2.1", True, False, False, False),  # documentation: neither private nor public
    ("::ffff:127.0.0.1", True, True, False, True),  # mapped: judged as 127.0.0.1
    ("::ffff:8.8.8.8", True, False, True, False),
    ("64:ff9b::808:808", True, False, True, False),  # NAT64 of 8.8.8.8
])
def test_each_keyword_allows_its_addresses(address: str, any_: bool, private: bool, public: bool,
                                           loopback: bool) -> None:
    verdicts = [parse_networks(k).allows(address) for k in ("any", "private", "public", "loopback")]
    assert verdicts == [any_, private, public, loopback]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("address", NEVER)
def test_the_never_called_classes_are_refused_whatever_the_keywords_and_broad_cidrs_say(
        policy: str, address: str) -> None:
    networks = parse_networks(policy)
    assert not networks.allows(address)
    assert "never called unless a CIDR" in (networks.refusal(address) or "")


@pytest.mark.parametrize(("policy", "allowed", "still_refused"), [
    ("public,169.254.169.254/32", "169.254.169.254", "169.254.169.253"),
    ("169.254.0.0/16", "169.254.1.2", "fe80::1"),
    ("fe80::/10", "fe80::1", "169.254.169.254"),
    ("private,::ffff:169.254.169.254/128", "169.254.169.254", "169.254.169.1"),  # a mapped CIDR is IPv4's
    ("224.0.0.0/4", "224.0.0.1", "255.255.255.255"),
    ("0.0.0.0/32", "0.0.0.0", "0.0.0.1"),
])
def test_a_cidr_inside_a_never_called_class_names_it(policy: str, allowed: str, still_refused: str) -> None:
    networks = parse_networks(policy)
    assert networks.allows(allowed) and networks.allows(ipaddress.ip_address(allowed))
    assert not networks.allows(still_refused)


def test_mapped_addresses_are_judged_as_their_ipv4_address() -> None:
    assert judged(ipaddress.ip_address("::ffff:169.254.169.254")) == ipaddress.ip_address("169.254.169.254")
    assert address_class(ipaddress.ip_address("::ffff:10.0.0.1")) == "private"
    assert parse_networks("::ffff:10.0.0.0/104").networks == (ipaddress.ip_network("10.0.0.0/8"),)
    assert parse_networks("10.0.0.0/8").allows("::ffff:10.9.9.9")
    assert "(as 127.0.0.1) is loopback" in (parse_networks("public").refusal("::ffff:127.0.0.1") or "")


def test_the_default_is_any_and_blank_means_the_default() -> None:
    assert Settings().handler_networks == "any"
    for text in ("any", "", " , ", "ANY"):
        assert parse_networks(text) == ANY_NETWORK
    assert parse_networks("public, 10.0.0.0/8,public").text == "public,10.0.0.0/8"


@pytest.mark.parametrize(("text", "says"), [
    ("publik", "unknown keyword 'publik'"),
    ("internal", "unknown keyword"),
    ("10.0.0.1/8", "did you mean 10.0.0.0/8?"),
    ("10/8", "is not a CIDR"),
    ("10.0.0.0/33", "is not a CIDR"),
    ("fe80::/129", "is not a CIDR"),
    ("any;private", "unknown keyword"),
])
def test_an_unknown_keyword_or_a_bad_cidr_is_refused_at_start_up_naming_the_setting(text: str, says: str) -> None:
    with pytest.raises(InvalidNetworks, match=says.replace("?", r"\?")):
        parse_networks(text)
    with pytest.raises(StartupFailure) as failure:
        handler_networks(Settings(handler_networks=text))
    assert failure.value.setting == "JOBWIRE_HANDLER_NETWORKS" and says in failure.value.cause


@given(any_text)
@example("0.0.0.0/0,::/0")
@example("::ffff:0:0/96")
@example("64:ff9b::/96")
@example("fe80::%eth0/64")
def test_any_setting_parses_or_is_refused_as_invalid(text: str) -> None:
    try:
        policy = parse_networks(text)
    except InvalidNetworks:
        return
    assert isinstance(policy, NetworkPolicy)
    assert parse_networks(policy.text) == policy  # what it says is what it is


@given(st.sampled_from(POLICIES + ["10.0.0.0/8,fe80::/10", "public,169.254.0.0/16"]),
       addresses | any_text | st.integers() | st.none())
def test_any_address_gets_a_verdict_and_a_refusal_exactly_when_it_is_refused(policy: str, address: object) -> None:
    networks = parse_networks(policy)
    verdict = networks.allows(address)
    assert isinstance(verdict, bool)
    assert (networks.refusal(address) is None) == verdict


@given(st.sampled_from(POLICIES), st.ip_addresses(v=4))
def test_an_ipv4_address_and_its_mapped_form_get_the_same_verdict(policy: str, address: ipaddress.IPv4Address) -> None:
    networks = parse_networks(policy)
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    assert networks.allows(mapped) == networks.allows(address) == networks.allows(str(mapped))


@given(st.sampled_from(["any", "private", "public", "loopback"]),
       st.sampled_from(["169.254.0.0/16", "fe80::/10", "224.0.0.0/4", "ff00::/8", "0.0.0.0/8"]).flatmap(
           lambda cidr: st.ip_addresses(network=cidr)))
def test_no_keyword_ever_allows_a_never_called_address(policy: str, address: object) -> None:
    assert not parse_networks(policy).allows(address)


# -- the URL check ---------------------------------------------------------------------------------

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
