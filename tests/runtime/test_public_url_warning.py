"""A node that starts beside live nodes with JOBWIRE_PUBLIC_URL unset says that handlers will call
it back at its own address: once it is down, their callbacks have nowhere to go."""

from __future__ import annotations

import logging

import pytest

WARNING = "JOBWIRE_PUBLIC_URL is not set"


async def test_a_second_node_without_a_public_url_warns_at_start(jobwire, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="jobwire")
    await jobwire()
    assert not [r for r in caplog.records if WARNING in r.getMessage()], "alone, it has nothing to say"
    second = await jobwire()
    [warning] = [r for r in caplog.records if WARNING in r.getMessage()]
    assert second.settings.effective_public_url in warning.getMessage()
    assert "1 other nodes are alive" in warning.getMessage()


async def test_a_node_with_a_public_url_does_not_warn(jobwire, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="jobwire")
    await jobwire()
    await jobwire(public_url="http://jobwire.internal:8000")
    assert not [r for r in caplog.records if WARNING in r.getMessage()]
