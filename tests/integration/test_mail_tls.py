"""Mail over STARTTLS with credentials, configured as a deployment does: ``WORKCOORD_SMTP_URL``
(``smtp://``: STARTTLS), ``WORKCOORD_SMTP_USERNAME``, the password in a file (a mounted Secret,
``WORKCOORD_SMTP_PASSWORD_FILE``) and the server's CA (``WORKCOORD_TLS_CA_FILE``), against a
real SMTP server (aiosmtpd) that requires STARTTLS and authentication, with a self-signed
certificate made here. A wrong password, an untrusted certificate or a server that does not
upgrade sends nothing, and the password never reaches a log line."""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import smtplib
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from email import message_from_bytes
from email.message import EmailMessage, Message
from pathlib import Path
from typing import Any

import grpc.aio
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.harness import Stack, task
from workcoord.api.v1 import maintenance_pb2_grpc
from workcoord.kit.settings import RecoverySettings
from workcoord.kit.startup import free_port
from workcoord.recovery.mailer import Mailer, SmtpConfig, SmtpSender

USERNAME = "workcoord-mailer"
PASSWORD = "s3cret-smtp-password-7f1c"


@dataclass
class Certificate:
    cert_file: Path
    key_file: Path


def self_signed(folder: Path) -> Certificate:
    """A certificate for 127.0.0.1 and localhost, signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "workcoord test smtp")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "smtp.crt", folder / "smtp.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Certificate(cert_file, key_file)


class Inbox:
    """What the server accepted, and who logged in (the handler runs on the server's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.messages: list[tuple[list[str], Message, bool]] = []  # rcpts, message, over TLS
        self.logins: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self._lock:
            tls = session.ssl is not None
            parsed = message_from_bytes(envelope.original_content)
            self.messages.append((list(envelope.rcpt_tos), parsed, tls))
        return "250 OK"

    def authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        ok = (
            isinstance(data, LoginPassword)
            and data.login == USERNAME.encode()
            and data.password == PASSWORD.encode()
        )
        if ok:
            with self._lock:
                self.logins.append(USERNAME)
        # handled=False: aiosmtpd answers the refusal itself (535).
        return AuthResult(success=ok, handled=False)

    def to(self, address: str) -> list[Message]:
        with self._lock:
            return [message for rcpt, message, _ in self.messages if address in rcpt]


@dataclass
class Server:
    inbox: Inbox
    port: int
    certificate: Certificate


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    certificate = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate.cert_file, certificate.key_file)
    inbox = Inbox()
    port = free_port()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=True,
        auth_required=True,
        auth_require_tls=True,
        authenticator=inbox.authenticate,
    )
    controller.start()
    try:
        yield Server(inbox, port, certificate)
    finally:
        controller.stop()


def settings_from_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: Server, password: str = PASSWORD
) -> RecoverySettings:
    secret = tmp_path / "smtp-secret" / "password"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(password + "\n", encoding="utf-8")
    monkeypatch.setenv("WORKCOORD_SMTP_URL", f"smtp://127.0.0.1:{server.port}")
    monkeypatch.setenv("WORKCOORD_SMTP_USERNAME", USERNAME)
    monkeypatch.setenv("WORKCOORD_SMTP_PASSWORD_FILE", str(secret))
    monkeypatch.setenv("WORKCOORD_SMTP_FROM", "workcoord <workcoord@example.test>")
    monkeypatch.setenv("WORKCOORD_TLS_CA_FILE", str(server.certificate.cert_file))
    return RecoverySettings()


def a_message(to: str) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "workcoord@example.test", to, "hello"
    message.set_content("over TLS\n")
    return message


async def test_the_owner_is_mailed_over_starttls_with_the_secrets_credentials(
    stack: Stack,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = settings_from_env(monkeypatch, tmp_path, server)
    config = SmtpConfig.from_settings(settings)
    assert config is not None
    assert (config.host, config.port, config.implicit_tls) == ("127.0.0.1", server.port, False)
    assert config.username == USERNAME and config.password_file is not None
    owner = f"ops@{stack.org}.test"
    channel = grpc.aio.insecure_channel(stack.address)
    try:
        mailer = Mailer(
            maintenance_pb2_grpc.MaintenanceServiceStub(channel),
            service_key=stack.service_key,
            send=SmtpSender(config).send,
            sender=settings.smtp_from,
            public_url="https://workcoord.example.test",
        )
        await mailer.run_once()  # the first look: nothing of before is mailed
        await stack.create_lane(task("p", title="Deploy the API to production"), title="Deploy")
        assert await mailer.run_once() == 1
        [message] = server.inbox.to(owner)
        assert "ITEM_STOPPED" in message["Subject"]
        assert message["From"] == "workcoord <workcoord@example.test>"
        [(_, _, over_tls)] = server.inbox.messages
        assert over_tls, "the message was sent before STARTTLS"
        assert server.inbox.logins == [USERNAME]
    finally:
        await channel.close()
    assert PASSWORD not in caplog.text


async def test_a_wrong_password_sends_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = settings_from_env(monkeypatch, tmp_path, server, password="not-the-password")
    config = SmtpConfig.from_settings(settings)
    assert config is not None
    with pytest.raises(smtplib.SMTPAuthenticationError):
        await SmtpSender(config).send([a_message("ops@example.test")])
    assert server.inbox.messages == [] and server.inbox.logins == []


async def test_an_untrusted_certificate_sends_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = settings_from_env(monkeypatch, tmp_path, server)
    config = SmtpConfig.from_settings(settings)
    assert config is not None
    untrusted = SmtpConfig(
        host=config.host,
        port=config.port,
        implicit_tls=False,
        username=config.username,
        password_file=config.password_file,
        ca_file=None,  # the system's CAs: they never signed the test's certificate
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        await SmtpSender(untrusted).send([a_message("ops@example.test")])
    assert server.inbox.messages == [] and server.inbox.logins == []


async def test_a_server_without_starttls_is_refused_unless_on_loopback() -> None:
    """Plain SMTP is accepted only from a loopback relay: anywhere else a server that does not
    offer STARTTLS is refused before anything is sent (the check is on the configured host)."""
    assert SmtpConfig(host="127.0.0.1", port=25, implicit_tls=False).loopback
    assert SmtpConfig(host="localhost", port=25, implicit_tls=False).loopback
    assert not SmtpConfig(host="smtp.example.test", port=587, implicit_tls=False).loopback
    assert not SmtpConfig(host="10.0.0.7", port=587, implicit_tls=False).loopback
