"""What an IP address is to JOBWIRE_HANDLER_NETWORKS: its class, from one table of the IANA IPv4 and
IPv6 Special-Purpose Address Registries (`SPECIAL_PURPOSE`), and the IPv4 address an IPv6 spelling
carries (`EMBEDDINGS`). Nothing here asks `ipaddress` for is_global, is_private and the like: their
answers differ between Python versions, and a policy must mean the same on every node.

An IPv6 address that carries an IPv4 address leads to that IPv4 host (a socket connects to a mapped
one directly; a translator or a tunnel router forwards the others), so it is judged as the IPv4
address. Two IPv6 carriers are not unwrapped, since the address alone does not say which IPv4 host
it leads to; they are classes of their own, never called unless a CIDR names them: Teredo and
local-use NAT64 (their entries below say why).

Not recognised (they carry an IPv4 address under any prefix, so no range marks them): ISATAP
interface identifiers (`…:0:5efe:a.b.c.d`) and 6rd, whose prefix is each operator's own.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network


class AddressClass(StrEnum):
    """What kind of address this is; the value is how a refusal names it."""

    PUBLIC = "public"
    PRIVATE = "private"
    LOOPBACK = "loopback"
    RESERVED = "reserved (neither private nor public)"
    # Never called unless a CIDR in the setting lies inside the class's range (NEVER_CALLED).
    UNSPECIFIED = "unspecified"
    LINK_LOCAL = "link-local"
    MULTICAST = "multicast"
    BROADCAST = "broadcast"
    CLOUD_METADATA = "cloud metadata"
    TEREDO = "Teredo (RFC 4380)"
    LOCAL_NAT64 = "local-use NAT64 (RFC 8215)"

    @property
    def never_called(self) -> bool:
        return self in NEVER_CALLED


NEVER_CALLED = frozenset({
    AddressClass.UNSPECIFIED, AddressClass.LINK_LOCAL, AddressClass.MULTICAST, AddressClass.BROADCAST,
    AddressClass.CLOUD_METADATA, AddressClass.TEREDO, AddressClass.LOCAL_NAT64,
})


@dataclass(frozen=True, slots=True)
class Range:
    """A range of the table and the class of its addresses (unless a longer prefix says otherwise)."""

    network: Network
    kind: AddressClass


def _range(cidr: str, kind: AddressClass) -> Range:
    return Range(ipaddress.ip_network(cidr), kind)


PUBLIC, PRIVATE, LOOPBACK, RESERVED = (AddressClass.PUBLIC, AddressClass.PRIVATE, AddressClass.LOOPBACK,
                                       AddressClass.RESERVED)

# An address takes the class of the longest prefix that holds it, so an entry inside another is
# its exception (192.0.0.9/32, globally reachable, inside 192.0.0.0/24, which is not). `public` is
# what the registries call globally reachable; `reserved` is the rest that no other class claims.
# The IPv6 carriers of IPv4 addresses are unwrapped before this lookup (EMBEDDINGS), so
# ::ffff:0:0/96, 64:ff9b::/96 and 2002::/16 have no entry here.
SPECIAL_PURPOSE: tuple[Range, ...] = (
    # -- IPv4: the IANA IPv4 Special-Purpose Address Registry, and the multicast block
    _range("0.0.0.0/0", PUBLIC),  # what no entry below names is unicast space the RIRs allocate
    _range("0.0.0.0/8", AddressClass.UNSPECIFIED),  # RFC 791 "this network": 0.0.0.0 reaches this host
    _range("10.0.0.0/8", PRIVATE),  # RFC 1918 private use
    _range("100.64.0.0/10", PRIVATE),  # RFC 6598 shared address space (carrier-grade NAT): the operator's own
    _range("100.100.100.200/32", AddressClass.CLOUD_METADATA),  # not IANA's: Alibaba Cloud's metadata service
    _range("127.0.0.0/8", LOOPBACK),  # RFC 1122 loopback
    _range("169.254.0.0/16", AddressClass.LINK_LOCAL),  # RFC 3927; 169.254.169.254 is most clouds' metadata
    _range("172.16.0.0/12", PRIVATE),  # RFC 1918 private use
    _range("192.0.0.0/24", RESERVED),  # RFC 6890 §2.1 IETF protocol assignments: not globally reachable
    _range("192.0.0.0/29", RESERVED),  # RFC 7335 IPv4 service continuity (DS-Lite): inside a host's tunnel
    _range("192.0.0.8/32", RESERVED),  # RFC 7600 IPv4 dummy address: a source, never a destination
    _range("192.0.0.9/32", PUBLIC),  # RFC 7723 Port Control Protocol anycast: globally reachable
    _range("192.0.0.10/32", PUBLIC),  # RFC 8155 TURN anycast: globally reachable
    _range("192.0.0.170/31", RESERVED),  # RFC 8880, RFC 7050 NAT64/DNS64 discovery: names' answers, no hosts
    _range("192.0.2.0/24", RESERVED),  # RFC 5737 documentation (TEST-NET-1)
    _range("192.31.196.0/24", PUBLIC),  # RFC 7535 AS112-v4: globally reachable
    _range("192.52.193.0/24", PUBLIC),  # RFC 7450 AMT relays: globally reachable
    _range("192.88.99.0/24", RESERVED),  # RFC 7526 deprecated 6to4 relay anycast: no reachability given
    _range("192.88.99.2/32", RESERVED),  # RFC 6751 6a44 relay anycast: not globally reachable
    _range("192.168.0.0/16", PRIVATE),  # RFC 1918 private use
    _range("192.175.48.0/24", PUBLIC),  # RFC 7534 direct delegation AS112 service: globally reachable
    _range("198.18.0.0/15", RESERVED),  # RFC 2544 benchmarking: lab networks only
    _range("198.51.100.0/24", RESERVED),  # RFC 5737 documentation (TEST-NET-2)
    _range("203.0.113.0/24", RESERVED),  # RFC 5737 documentation (TEST-NET-3)
    _range("224.0.0.0/4", AddressClass.MULTICAST),  # RFC 5771 (the multicast registry): no single host
    _range("240.0.0.0/4", RESERVED),  # RFC 1112 §4 reserved for future use: not routed
    _range("255.255.255.255/32", AddressClass.BROADCAST),  # RFC 919 §7, RFC 8190 limited broadcast
    # -- IPv6: the IANA IPv6 Address Space and Special-Purpose Address Registries, and multicast
    _range("::/0", RESERVED),  # RFC 4291: outside the blocks below the space is reserved by the IETF (fec0::/10 too)
    _range("2000::/3", PUBLIC),  # RFC 4291 §2.4 global unicast: what the RIRs allocate
    _range("::/128", AddressClass.UNSPECIFIED),  # RFC 4291 §2.5.2 unspecified: like 0.0.0.0, reaches this host
    _range("::1/128", LOOPBACK),  # RFC 4291 §2.5.3 loopback
    # RFC 8215 local-use IPv4/IPv6 translation: the operator picks the prefix length (/48 to /96) and
    # with it the IPv4 address's bits (RFC 6052 §2.2), so no one reading is right for every network.
    _range("64:ff9b:1::/48", AddressClass.LOCAL_NAT64),
    _range("100::/64", RESERVED),  # RFC 6666 discard-only: a sink, not a host
    _range("100:0:0:1::/64", RESERVED),  # RFC 9780 dummy prefix: a source, never a destination
    _range("2001::/23", RESERVED),  # RFC 2928 IETF protocol assignments: not globally reachable
    # RFC 4380 Teredo: a server's IPv4 address in bits 32-64 and the client's, obfuscated, in the
    # last 32, the client behind a NAT that a relay reaches: which host is reached is not the address's
    # to say, and Teredo is obsolete (its clients off by default, its public relays gone).
    _range("2001::/32", AddressClass.TEREDO),
    _range("2001:1::1/128", PUBLIC),  # RFC 7723 Port Control Protocol anycast: globally reachable
    _range("2001:1::2/128", PUBLIC),  # RFC 8155 TURN anycast: globally reachable
    _range("2001:1::3/128", PUBLIC),  # RFC 9665 DNS-SD service registration anycast: globally reachable
    _range("2001:2::/48", RESERVED),  # RFC 5180 benchmarking: lab networks only
    _range("2001:3::/32", PUBLIC),  # RFC 7450 AMT: globally reachable
    _range("2001:4:112::/48", PUBLIC),  # RFC 7535 AS112-v6: globally reachable
    _range("2001:10::/28", RESERVED),  # RFC 4843 ORCHID, deprecated: identifiers, not locators
    _range("2001:20::/28", PUBLIC),  # RFC 7343 ORCHIDv2: globally reachable in the registry
    _range("2001:30::/28", PUBLIC),  # RFC 9374 drone remote ID entity tags: globally reachable in the registry
    _range("2001:db8::/32", RESERVED),  # RFC 3849 documentation
    _range("2620:4f:8000::/48", PUBLIC),  # RFC 7534 direct delegation AS112 service: globally reachable
    _range("3fff::/20", RESERVED),  # RFC 9637 documentation
    _range("5f00::/16", RESERVED),  # RFC 9602 segment routing SIDs: inside one SRv6 domain
    _range("fc00::/7", PRIVATE),  # RFC 4193 unique local
    _range("fd00:ec2::254/128", AddressClass.CLOUD_METADATA),  # not IANA's: AWS's metadata service over IPv6
    _range("fe80::/10", AddressClass.LINK_LOCAL),  # RFC 4291 §2.5.6 link-local
    _range("ff00::/8", AddressClass.MULTICAST),  # RFC 4291 §2.7 multicast: no single host
)

# Longest prefix first, as (network as an integer, netmask, class): the first that holds an
# address is its class. Integers, since every connection asks (`in` on a network costs more).
_LOOKUP: dict[int, tuple[tuple[int, int, AddressClass], ...]] = {
    version: tuple((int(r.network.network_address), int(r.network.netmask), r.kind)
                   for r in sorted((r for r in SPECIAL_PURPOSE if r.network.version == version),
                                   key=lambda r: -r.network.prefixlen))
    for version in (4, 6)
}


@dataclass(frozen=True, slots=True)
class Embedding:
    """An IPv6 range whose addresses carry an IPv4 address in bits offset..offset+32."""

    network: IPv6Network
    offset: int

    def carried(self, address: IPv6Address) -> IPv4Address:
        return IPv4Address((int(address) >> (96 - self.offset)) & 0xFFFF_FFFF)


EMBEDDINGS: tuple[Embedding, ...] = (
    # RFC 4291 §2.5.5.2 IPv4-mapped: a dual-stack socket connects to the IPv4 address itself.
    Embedding(IPv6Network("::ffff:0:0/96"), 96),
    # RFC 2765 §2.1 IPv4-translated (SIIT): a stateless translator forwards to the IPv4 address.
    Embedding(IPv6Network("::ffff:0:0:0/96"), 96),
    # RFC 4291 §2.5.5.1 IPv4-compatible, deprecated: tunnelled to the IPv4 address (:: and ::1 excepted).
    Embedding(IPv6Network("::/96"), 96),
    # RFC 6052 §2.1 the well-known NAT64 prefix, always a /96: the translator forwards to the IPv4 address.
    Embedding(IPv6Network("64:ff9b::/96"), 96),
    # RFC 3056 §2 6to4 (deprecated by RFC 7526, still routed where a relay remains): a 6to4 router
    # tunnels the packet to the IPv4 address in bits 16-48, whatever follows it.
    Embedding(IPv6Network("2002::/16"), 16),
)
# The unspecified and loopback addresses lie in ::/96 but are themselves, not 0.0.0.0 and 0.0.0.1.
_NOT_COMPATIBLE = IPv6Network("::/127")


def embedding_of(address: Address) -> Embedding | None:
    """The carrier whose IPv4 address `address` is judged as, if any."""
    if isinstance(address, IPv6Address):
        value = int(address)
        if value >> 1 == 0:  # :: and ::1 (_NOT_COMPATIBLE)
            return None
        for embedding in EMBEDDINGS:
            if value & int(embedding.network.netmask) == int(embedding.network.network_address):
                return embedding
    return None


def judged(address: Address) -> Address:
    """The address the policy judges: the IPv4 address an IPv6 one carries, else itself."""
    embedding = embedding_of(address)
    if embedding is None or not isinstance(address, IPv6Address):
        return address
    return embedding.carried(address)


class MixedNetwork(ValueError):
    """A CIDR that holds both :: or ::1 and IPv4-compatible addresses, which are judged apart."""


def judged_network(network: Network) -> Network:
    """The network a CIDR covers, as the policy judges addresses: a CIDR inside a carrier is the
    IPv4 network its addresses carry (`::ffff:10.0.0.0/104` and `2002:a00::/24` are 10.0.0.0/8;
    one longer than the IPv4 address, such as a 6to4 site's /64, is that address's /32); any
    other is itself. MixedNetwork for one that mixes :: or ::1 with IPv4-compatible addresses."""
    if not isinstance(network, IPv6Network):
        return network
    for embedding in EMBEDDINGS:
        if not network.subnet_of(embedding.network):
            continue
        if network.subnet_of(_NOT_COMPATIBLE):
            return network
        if network.overlaps(_NOT_COMPATIBLE):
            apart = IPv4Network((0, network.prefixlen - embedding.offset))
            raise MixedNetwork(f"holds :: and ::1, which are themselves, beside IPv4-compatible addresses "
                               f"(::a.b.c.d, judged as a.b.c.d): write them apart, as ::/127 and {apart}")
        bits = min(network.prefixlen - embedding.offset, 32)
        return IPv4Network((embedding.carried(network.network_address), bits))
    return network


def address_class(address: Address) -> AddressClass:
    """What kind of address this is (judged: an IPv4 address's spelling in IPv6 is that address)."""
    address = judged(address)
    value = int(address)
    for start, mask, kind in _LOOKUP[address.version]:
        if value & mask == start:
            return kind
    raise AssertionError("::/0 and 0.0.0.0/0 hold every address")


def inside_never_called(network: Network) -> bool:
    """Whether `network` lies inside a class never called otherwise (and so names it)."""
    return any(r.kind.never_called and r.network.version == network.version
               and network.subnet_of(r.network)  # type: ignore[arg-type]
               for r in SPECIAL_PURPOSE)


def as_address(value: object) -> Address | None:
    """An IP address given as text (an IPv6 one with or without brackets and a zone) or as an address; else None."""
    if isinstance(value, IPv4Address | IPv6Address):
        return value
    if not isinstance(value, str):
        return None
    text = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
