"""Where handlers may be called: JOBWIRE_HANDLER_NETWORKS as a policy over addresses.

Pure: nothing here resolves a name. Registration judges a URL's IP literal with
`NetworkPolicy.refusal` (the URL itself: app/domain/handler_urls.py); the dispatch clients resolve
the host themselves and judge every address before they connect to it (app/delivery/destinations.py).

The setting, comma-separated keywords and CIDRs (case-insensitive keywords, blank = `any`), over the
classes of app/domain/addresses.py (the IANA special-purpose registries, one table):
- `any` (the default): every address that is not in a class below that is never called.
- `private`: loopback (127.0.0.0/8, ::1), 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
  100.64.0.0/10 (shared address space) and fc00::/7 (unique local).
- `public`: what the registries call globally reachable.
- `loopback`: 127.0.0.0/8 and ::1.
- a CIDR (`10.20.0.0/16`, `2001:db8::/32`) or a single address (a /32 or /128).

Never called, whatever the keywords say: unspecified (0.0.0.0/8, ::), link-local
(169.254.0.0/16, fe80::/10: 169.254.169.254, the metadata service of most clouds, is one),
multicast (224.0.0.0/4, ff00::/8), broadcast (255.255.255.255), the cloud metadata addresses
outside link-local (Alibaba's 100.100.100.200, AWS's IPv6 fd00:ec2::254), Teredo (2001::/32) and
local-use NAT64 (64:ff9b:1::/48). A CIDR lifts this only for the addresses it names inside such a
class: `169.254.169.254/32` or `fe80::/10` does, `0.0.0.0/0` (which merely contains them) does not.

An IPv6 address that carries an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
`::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`)
is judged as that IPv4 address; a CIDR written in such a form is read as the IPv4 network it covers.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from app.domain.addresses import (
    NEVER_CALLED,
    Address,
    AddressClass,
    MixedNetwork,
    Network,
    address_class,
    as_address,
    inside_never_called,
    judged,
    judged_network,
)

SETTING = "JOBWIRE_HANDLER_NETWORKS"
# What each keyword admits, by class; a class never called is admitted by a CIDR only.
ADMITS: dict[str, frozenset[AddressClass]] = {
    "any": frozenset(AddressClass) - NEVER_CALLED,
    "private": frozenset({AddressClass.PRIVATE, AddressClass.LOOPBACK}),
    "public": frozenset({AddressClass.PUBLIC}),
    "loopback": frozenset({AddressClass.LOOPBACK}),
}
KEYWORDS = tuple(ADMITS)


def _inside(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address in n for n in networks)  # False across IP versions


class InvalidNetworks(ValueError):
    """JOBWIRE_HANDLER_NETWORKS names something that is neither a keyword nor a CIDR."""


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """Which addresses a handler call may connect to. Build it with `parse_networks`."""

    keywords: frozenset[str] = frozenset({"any"})
    networks: tuple[Network, ...] = ()
    # The CIDRs that lie inside a class never called otherwise: the only way to call one.
    _named_never: tuple[Network, ...] = field(default=(), repr=False, compare=False)

    @property
    def text(self) -> str:
        """The policy as JOBWIRE_HANDLER_NETWORKS would say it."""
        return ",".join([k for k in KEYWORDS if k in self.keywords] + [str(n) for n in self.networks])

    def allows(self, address: object) -> bool:
        """Whether a call may connect to `address` (an address, or its text). Anything that is not
        an IP address is refused."""
        parsed = as_address(address)
        if parsed is None:
            return False
        a = judged(parsed)
        kind = address_class(a)
        if kind.never_called:
            return _inside(a, self._named_never)
        return any(kind in ADMITS[k] for k in self.keywords) or _inside(a, self.networks)

    def refusal(self, address: object) -> str | None:
        """Why a call may not connect to `address`, naming the setting; None when it may."""
        if self.allows(address):
            return None
        parsed = as_address(address)
        if parsed is None:
            return f"{address!s:.100} is not an IP address"
        kind = address_class(parsed)
        written = address if isinstance(address, str) else str(parsed)
        shown = f"{written} (as {judged(parsed)})" if judged(parsed) != parsed else written
        if kind.never_called:
            return (f"{shown} is {kind}, which is never called unless a CIDR in {SETTING} names it "
                    f"({SETTING}={self.text})")
        return f"{shown} is {kind}, outside {SETTING}={self.text}"


ANY_NETWORK = NetworkPolicy()
"""The default policy: `any`."""


def parse_networks(text: str) -> NetworkPolicy:
    """JOBWIRE_HANDLER_NETWORKS as a policy; InvalidNetworks (its message fit to follow the
    setting's name) for an unknown keyword or a bad CIDR."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        return ANY_NETWORK
    keywords: set[str] = set()
    networks: list[Network] = []
    for item in items:
        if item.lower() in KEYWORDS:
            keywords.add(item.lower())
            continue
        if not any(c.isdigit() or c in ".:/" for c in item):
            raise InvalidNetworks(f"unknown keyword {item!r}: use {', '.join(KEYWORDS)} or CIDRs "
                                  "(such as 10.0.0.0/8), separated by commas")
        try:
            network = ipaddress.ip_network(item, strict=True)
        except ValueError as exc:
            hint = ""
            try:
                hint = f"; did you mean {ipaddress.ip_network(item, strict=False)}?"
            except ValueError:
                pass
            raise InvalidNetworks(f"{item!r} is not a CIDR ({exc}){hint}") from None
        try:
            network = judged_network(network)
        except MixedNetwork as exc:
            raise InvalidNetworks(f"{item!r} {exc}") from None
        if network not in networks:
            networks.append(network)
    named = tuple(n for n in networks if inside_never_called(n))
    return NetworkPolicy(frozenset(keywords), tuple(networks), named)
