"""Secrets at rest: encrypted under JOBWIRE_SECRET_KEY (jwenc1:<Fernet token>) or plain (whsec_…),
both read; decrypted once per stored text; keys listed newest first rotate; the key's format
checked at start-up."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet, MultiFernet
from pydantic import ValidationError

from app.config import Settings
from app.domain.handler_secrets import ENCRYPTED_PREFIX, UnreadableSecret, is_encrypted
from app.domain.signing import new_handler_secret
from app.delivery.secret_cipher import PLAIN, SecretCipher


def test_with_a_key_a_secret_is_stored_encrypted_and_read_back() -> None:
    cipher = SecretCipher(Fernet.generate_key().decode())
    secret = new_handler_secret()
    stored = cipher.seal(secret)
    assert stored.startswith(ENCRYPTED_PREFIX) and is_encrypted(stored)
    assert secret not in stored and secret.removeprefix("whsec_") not in stored
    assert cipher.reveal(stored) == secret
    assert cipher.seal(secret) != stored  # a fresh IV each time


def test_without_a_key_a_secret_is_stored_as_it_is() -> None:
    secret = new_handler_secret()
    assert not PLAIN.encrypts
    assert PLAIN.seal(secret) == secret and PLAIN.reveal(secret) == secret


def test_a_key_set_later_still_reads_the_plain_secrets_stored_before() -> None:
    plain = new_handler_secret()
    assert SecretCipher(Fernet.generate_key().decode()).reveal(plain) == plain


def test_an_encrypted_secret_without_the_key_or_with_another_is_unreadable_and_says_why() -> None:
    stored = SecretCipher(Fernet.generate_key().decode()).seal(new_handler_secret())
    with pytest.raises(UnreadableSecret, match="JOBWIRE_SECRET_KEY is not set"):
        PLAIN.reveal(stored)
    with pytest.raises(UnreadableSecret, match="another key"):
        SecretCipher(Fernet.generate_key().decode()).reveal(stored)
    with pytest.raises(UnreadableSecret):
        SecretCipher(Fernet.generate_key().decode()).reveal(ENCRYPTED_PREFIX + "not a token")


def test_a_stored_secret_is_decrypted_once_then_served_from_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    key = Fernet.generate_key().decode()
    cipher = SecretCipher(key)
    secret = new_handler_secret()
    stored = cipher.seal(secret)
    calls = []
    real = MultiFernet.decrypt

    def counting(self: MultiFernet, token: bytes, ttl: int | None = None) -> bytes:
        calls.append(token)
        return real(self, token, ttl)

    monkeypatch.setattr(MultiFernet, "decrypt", counting)
    assert [cipher.reveal(stored) for _ in range(1000)] == [secret] * 1000
    assert len(calls) == 1


def test_a_stored_form_is_current_when_it_is_what_seal_makes_now() -> None:
    key, secret = Fernet.generate_key().decode(), new_handler_secret()
    assert PLAIN.is_current(secret) and not PLAIN.is_current(SecretCipher(key).seal(secret))
    assert SecretCipher(key).is_current(SecretCipher(key).seal(secret))
    assert not SecretCipher(key).is_current(secret)  # plain: to be encrypted
    assert not SecretCipher(key).is_current(SecretCipher(Fernet.generate_key().decode()).seal(secret))


def test_keys_listed_newest_first_seal_with_the_first_and_read_with_any() -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    secret = new_handler_secret()
    under_old = SecretCipher(old).seal(secret)
    rotating = SecretCipher(f"{new}, {old}")
    assert rotating.reveal(under_old) == secret and not rotating.is_current(under_old)
    under_new = rotating.seal(secret)
    assert rotating.is_current(under_new) and SecretCipher(new).reveal(under_new) == secret
    assert SecretCipher([new, old]).reveal(under_new) == secret
    with pytest.raises(UnreadableSecret, match="another key"):
        SecretCipher(old).reveal(under_new)


def test_an_unreadable_secret_is_named_as_the_caller_says() -> None:
    stored = SecretCipher(Fernet.generate_key().decode()).seal("k")
    with pytest.raises(UnreadableSecret, match=r"^the callback-token server key is stored encrypted and "):
        PLAIN.reveal(stored, "the callback-token server key")
    with pytest.raises(UnreadableSecret, match=r"^the handler's signing secret cannot be decrypted "):
        SecretCipher(Fernet.generate_key().decode()).reveal(stored)


def test_the_secret_key_setting_takes_a_fernet_key_and_hides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBWIRE_SECRET_KEY", raising=False)
    key = Fernet.generate_key().decode()
    settings = Settings(secret_key=key)
    assert settings.secret_key is not None and settings.secret_key.get_secret_value() == key
    assert key not in repr(settings)
    assert Settings().secret_key is None and Settings(secret_key="").secret_key is None
    other = Fernet.generate_key().decode()
    listed = Settings(secret_key=f" {key} , {other}")
    assert listed.secret_key is not None and listed.secret_key.get_secret_value() == f"{key},{other}"


@pytest.mark.parametrize("bad", [
    pytest.param("hunter2", id="short"),
    pytest.param("a" * 44, id="33-bytes"),
    pytest.param(Fernet.generate_key().decode()[:-4], id="truncated"),
    pytest.param("+" * 43 + "=", id="standard-base64"),
    pytest.param("é" * 44, id="not-ascii"),
    pytest.param(Fernet.generate_key().decode() + ",hunter2", id="a-bad-key-in-a-list"),
    pytest.param(Fernet.generate_key().decode() + ",", id="an-empty-key-in-a-list"),
])
def test_a_secret_key_that_is_no_fernet_key_is_refused_at_start_up_saying_how_to_make_one(bad: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings(secret_key=bad)
    [error] = info.value.errors()
    assert error["loc"] == ("secret_key",)
    assert "not a Fernet key" in error["msg"] and "Fernet.generate_key()" in error["msg"]
    assert bad not in error["msg"]
