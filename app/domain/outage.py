"""The outage rule: when a node may judge other nodes dead, and abandon attempts past their deadline.

After PostgreSQL was unreachable for longer than the heartbeat timeout, every heartbeat row is
stale when it comes back, the live nodes' as much as the dead ones'. A node that judged others
by their rows at once would declare every other node dead and take back calls that are still
running. So a node judges others only once it has itself been connected and heartbeating for
one heartbeat timeout since its own last database failure (or since it started): by then every
live node has had that long to write a fresh heartbeat, so a row still stale is a node that is
gone.

Attempts past their deadline are abandoned by the same reasoning after a failure (not after a
start): a handler that held an accepted (202) attempt could not heartbeat while the database
was away. The clock is the database's, passed in: the rule is pure and its tests need no sleep.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(slots=True)
class OutageRule:
    heartbeat_timeout: float
    # Database time of the first heartbeat after this node started or last saw the database
    # fail; None while it is failing (or before its first heartbeat).
    healthy_since: datetime | None = None
    # Whether that was after a failure (not a start): deadlines then wait too.
    after_failure: bool = False

    def heartbeat_written(self, now: datetime, failed_since_last: bool) -> None:
        """A heartbeat committed at database time `now`; failed_since_last: a database failure
        was seen since the previous heartbeat committed (that one is then the last before it)."""
        if failed_since_last:
            self.after_failure = True
            self.healthy_since = now
        elif self.healthy_since is None:
            self.healthy_since = now

    def failed(self) -> None:
        """The database could not be reached."""
        self.healthy_since = None
        self.after_failure = True

    def _connected_long_enough(self, now: datetime) -> bool:
        if self.healthy_since is None:
            return False
        return now - self.healthy_since >= timedelta(seconds=self.heartbeat_timeout)

    def may_judge_others(self, now: datetime) -> bool:
        """Declaring another node dead by its stale heartbeat row."""
        return self._connected_long_enough(now)

    def may_abandon_past_deadlines(self, now: datetime) -> bool:
        """Abandoning attempts past their deadline: at once after a start; after a failure, once
        connected for one heartbeat timeout."""
        if not self.after_failure:
            return self.healthy_since is not None
        return self._connected_long_enough(now)
