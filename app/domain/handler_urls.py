"""Which handler URLs can be delivered to as they are written (`handler_url_problem`). Pure: the
host's address, when the URL gives one, is the address policy's to judge (app/domain/address_policy.py)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from urllib.parse import urlsplit

import idna

from app.domain.address_policy import NetworkPolicy
from app.domain.addresses import as_address

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


def destination_problem(url: str, networks: NetworkPolicy) -> str | None:
    """What makes `url` no destination of a handler or subscriber: handler_url_problem, or a host
    that is an IP address `networks` (JOBWIRE_HANDLER_NETWORKS) refuses. A host name is not
    resolved here: its answer may change, and the clients judge the address they connect to at
    every call."""
    problem = handler_url_problem(url)
    if problem is None:
        host = urlsplit(url).hostname or ""
        refusal = networks.refusal(host) if as_address(host) is not None else None
        problem = f"has a host that is never called: {refusal}" if refusal else None
    return problem
