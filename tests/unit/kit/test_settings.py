from __future__ import annotations

from pathlib import Path

import pytest

from workcoord.kit.settings import (
    CoordinatorSettings,
    GatewaySettings,
    RecoverySettings,
    SettingsError,
    load,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("WORKCOORD_") or name in ("DATABASE_URL", "REDIS_URL"):
            monkeypatch.delenv(name)


def test_defaults() -> None:
    coordinator = load(CoordinatorSettings)
    assert coordinator.listen_coordinator == "127.0.0.1:50051"
    assert coordinator.database_url is None and coordinator.redis_url is None
    recovery = load(RecoverySettings)
    assert recovery.listen_recovery == "127.0.0.1:50052"
    assert recovery.recovery_interval_seconds == 15
    gateway = load(GatewaySettings)
    assert (gateway.listen_gateway, gateway.max_body_bytes) == ("127.0.0.1:8080", 1048576)
    assert gateway.request_timeout_seconds == 30
    assert gateway.recovery_address == "127.0.0.1:50052"


def test_values_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql+asyncpg://u@h/db")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("WORKCOORD_LOG_LEVEL", "debug")
    monkeypatch.setenv("WORKCOORD_LOG_JSON", "true")
    monkeypatch.setenv("WORKCOORD_BOOTSTRAP_ADMIN_TOKEN", "wcadm_supersecret")
    monkeypatch.setenv("WORKCOORD_METRICS_PORT", "")  # empty means unset
    settings = load(CoordinatorSettings, required=["database_url"])
    assert settings.log_level == "DEBUG" and settings.log_json
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.metrics_port is None
    assert settings.bootstrap_admin_token is not None
    assert settings.bootstrap_admin_token.get_secret_value() == "wcadm_supersecret"
    assert "supersecret" not in repr(settings) and "supersecret" not in str(settings)


def test_every_bad_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "mysql://x")
    monkeypatch.setenv("WORKCOORD_LISTEN_COORDINATOR", "nope")
    monkeypatch.setenv("WORKCOORD_METRICS_PORT", "70000")
    monkeypatch.setenv("WORKCOORD_LOG_LEVEL", "loud")
    with pytest.raises(SettingsError) as raised:
        load(CoordinatorSettings)
    text = str(raised.value)
    for name in (
        "DATABASE_URL",
        "WORKCOORD_LISTEN_COORDINATOR",
        "WORKCOORD_METRICS_PORT",
        "WORKCOORD_LOG_LEVEL",
    ):
        assert name in text
    assert len(raised.value.problems) == 4


def test_required_and_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError, match="DATABASE_URL: is required"):
        load(CoordinatorSettings, required=["database_url"])
    monkeypatch.setenv("WORKCOORD_RECOVERY_INTERVAL_SECONDS", "0.01")
    with pytest.raises(SettingsError, match="WORKCOORD_RECOVERY_INTERVAL_SECONDS"):
        load(RecoverySettings)


def test_secret_values_are_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKCOORD_SERVICE_KEY", "")
    monkeypatch.setenv("WORKCOORD_MAX_BODY_BYTES", "-1")
    with pytest.raises(SettingsError, match="WORKCOORD_MAX_BODY_BYTES"):
        load(GatewaySettings)


def test_tls_files_are_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    monkeypatch.setenv("WORKCOORD_TLS_CERT_FILE", str(cert))
    with pytest.raises(SettingsError, match="WORKCOORD_TLS_KEY_FILE"):
        load(GatewaySettings)
    monkeypatch.setenv("WORKCOORD_TLS_KEY_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(SettingsError, match="no such file"):
        load(GatewaySettings)


def test_trusted_proxies_and_public_origins_parse_and_refuse_junk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load(GatewaySettings).trusted_proxies == ["127.0.0.1", "::1"]
    monkeypatch.setenv("WORKCOORD_TRUSTED_PROXIES", "10.0.0.0/8, fd00::/8,192.168.1.7")
    monkeypatch.setenv("WORKCOORD_PUBLIC_ORIGINS", '["https://WC.example.com/"]')
    settings = load(GatewaySettings)
    assert settings.trusted_proxies == ["10.0.0.0/8", "fd00::/8", "192.168.1.7"]
    assert settings.public_origins == ["https://wc.example.com"]
    monkeypatch.setenv("WORKCOORD_TRUSTED_PROXIES", "*")
    assert load(GatewaySettings).trusted_proxies == ["*"]
    monkeypatch.setenv("WORKCOORD_TRUSTED_PROXIES", "ingress-nginx")
    monkeypatch.setenv("WORKCOORD_PUBLIC_ORIGINS", "https://wc.example.com/app")
    with pytest.raises(SettingsError) as refused:
        load(GatewaySettings)
    assert "WORKCOORD_TRUSTED_PROXIES" in str(refused.value)
    assert "WORKCOORD_PUBLIC_ORIGINS" in str(refused.value)
