"""The table of address classes (app/domain/addresses.py): each range gives its addresses its class
unless a longer prefix says otherwise, the classes never called hold nothing else, and no answer
comes from `ipaddress`'s is_global and kin, which say different things on different Pythons."""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv6Address

import pytest

from app.domain.address_policy import parse_networks
from app.domain.addresses import EMBEDDINGS, SPECIAL_PURPOSE, AddressClass, Range, address_class, embedding_of

NAMED = [pytest.param(r, id=str(r.network)) for r in SPECIAL_PURPOSE]


def _longer_prefix_holding(entry: Range, address: IPv4Address | IPv6Address) -> Range | None:
    inner = [r for r in SPECIAL_PURPOSE if r.network.version == entry.network.version
             and r.network.prefixlen > entry.network.prefixlen and address in r.network]
    return max(inner, key=lambda r: r.network.prefixlen, default=None)


@pytest.mark.parametrize("entry", NAMED)
def test_every_range_gives_its_addresses_its_class_unless_a_longer_prefix_names_them(entry: Range) -> None:
    network = entry.network
    for address in (network.network_address, network.broadcast_address, network[network.num_addresses // 2]):
        if embedding_of(address) is not None:
            continue  # judged as the IPv4 address it carries (test_address_policy.py)
        inner = _longer_prefix_holding(entry, address)
        assert address_class(address) is (inner.kind if inner else entry.kind), address


def test_each_range_is_listed_once_and_the_table_covers_every_address() -> None:
    networks = [r.network for r in SPECIAL_PURPOSE]
    assert len(networks) == len(set(networks))
    assert ipaddress.ip_network("0.0.0.0/0") in networks and ipaddress.ip_network("::/0") in networks


def test_a_never_called_range_holds_no_range_of_another_class() -> None:
    """So a CIDR inside such a range names that class and nothing else."""
    for outer in (r for r in SPECIAL_PURPOSE if r.kind.never_called):
        for inner in SPECIAL_PURPOSE:
            if inner.network.version == outer.network.version and inner.network != outer.network \
                    and inner.network.subnet_of(outer.network):  # type: ignore[arg-type]
                assert inner.kind is outer.kind, (outer, inner)


def test_no_carrier_of_an_ipv4_address_has_a_class_of_its_own() -> None:
    """Their addresses are judged as the IPv4 address they carry, never looked up as IPv6."""
    for embedding in EMBEDDINGS:
        assert not any(r.network == embedding.network for r in SPECIAL_PURPOSE)


# Where the registries and Python 3.11's `is_global` disagree: each row failed before the table.
@pytest.mark.parametrize(("address", "kind"), [
    ("192.0.0.8", AddressClass.RESERVED),  # RFC 7600 dummy address: global to 3.11
    ("192.88.99.2", AddressClass.RESERVED),  # RFC 6751 6a44 relay: not globally reachable
    ("192.88.99.1", AddressClass.RESERVED),  # RFC 7526 deprecated 6to4 relay anycast
    ("3fff::1", AddressClass.RESERVED),  # RFC 9637 documentation: global to 3.11
    ("5f00::1", AddressClass.RESERVED),  # RFC 9602 SRv6 SIDs
    ("100:0:0:1::1", AddressClass.RESERVED),  # RFC 9780 dummy prefix
    ("fec0::1", AddressClass.RESERVED),  # deprecated site-local, outside global unicast
    ("4000::1", AddressClass.RESERVED),  # reserved by the IETF, outside global unicast
    ("2001:1::1", AddressClass.PUBLIC),  # RFC 7723 PCP anycast: private to 3.11
    ("2001:1::3", AddressClass.PUBLIC),  # RFC 9665 SRP anycast
    ("2001:3::1", AddressClass.PUBLIC),  # RFC 7450 AMT
    ("2001:4:112::1", AddressClass.PUBLIC),  # RFC 7535 AS112-v6
    ("2001:20::1", AddressClass.PUBLIC),  # RFC 7343 ORCHIDv2
    ("2001:30::1", AddressClass.PUBLIC),  # RFC 9374 DETs
    ("192.0.0.9", AddressClass.PUBLIC),  # RFC 7723 PCP anycast
    ("192.0.0.10", AddressClass.PUBLIC),  # RFC 8155 TURN anycast
    ("192.31.196.1", AddressClass.PUBLIC),  # RFC 7535 AS112-v4
    ("8.8.8.8", AddressClass.PUBLIC),
    ("2606:4700::1111", AddressClass.PUBLIC),
])
def test_public_is_what_the_registries_call_globally_reachable(address: str, kind: AddressClass) -> None:
    assert address_class(ipaddress.ip_address(address)) is kind
    assert parse_networks("public").allows(address) == (kind is AddressClass.PUBLIC)


def test_no_verdict_asks_ipaddress_what_an_address_is(monkeypatch: pytest.MonkeyPatch) -> None:
    def ask(self: object) -> object:
        raise AssertionError("the policy asked ipaddress")

    for cls in (IPv4Address, IPv6Address):
        for name in ("is_global", "is_private", "is_reserved", "is_loopback", "is_link_local", "is_multicast",
                     "is_unspecified"):
            monkeypatch.setattr(cls, name, property(ask))
    for name in ("is_site_local", "ipv4_mapped", "sixtofour", "teredo"):
        monkeypatch.setattr(IPv6Address, name, property(ask))
    for policy in ("any", "private", "public", "loopback", "10.0.0.0/8"):
        networks = parse_networks(policy)
        for address in ("8.8.8.8", "127.0.0.1", "::ffff:10.0.0.1", "2002:a00:1::", "64:ff9b::808:808",
                        "2001:db8::1", "2001::1", "fe80::1", "192.0.0.9"):
            networks.refusal(address)
