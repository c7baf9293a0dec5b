"""ReplayGuard: the messages this process took within the signature tolerance, so that an exact
replay (the same webhook-id, timestamp and body: what was signed) is refused, as Standard Webhooks
recommends beside the timestamp check. Jobwire signs every attempt anew (a new timestamp, and a
body naming the attempt), so a replay is never one of its own dispatches.

Memory is bounded: an entry is forgotten once its timestamp leaves the tolerance (a replay of it
is then refused by the timestamp check alone), and beyond `capacity` entries the oldest go first.
The memory is this process's: behind several worker processes a replay reaching another one
is judged by its timestamp only."""

from __future__ import annotations

from collections import OrderedDict

from jobwire.handler._signature import TOLERANCE_SECONDS, Signed

# Bounds the memory (an entry is a digest and a float) however fast dispatches come.
MAX_REMEMBERED = 100_000


class ReplayGuard:
    def __init__(self, tolerance: float = TOLERANCE_SECONDS, capacity: int = MAX_REMEMBERED) -> None:
        if capacity < 1:
            raise ValueError("capacity is at least 1")
        self._tolerance = tolerance
        self._capacity = capacity
        # digest → the unix time after which its timestamp is out of tolerance, in arrival order
        self._seen: OrderedDict[bytes, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def first_time(self, signed: Signed, now: float) -> bool:
        """True the first time a message is seen (it is remembered), False for a replay. The
        check and the write run with no await between them: one event loop, no race."""
        self._forget_expired(now)
        if signed.digest in self._seen:
            return False
        self._seen[signed.digest] = signed.timestamp + self._tolerance
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return True

    def _forget_expired(self, now: float) -> None:
        # Arrival order is nearly expiry order (timestamps come from clocks near this one); an
        # entry behind a later-expiring one waits for it, bounded by the tolerance and the cap.
        while self._seen:
            digest, expires = next(iter(self._seen.items()))
            if expires >= now:
                return
            del self._seen[digest]
