"""Where handlers may be called (JOBWIRE_HANDLER_NETWORKS) and which handler URLs can be delivered to.

Pure: nothing here resolves a name. Registration judges a URL (`handler_url_problem`) and, when
its host is an IP literal, that address (`NetworkPolicy.refusal`); the dispatch clients resolve
the host themselves and judge every address before they connect to it (app/delivery/destinations.py).

The setting, comma-separated keywords and CIDRs (case-insensitive keywords, blank = `any`):
- `any` (the default): every address that is not in a class below that is never called.
- `private`: loopback (127.0.0.0/8, ::1), 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
  100.64.0.0/10 (shared address space) and fc00::/7 (unique local).
- `public`: what Python's `ipaddress` calls `is_global`.
- `loopback`: 127.0.0.0/8 and ::1.
- a CIDR (`10.20.0.0/16`, `2001:db8::/32`) or a single address (a /32 or /128).

Never called, whatever the keywords say: unspecified (0.0.0.0/8, ::), link-local
(169.254.0.0/16, fe80::/10: 169.254.169.254, the metadata service of most clouds, is one),
multicast (224.0.0.0/4, ff00::/8), broadcast (255.255.255.255) and the cloud metadata addresses
outside link-local (Alibaba's 100.100.100.200, AWS's IPv6 fd00:ec2::254). A CIDR lifts this only
for the addresses it names inside such a class: `169.254.169.254/32` or `fe80::/10` does,
`0.0.0.0/0` (which merely contains them) does not.

An IPv6 address that carries an IPv4 address, mapped (`::ffff:a.b.c.d`) or in the NAT64 prefix
(`64:ff9b::a.b.c.d`, which a translator forwards to a.b.c.d), is judged as that IPv4 address;
a CIDR written in either form is read as the IPv4 network it covers.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import urlsplit

import idna

SETTING = "JOBWIRE_HANDLER_NETWORKS"
KEYWORDS = ("any", "private", "public", "loopback")

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network


def _nets(*cidrs: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(c) for c in cidrs)


_LOOPBACK = _nets("127.0.0.0/8", "::1/128")
_PRIVATE = _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
# (what the class is called in a refusal, its networks), in the order a refusal names them.
_NEVER: tuple[tuple[str, tuple[Network, ...]], ...] = (
    ("unspecified", _nets("0.0.0.0/8", "::/128")),
    ("link-local", _nets("169.254.0.0/16", "fe80::/10")),
    ("multicast", _nets("224.0.0.0/4", "ff00::/8")),
    ("broadcast", _nets("255.255.255.255/32")),
    ("cloud metadata", _nets("100.100.100.200/32", "fd00:ec2::254/128")),
)
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def judged(address: Address) -> Address:
    """The address the policy judges: the IPv4 address an IPv6 one carries (mapped or NAT64), else itself."""
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return IPv4Address(int(address) & 0xFFFF_FFFF)
    return address


def _judged_network(network: Network) -> Network:
    if isinstance(network, IPv6Network) and network.prefixlen >= 96:
        for carrier in (_MAPPED, _NAT64):
            if network.subnet_of(carrier):
                return IPv4Network((int(network.network_address) & 0xFFFF_FFFF, network.prefixlen - 96))
    return network


def _inside(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address in n for n in networks)  # False across IP versions


def _never_class(address: Address) -> str | None:
    for name, networks in _NEVER:
        if _inside(address, networks):
            return name
    return None


def address_class(address: Address) -> str:
    """What kind of address this is, as a refusal names it."""
    address = judged(address)
    never = _never_class(address)
    if never:
        return never
    if _inside(address, _LOOPBACK):
        return "loopback"
    if _inside(address, _PRIVATE):
        return "private"
    if address.is_global:
        return "public"
    return "reserved (neither private nor public)"


def _within_never(network: Network) -> bool:
    return any(network.version == n.version and network.subnet_of(n)  # type: ignore[arg-type]
               for _, networks in _NEVER for n in networks)


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
        if _never_class(a) is not None:
            return _inside(a, self._named_never)
        k = self.keywords
        return ("any" in k
                or ("public" in k and a.is_global)
                or ("private" in k and (_inside(a, _PRIVATE) or _inside(a, _LOOPBACK)))
                or ("loopback" in k and _inside(a, _LOOPBACK))
                or _inside(a, self.networks))

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
        if _never_class(judged(parsed)) is not None:
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
        network = _judged_network(network)
        if network not in networks:
            networks.append(network)
    named = tuple(n for n in networks if _within_never(n))
    return NetworkPolicy(frozenset(keywords), tuple(networks), named)


# -- handler URLs -------------------------------------------------------------------------------

MAX_URL_LENGTH = 2048
_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
_SUB_DELIMS = frozenset("!$&'()*+,;=")
# What a path and a query may hold as they are (RFC 3986 pchar, plus "/" and "?"); "%" starts an escape.
_PATH_QUERY = _UNRESERVED | _SUB_DELIMS | frozenset(":@/?%")
_HEX = frozenset("0123456789abcdefABCDEF")
_LABEL = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def handler_url_problem(url: object) -> str | None:
    """What stops `url` from being a handler URL, or None. What is stored is exactly what is
    called: anything a client would have to rewrite (encode, lower-case, drop) is refused with
    the spelling to use instead, never rewritten here.

    Accepted: `http://` or `https://`, a host (a lower-case DNS name of ASCII labels, IDNA ones
    in their `xn--` form; a dotted-quad IPv4 address; a bracketed IPv6 address without a zone),
    an optional port 1-65535, then a path and query of printable ASCII in which anything else
    is percent-encoded. Refused besides: user-info (`user:pw@`), a fragment, an empty host or
    port, an empty query (a bare `?`)."""
    if not isinstance(url, str):
        return "must be a string"
    if not url:
        return "must not be empty"
    if len(url) > MAX_URL_LENGTH:
        return f"is {len(url)} characters long; the limit is {MAX_URL_LENGTH}"
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return "must start with http:// or https://"
    if scheme not in ("http", "https"):
        return f"write the scheme in lower case ({scheme.lower()}://)"
    end = min([i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0], default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        return ("must not carry user-info (user:password@): handlers authenticate Jobwire by the "
                "webhook signature, and a credential in the URL would be stored and shown")
    split = _split_authority(authority)
    if isinstance(split, str):
        return split
    host, port = split
    if "#" in tail:
        return "must not have a fragment (#...): it is never sent to the handler"
    problem = _path_query_problem(tail)
    if problem:
        return problem
    # The built-in client splits the URL with urllib, aiohttp with yarl (given it as it is):
    # what was accepted above must split the same way.
    try:
        parts = urlsplit(url)
        same = parts.hostname == host and parts.port == port
    except ValueError:
        same = False
    return None if same else "cannot be split into host and port unambiguously"


def _split_authority(authority: str) -> tuple[str, int | None] | str:
    """(host without brackets, port) of an authority without user-info, or what is wrong with it."""
    if not authority:
        return "has no host"
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            return "has a '[' without its ']'"
        host, after = authority[1:close], authority[close + 1:]
        if after and not after.startswith(":"):
            return f"has {after[:20]!r} after the IPv6 address"
        port_text = after[1:] if after else None
        problem = _ipv6_problem(host)
    else:
        host, colon, text = authority.partition(":")
        port_text = text if colon else None
        problem = _host_problem(host)
    if problem:
        return problem
    if port_text is None:
        return host, None
    if not port_text:
        return "has ':' but no port after it"
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5 and 1 <= int(port_text) <= 65535):
        return f"has port {port_text[:20]!r}: a port is a number from 1 to 65535"
    return host, int(port_text)


def _ipv6_problem(host: str) -> str | None:
    if "%" in host:
        return "must not give an IPv6 zone (%25...): a handler's address must be routable without one"
    try:
        IPv6Address(host)
    except ValueError:
        return f"has [{host[:60]}], which is not an IPv6 address"
    if host != host.lower():
        return f"write the host in lower case ([{host.lower()}])"
    return None


def _host_problem(host: str) -> str | None:
    if not host:
        return "has no host"
    if not host.isascii():
        return _unicode_host_problem(host)
    if "%" in host:
        return "must not percent-encode the host"
    if host != host.lower():
        return f"write the host in lower case ({host.lower()})"
    name = host[:-1] if host.endswith(".") else host
    labels = name.split(".")
    last = labels[-1]
    if last.isdigit() or (last.startswith("0x") and all(c in _HEX for c in last[2:])):
        # A host ending in a number is an IPv4 address to URL parsers and resolvers alike
        # (`127.1`, `0x7f.0.0.1`, `2130706433` all reach 127.0.0.1): only the dotted quad is accepted.
        try:
            IPv4Address(host)
        except ValueError:
            return f"has host {host[:60]!r}: write an IPv4 address as four decimal numbers (a.b.c.d)"
        return None
    if len(name) > 253:
        return "has a host name over 253 characters"
    for label in labels:
        if not label:
            return f"has host {host[:60]!r}, which has an empty label"
        if len(label) > 63:
            return "has a host name label over 63 characters"
        bad = next((c for c in label if c not in _LABEL), None)
        if bad is not None:
            return f"has {bad!r} in its host: a host name holds letters, digits, '-', '_' and '.'"
        if label.startswith("-") or label.endswith("-"):
            return f"has host label {label!r}, which starts or ends with '-'"
        if label.startswith("xn--"):
            try:
                valid = idna.encode(idna.decode(label)) == label.encode("ascii")
            except (UnicodeError, ValueError):
                valid = False
            if not valid:
                return f"has host label {label!r}, which is not a valid IDNA (xn--) label"
    return None


def _unicode_host_problem(host: str) -> str:
    try:
        ascii_form = idna.encode(host, uts46=True).decode("ascii")
    except (UnicodeError, ValueError):
        return f"has host {host[:60]!r}, which is not a valid internationalised domain name"
    return f"must give the host in ASCII: write {host[:60]!r} as {ascii_form!r} (its IDNA form)"


def _path_query_problem(tail: str) -> str | None:
    if tail.find("?") == len(tail) - 1 and tail:
        return "has an empty query (a bare '?'): remove the '?'"
    i = 0
    while i < len(tail):
        c = tail[i]
        if c == "%":
            escape = tail[i + 1:i + 3]
            if len(escape) != 2 or not all(h in _HEX for h in escape):
                return f"has a '%' not followed by two hex digits (at {tail[i:i + 3]!r}): write '%' as %25"
            i += 3
            continue
        if c not in _PATH_QUERY:
            encoded = "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
            if not c.isascii():
                what = f"the non-ASCII character {c!r}"
            elif c.isspace() or not c.isprintable():
                what = "a space or control character"
            else:
                what = repr(c)
            return f"has {what} in the path or query: percent-encode it ({encoded})"
        i += 1
    return None
