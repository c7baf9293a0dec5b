"""The dashboard's signed cookies (app/ui/sessions.py): what one key signed, another cannot read;
a value tampered with, or past its expiry, is nothing."""

from __future__ import annotations

from app.ui import sessions


def test_a_signed_value_reads_back_until_it_expires() -> None:
    key = sessions.derive("server key", "session")
    token = sessions.sign(key, {"k": "id-1", "n": "nonce"}, now=1000, lifetime=60)
    assert sessions.verify(key, token, now=1059) == {"k": "id-1", "n": "nonce", "exp": 1060}
    assert sessions.verify(key, token, now=1060) is None


def test_another_key_or_purpose_a_tampered_value_or_garbage_reads_as_nothing() -> None:
    key = sessions.derive("server key", "session")
    token = sessions.sign(key, {"k": "id-1"}, now=0, lifetime=60)
    body, mac = token.split(".")
    assert sessions.verify(sessions.derive("other server key", "session"), token, now=1) is None
    assert sessions.verify(sessions.derive("server key", "flash"), token, now=1) is None
    forged = sessions._b64(b'{"k":"admin","exp":99}')
    for bad in (f"{forged}.{mac}", f"{body}.{mac[:-1]}", "", None, "a.b.c", "%%%.###"):
        assert sessions.verify(key, bad, now=1) is None
    # A value signed right but not an object with an integer expiry.
    assert sessions.verify(key, f"{sessions._b64(b'[1]')}.{sessions.mac(key, sessions._b64(b'[1]'))}", now=1) is None
