"""JOBWIRE_HANDLER_NETWORKS by property (hypothesis): every IPv6 spelling of an IPv4 address gets
that address's verdict, under every keyword and CIDR; any text parses or is InvalidNetworks; a CIDR
admits every address it speaks for; a verdict is exactly what the keywords' classes and the CIDRs
say. What each keyword admits is written out here as the security guide says it, not read from the code."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from hypothesis import assume, example, given
from hypothesis import strategies as st

from app.domain.address_policy import KEYWORDS, InvalidNetworks, NetworkPolicy, parse_networks
from app.domain.addresses import EMBEDDINGS, SPECIAL_PURPOSE, Address, AddressClass, Network, address_class, judged

C = AddressClass
NEVER = {C.UNSPECIFIED, C.LINK_LOCAL, C.MULTICAST, C.BROADCAST, C.CLOUD_METADATA, C.TEREDO, C.LOCAL_NAT64}
ADMITTED = {
    "any": set(C) - NEVER,
    "private": {C.PRIVATE, C.LOOPBACK},
    "public": {C.PUBLIC},
    "loopback": {C.LOOPBACK},
}
TAIL_80 = 2**80 - 1

any_text = st.text(st.characters(exclude_categories=()))


def _from_ranges(version: int) -> st.SearchStrategy[Address]:
    networks = [r.network for r in SPECIAL_PURPOSE if r.network.version == version]
    if version == 6:
        networks += [e.network for e in EMBEDDINGS]
    return st.sampled_from(networks).flatmap(lambda n: st.ip_addresses(network=n))


# Addresses anywhere, and often inside a range of the table (which a uniform draw seldom hits).
ipv4 = st.ip_addresses(v=4) | _from_ranges(4)
ipv6 = st.ip_addresses(v=6) | _from_ranges(6)

# Every IPv6 spelling of an IPv4 address, as the wire carries it.
SPELLINGS: dict[str, Callable[[IPv4Address, int], IPv6Address]] = {
    "IPv4-mapped": lambda a, _: IPv6Address(0xFFFF << 32 | int(a)),
    "IPv4-translated": lambda a, _: IPv6Address(0xFFFF << 48 | int(a)),
    "IPv4-compatible": lambda a, _: IPv6Address(int(a)),
    "NAT64": lambda a, _: IPv6Address(0x64_FF9B << 96 | int(a)),
    "6to4": lambda a, tail: IPv6Address(0x2002 << 112 | int(a) << 80 | tail),
}


def cidr_spellings(network: IPv4Network) -> list[str]:
    """An IPv4 network as a CIDR in each way the setting may write it."""
    start, bits = int(network.network_address), network.prefixlen
    return [
        str(network),
        str(IPv6Network((0xFFFF << 32 | start, 96 + bits))),
        str(IPv6Network((0xFFFF << 48 | start, 96 + bits))),
        str(IPv6Network((0x64_FF9B << 96 | start, 96 + bits))),
        str(IPv6Network((0x2002 << 112 | start << 80, 16 + bits))),
    ]


@st.composite
def settings_near(draw: st.DrawFn, near: Address | None = None) -> str:
    """A setting of keywords and CIDRs (IPv4 ones in any spelling, IPv6 ones), its CIDRs often around `near`."""
    words = draw(st.lists(st.sampled_from(KEYWORDS), max_size=2, unique=True))
    cidrs: list[str] = []
    for _ in range(draw(st.integers(0, 2))):
        centre = draw((st.just(near) if near is not None else st.nothing()) | ipv4 | ipv6)
        network = ipaddress.ip_network((centre, draw(st.integers(0, centre.max_prefixlen))), strict=False)
        spelled = cidr_spellings(network) if isinstance(network, IPv4Network) else [str(network)]
        cidrs.append(draw(st.sampled_from(spelled)))
    try:
        parse_networks(",".join(words + cidrs))
    except InvalidNetworks:  # a CIDR around :: that mixes ::1 with IPv4-compatible addresses
        return ",".join(words)
    return ",".join(words + cidrs)


def names_a_never_called_class(network: Network) -> bool:
    return any(r.kind in NEVER and r.network.version == network.version
               and network.subnet_of(r.network)  # type: ignore[arg-type]
               for r in SPECIAL_PURPOSE)


# -- every IPv6 spelling of an IPv4 address is judged as that address ---------------------------


@given(st.data(), ipv4, st.sampled_from(sorted(SPELLINGS)), st.integers(0, TAIL_80))
@example(None, IPv4Address("127.0.0.1"), "NAT64", 0)
@example(None, IPv4Address("169.254.169.254"), "6to4", 0)
def test_every_ipv6_spelling_of_an_ipv4_address_gets_that_address_verdict(
        data: st.DataObject | None, address: IPv4Address, spelling: str, tail: int) -> None:
    assume(not (spelling == "IPv4-compatible" and int(address) < 2))  # :: and ::1 are themselves
    setting = data.draw(settings_near(address)) if data is not None else "public"
    policy = parse_networks(setting)
    spelled = SPELLINGS[spelling](address, tail)
    assert judged(spelled) == address and address_class(spelled) is address_class(address)
    assert policy.allows(spelled) == policy.allows(address) == policy.allows(str(spelled))
    if not policy.allows(spelled):
        assert f"{spelled} (as {address}) is {address_class(address)}" in (policy.refusal(spelled) or "")


@given(st.sampled_from(["2001::/32", "64:ff9b:1::/48"]).flatmap(lambda n: st.ip_addresses(network=n)),
       st.data())
def test_a_carrier_that_is_not_unwrapped_is_refused_by_every_setting_that_does_not_name_it(
        address: IPv6Address, data: st.DataObject) -> None:
    policy = parse_networks(data.draw(settings_near(address)))
    named = any(address in n for n in policy.networks if names_a_never_called_class(n))
    assert policy.allows(address) == named


# -- parsing -----------------------------------------------------------------------------------

near_settings = st.lists(
    st.sampled_from(KEYWORDS).map(lambda k: k.upper() if len(k) % 2 else k) | settings_near()
    | st.builds("{}/{}".format, ipv4 | ipv6, st.integers(-1, 130)) | (ipv4 | ipv6).map(str) | any_text,
    max_size=4).map(lambda items: ",".join(items))


@given(any_text | near_settings)
@example("0.0.0.0/0,::/0")
@example("::ffff:0:0/96")
@example("64:ff9b::/96")
@example("2002::/16")
@example("::/96")
@example("fe80::%eth0/64")
def test_any_setting_parses_or_is_refused_as_invalid(text: str) -> None:
    try:
        policy = parse_networks(text)
    except InvalidNetworks:
        return
    assert isinstance(policy, NetworkPolicy)
    assert parse_networks(policy.text) == policy  # what it says is what it is


@given(settings_near(), ipv4 | ipv6 | any_text | st.integers() | st.none())
def test_any_address_gets_a_verdict_and_a_refusal_exactly_when_it_is_refused(setting: str, address: object) -> None:
    policy = parse_networks(setting)
    verdict = policy.allows(address)
    assert isinstance(verdict, bool)
    assert (policy.refusal(address) is None) == verdict


# -- CIDRs and classes -------------------------------------------------------------------------


@given(st.sampled_from(["", "public,", "loopback,"]), (ipv4 | ipv6).flatmap(
    lambda centre: st.integers(0, centre.max_prefixlen).map(
        lambda bits: ipaddress.ip_network((centre, bits), strict=False))), st.data())
def test_a_cidr_in_the_setting_admits_every_address_it_speaks_for(prefix: str, written: Network,
                                                                   data: st.DataObject) -> None:
    """It speaks for every address in it, unless the address spells an IPv4 address the CIDR was
    not written to carry (`::/0` holds ::ffff:10.0.0.1, but says nothing of 10.0.0.1), and an
    address in a class never called only when the CIDR lies inside that class."""
    try:
        policy = parse_networks(f"{prefix}{written}")
    except InvalidNetworks:  # one that mixes :: and ::1 with IPv4-compatible addresses (test_address_policy.py)
        return
    [read] = policy.networks
    carrier = read != written  # written in an IPv6 spelling of the IPv4 network it is read as
    address = data.draw(st.ip_addresses(network=written))
    if not carrier and judged(address) != address:
        return
    assert judged(address) in read
    if address_class(address) in NEVER and not names_a_never_called_class(read):
        assert not policy.allows(address)
    else:
        assert policy.allows(address)


@given(st.data(), ipv4 | ipv6 | ipv4.map(lambda a: SPELLINGS["6to4"](a, 0)))
def test_an_address_is_admitted_exactly_when_a_keyword_admits_its_class_or_a_cidr_names_it(
        data: st.DataObject, address: Address) -> None:
    policy = parse_networks(data.draw(settings_near(address)))
    kind, own = address_class(address), judged(address)
    by_cidr = [n for n in policy.networks if own in n]
    if kind in NEVER:
        assert policy.allows(address) == any(names_a_never_called_class(n) for n in by_cidr)
    else:
        admitted = set().union(*(ADMITTED[k] for k in policy.keywords))
        assert policy.allows(address) == (kind in admitted or bool(by_cidr))
