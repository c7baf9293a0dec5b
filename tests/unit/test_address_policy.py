"""JOBWIRE_HANDLER_NETWORKS by example: the keywords, CIDRs, the classes never called, and every
IPv6 spelling of an IPv4 address judged as that address. The properties are in
test_address_policy_properties.py, the table of classes in test_address_registry.py."""

from __future__ import annotations

import ipaddress

import pytest

from app.config import Settings
from app.domain.address_policy import ANY_NETWORK, InvalidNetworks, parse_networks
from app.domain.addresses import AddressClass, address_class, judged
from app.main import handler_networks
from app.startup import StartupFailure

NEVER = ["0.0.0.0", "0.1.2.3", "::", "169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0", "224.0.0.1",
         "239.255.255.250", "ff02::1", "255.255.255.255", "::ffff:169.254.169.254", "::ffff:0.0.0.0",
         "64:ff9b::a9fe:a9fe", "100.100.100.200", "fd00:ec2::254",
         # the metadata address in every other IPv6 spelling
         "::ffff:0:a9fe:a9fe", "::a9fe:a9fe", "2002:a9fe:a9fe::", "2002:a9fe:a9fe:1:2:3:4:5",
         # carriers that are not unwrapped: refused until a CIDR names them
         "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "64:ff9b:1:a9:fe00:a9fe::"]
POLICIES = ["any", "private", "public", "loopback", "0.0.0.0/0", "::/0", "2000::/3",
            "any,private,public,loopback,10.0.0.0/8"]


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


# Each spelling is an address the old check passed: a global or unclaimed IPv6 address to
# `ipaddress`, so `public` let it through, though it leads to the IPv4 address after "as".
@pytest.mark.parametrize(("spelling", "carries", "kind"), [
    ("64:ff9b::7f00:1", "127.0.0.1", "loopback"),  # NAT64 (RFC 6052)
    ("64:ff9b::a00:1", "10.0.0.1", "private"),
    ("::ffff:0:7f00:1", "127.0.0.1", "loopback"),  # IPv4-translated, SIIT (RFC 2765)
    ("::ffff:0:c0a8:101", "192.168.1.1", "private"),
    ("::7f00:1", "127.0.0.1", "loopback"),  # IPv4-compatible (RFC 4291, deprecated)
    ("::a00:1", "10.0.0.1", "private"),
    ("2002:7f00:1::", "127.0.0.1", "loopback"),  # 6to4 (RFC 3056): the IPv4 address in bits 16-48
    ("2002:a00:1:beef::1", "10.0.0.1", "private"),
    ("2002:c000:201::", "192.0.2.1", "reserved (neither private nor public)"),
])
def test_under_public_an_ipv6_spelling_of_a_non_public_ipv4_address_is_refused_as_that_address(
        spelling: str, carries: str, kind: str) -> None:
    policy = parse_networks("public")
    assert not policy.allows(spelling)
    assert policy.refusal(spelling) == f"{spelling} (as {carries}) is {kind}, outside JOBWIRE_HANDLER_NETWORKS=public"
    assert judged(ipaddress.ip_address(spelling)) == ipaddress.ip_address(carries)


@pytest.mark.parametrize("spelling", ["2002:a9fe:a9fe::", "64:ff9b::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "::a9fe:a9fe"])
def test_by_default_every_spelling_of_the_metadata_address_is_refused_unless_a_cidr_names_it(spelling: str) -> None:
    refused = ANY_NETWORK.refusal(spelling) or ""
    assert refused.startswith(f"{spelling} (as 169.254.169.254) is link-local, which is never called unless a CIDR")
    assert parse_networks("169.254.169.254/32").allows(spelling)
    assert parse_networks(f"{spelling}/128").allows("169.254.169.254")  # the CIDR's spelling does not matter


@pytest.mark.parametrize("spelling", ["::ffff:0:808:808", "::808:808", "2002:808:808::", "2002:808:808:1::2"])
def test_an_ipv6_spelling_of_a_public_ipv4_address_is_public(spelling: str) -> None:
    assert parse_networks("public").allows(spelling)
    assert not parse_networks("private").allows(spelling)


def test_the_unspecified_and_loopback_addresses_are_themselves_not_ipv4_compatible_ones() -> None:
    assert judged(ipaddress.ip_address("::1")) == ipaddress.ip_address("::1")
    assert address_class(ipaddress.ip_address("::1")) is AddressClass.LOOPBACK
    assert address_class(ipaddress.ip_address("::")) is AddressClass.UNSPECIFIED
    assert parse_networks("loopback").allows("::1")
    assert address_class(ipaddress.ip_address("::2")) is AddressClass.UNSPECIFIED  # 0.0.0.2


@pytest.mark.parametrize(("address", "kind", "named_by"), [
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo (RFC 4380)", "2001:0:4136:e378::/64"),
    ("2001:0:a9fe:a9fe::1", "Teredo (RFC 4380)", "2001::/32"),
    ("64:ff9b:1::a9fe:a9fe", "local-use NAT64 (RFC 8215)", "64:ff9b:1::/48"),
    ("64:ff9b:1:ffff::808:808", "local-use NAT64 (RFC 8215)", "64:ff9b:1:ffff::/96"),
])
def test_a_carrier_whose_ipv4_address_the_address_does_not_fix_is_refused_until_a_cidr_names_it(
        address: str, kind: str, named_by: str) -> None:
    for policy in ("any", "public", "private", "::/0", "2000::/3", "::/1", "2001::/16"):
        refusal = parse_networks(policy).refusal(address) or ""
        assert refusal.startswith(f"{address} is {kind}, which is never called unless a CIDR"), policy
    assert parse_networks(named_by).allows(address)
    assert parse_networks(f"public,{named_by}").allows(address)


@pytest.mark.parametrize(("written", "read_as"), [
    ("::ffff:10.0.0.0/104", "10.0.0.0/8"),  # IPv4-mapped
    ("::ffff:0:a00:0/104", "10.0.0.0/8"),  # IPv4-translated
    ("::a00:0/104", "10.0.0.0/8"),  # IPv4-compatible
    ("64:ff9b::a00:0/104", "10.0.0.0/8"),  # NAT64
    ("2002:a00::/24", "10.0.0.0/8"),  # 6to4: bits 16-48
    ("2002:a00:1::/48", "10.0.0.1/32"),
    ("2002:a00:1:5::/64", "10.0.0.1/32"),  # one 6to4 site's subnet: its router is 10.0.0.1
    ("2002::/16", "0.0.0.0/0"),  # every 6to4 address leads to some IPv4 address
    ("::/127", "::/127"),  # :: and ::1: themselves
    ("::1/128", "::1/128"),
    ("2001:db8::/32", "2001:db8::/32"),
])
def test_a_cidr_written_in_an_ipv6_spelling_is_read_as_the_ipv4_network_it_covers(written: str, read_as: str) -> None:
    policy = parse_networks(written)
    assert policy.networks == (ipaddress.ip_network(read_as),)
    assert parse_networks(policy.text) == policy


def test_a_cidr_mixing_loopback_with_ipv4_compatible_addresses_is_refused_with_the_spelling_to_use() -> None:
    with pytest.raises(InvalidNetworks, match=r"'::/120' holds :: and ::1.*as ::/127 and 0.0.0.0/24"):
        parse_networks("::/120")


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
    ("2002:a9fe:a9fe::/48", "169.254.169.254", "169.254.169.253"),
    ("2001::/32", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "64:ff9b:1::1"),
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
    ("::/96", "write them apart"),
])
def test_an_unknown_keyword_or_a_bad_cidr_is_refused_at_start_up_naming_the_setting(text: str, says: str) -> None:
    with pytest.raises(InvalidNetworks, match=says.replace("?", r"\?")):
        parse_networks(text)
    with pytest.raises(StartupFailure) as failure:
        handler_networks(Settings(handler_networks=text))
    assert failure.value.setting == "JOBWIRE_HANDLER_NETWORKS" and says in failure.value.cause
