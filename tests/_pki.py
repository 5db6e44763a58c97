"""A throwaway PKI for TLS tests of the HTTP adapters (needs the ``openssl`` command)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> Path:
    """A CA with a server certificate for 127.0.0.1 and a client certificate, written to ``d``
    (the test is skipped without openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
             "-subj", "/CN=test-ca", cwd=d)  # fmt: skip
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "1",
                 "-extfile", f"{name}.ext", cwd=d)  # fmt: skip
    return d


def server_tls(pki: Path, *, require_client_cert: bool) -> ssl.SSLContext:
    """The server side's TLS context, optionally demanding a client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "server.pem", pki / "server.key")
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki / "ca.pem")
    return ctx
