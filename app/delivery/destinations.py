"""The addresses a handler call may connect to: the host resolved (through an injectable
resolver), each address judged by the NetworkPolicy (JOBWIRE_HANDLER_NETWORKS), the refused
ones dropped. Both dispatch clients connect only to what `allowed_addresses` returns, so the
check is made on the address actually connected to, after resolution, at every new connection:
a DNS answer that changed since registration (or since the last connection: rebinding) is
judged afresh. Nothing is cached here; a pooled keep-alive connection was judged when it opened.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence

from app.domain.address_policy import NetworkPolicy
from app.domain.addresses import as_address

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""(host name, port) → its IP addresses as text, in the order to try them. Raises OSError when
the name does not resolve. The default is the event loop's getaddrinfo (`system_resolver`)."""


class DestinationRefused(Exception):
    """Every address of the handler's host is one JOBWIRE_HANDLER_NETWORKS refuses: nothing was sent."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The event loop's getaddrinfo (the system's resolver: /etc/hosts, DNS), addresses in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for family, _, _, _, sockaddr in infos:
        if family == socket.AF_INET6 and len(sockaddr) >= 4 and sockaddr[3]:
            address = f"{sockaddr[0]}%{sockaddr[3]}"  # a link-local answer needs its interface
        elif family in (socket.AF_INET, socket.AF_INET6):
            address = str(sockaddr[0])
        else:
            continue
        if address not in addresses:
            addresses.append(address)
    return addresses


async def allowed_addresses(host: str, port: int, policy: NetworkPolicy, resolver: Resolver) -> list[str]:
    """The addresses of `host` that `policy` allows, in the resolver's order; an IP literal is
    judged as it is, without asking the resolver. DestinationRefused when the host has addresses
    and none is allowed; OSError when it has none."""
    if as_address(host) is not None:
        candidates = [host]
    else:
        try:
            candidates = list(await resolver(host, port))
        except OSError:
            raise
        except Exception as exc:  # a resolver's own failure is this call's, not the dispatcher's
            raise OSError(f"resolving {host} failed: {type(exc).__name__}: {exc}") from exc
    if not candidates:
        raise OSError(f"{host} resolves to no address")
    allowed = [a for a in candidates if policy.allows(a)]
    if not allowed:
        raise DestinationRefused(refusal_text(host, candidates, policy))
    return allowed


def refusal_text(host: str, addresses: Sequence[str], policy: NetworkPolicy) -> str:
    """The error of a blocked call: the host, its addresses and why each is refused."""
    reasons = "; ".join(policy.refusal(a) or a for a in addresses[:4])
    more = f" (and {len(addresses) - 4} more)" if len(addresses) > 4 else ""
    if as_address(host) is not None:
        return f"blocked destination: handler address {reasons}{more}; nothing was sent"
    return (f"blocked destination: handler host {host!r} resolves only to refused addresses: {reasons}{more}; "
            "nothing was sent")
