"""Signed exports: each installation signs what it releases, so that a file comes back as already private only when
a key the curator trusts vouches for it (never on a curator's unsigned word).

Each installation has an Ed25519 signing key (``$DPLENS_HOME/signing.key``, PKCS#8 PEM, mode 0600, made on first
use next to the installation key). A JSON export carries ``"signature": {"algorithm": "Ed25519", "key_id": ...,
"value": ...}`` over its *canonical payload*: the tag ``dplens-export-v1``, a newline, then the export without its
``signature`` member as canonical JSON (keys sorted, no blanks, ASCII, no NaN). Every value and every metadata field
is covered: change one digit, a label or the stated ε, and the signature fails. ``key_id`` names the public key
(the first 16 hex digits of SHA-256 of its raw 32 bytes); it is a hint only, never trusted by itself.

A file verifies when its signature is valid under this installation's public key or under a public key the curator
added as trusted (``dplens ledger --trust-key FILE``, or the Ledger page; kept per curator in the store).

>>> import tempfile, pathlib, json
>>> home = pathlib.Path(tempfile.mkdtemp()) / "home"
>>> signed = sign_document({"mechanism": "identity", "counts": [1.5, -2.0]}, home=home)
>>> verify_export(signed.encode(), [public_key(home)]) == key_id(public_key(home))
True
>>> doc = json.loads(signed); doc["counts"][0] = 2.5
>>> verify_export(json.dumps(doc).encode(), [public_key(home)]) is None
True
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from dplens.core.data.home import default_home, secret_file
from dplens.core.data.streamed_json import iter_json

SIGNING_KEY_FILE = "signing.key"
SIGNATURE_FIELD = "signature"
ALGORITHM = "Ed25519"
PAYLOAD_TAG = b"dplens-export-v1\n"
MAX_PUBLIC_KEY_BYTES = 4096  # a PEM public key is ~113 bytes
_KEYS: dict[str, Ed25519PrivateKey] = {}
_LOCK = threading.Lock()


def signing_key(home: Path | None = None) -> Ed25519PrivateKey:
    """The installation's signing key, ``home``/``signing.key`` (default ``$DPLENS_HOME``), made on first use.

    Made 0600 in a private home, atomically (the first key linked into place is everyone's); read once per process.

    Raises:
        ValueError: the file is not an Ed25519 private key, naming it and the way out.
    """
    folder = home if home is not None else default_home()
    path = folder / SIGNING_KEY_FILE
    with _LOCK:
        if str(path) not in _KEYS:
            _KEYS[str(path)] = _read_or_make(path)
        return _KEYS[str(path)]


def _read_or_make(path: Path) -> Ed25519PrivateKey:
    pem = secret_file(path, lambda: Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        limit=MAX_PUBLIC_KEY_BYTES)
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"signing key {str(path)!r} is not an Ed25519 private key (PEM): restore it from a backup, "
                         "or move it away to make a new one (exports signed by the old key then verify only where "
                         "its public key is trusted)")
    return key


def public_key(home: Path | None = None) -> bytes:
    """This installation's public key, as the raw 32 bytes."""
    return signing_key(home).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_key_pem(home: Path | None = None) -> str:
    """This installation's public key as a PEM file's text: what another installation trusts."""
    return signing_key(home).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def key_id(raw: bytes) -> str:
    """The name of a public key: the first 16 hex digits of SHA-256 of its raw bytes."""
    return hashlib.sha256(bytes(raw)).hexdigest()[:16]


def read_public_key(data: bytes) -> bytes:
    """A trusted key from a file's bytes: a PEM Ed25519 public key (what ``public_key_pem`` writes); raw 32 bytes.

    Raises:
        ValueError: anything else, naming the rule (the file's content is not echoed).
    """
    if len(data) > MAX_PUBLIC_KEY_BYTES:
        raise ValueError(f"a public key file is at most {MAX_PUBLIC_KEY_BYTES} bytes (a PEM Ed25519 key is about "
                         f"113), got {len(data):,}")
    try:
        key = serialization.load_pem_public_key(bytes(data))
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("the file is not an Ed25519 public key in PEM ('-----BEGIN PUBLIC KEY-----'): use the file "
                         "the other installation writes with `dplens ledger --public-key FILE` (or its Ledger page)")
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def canonical_payload(doc: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: the tag, then ``doc`` without ``signature`` as canonical JSON.

    >>> canonical_payload({"b": [1.0, 2], "a": "é", "signature": {}})
    b'dplens-export-v1\\n{"a":"\\\\u00e9","b":[1.0,2]}'
    """
    return _payload(doc).getvalue()


def _payload(doc: Mapping[str, Any]) -> io.BytesIO:
    """``canonical_payload`` gathered piece by piece (``iter_json``): one buffer, never a list of its values."""
    buffer = io.BytesIO()
    buffer.write(PAYLOAD_TAG)
    body = {k: v for k, v in doc.items() if k != SIGNATURE_FIELD}
    for piece in iter_json(body, sort_keys=True, separators=(",", ":")):
        buffer.write(piece.encode("ascii"))  # ensure_ascii: the text is ASCII
    return buffer


def _signed(doc: Mapping[str, Any], home: Path | None) -> dict[str, Any]:
    """``doc`` with this installation's ``signature`` member added (last), its other members unchanged."""
    payload = _payload(doc)
    signature = signing_key(home).sign(payload.getbuffer())  # Ed25519 signs the whole message: one buffer
    return {**{k: v for k, v in doc.items() if k != SIGNATURE_FIELD},
            SIGNATURE_FIELD: {"algorithm": ALGORITHM, "key_id": key_id(public_key(home)),
                              "value": base64.b64encode(signature).decode()}}


def sign_document(doc: Mapping[str, Any], *, home: Path | None = None, indent: int | None = 1) -> str:
    """``doc`` as JSON text with this installation's ``signature`` member added (module docstring).

    ``doc``'s arrays may be NumPy arrays or lazy sequences (``dplens.core.data.streamed_json``): the text is the
    one ``json.dumps`` gives for them as lists.
    """
    return "".join(iter_json(_signed(doc, home), indent=indent))


def write_signed(doc: Mapping[str, Any], out: BinaryIO, *, home: Path | None = None, indent: int | None = 1) -> None:
    """Write ``sign_document(doc, home=home, indent=indent)`` to ``out`` as ASCII bytes, a chunk of values at a
    time: the signature is computed first (over the canonical payload, held once), then the text is streamed.

    >>> import io, tempfile, pathlib, numpy as np
    >>> home = pathlib.Path(tempfile.mkdtemp()) / "home"
    >>> out = io.BytesIO()
    >>> write_signed({"counts": np.array([1.5, -2.0])}, out, home=home)
    >>> verify_export(out.getvalue(), [public_key(home)]) == key_id(public_key(home))
    True
    """
    for piece in iter_json(_signed(doc, home), indent=indent):
        out.write(piece.encode("ascii"))


def verify_document(doc: Mapping[str, Any], trusted: Iterable[bytes]) -> str | None:
    """The id of the trusted key whose signature ``doc`` carries, or None (unsigned, malformed, tampered, or signed
    by a key not in ``trusted``: raw public keys)."""
    signature = doc.get(SIGNATURE_FIELD)
    if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM:
        return None
    try:
        value = base64.b64decode(str(signature.get("value", "")), validate=True)
        payload = canonical_payload(doc)
    except (ValueError, TypeError):
        return None
    for raw in trusted:
        try:
            Ed25519PublicKey.from_public_bytes(bytes(raw)).verify(value, payload)
        except (InvalidSignature, ValueError):
            continue
        return key_id(raw)
    return None


def verify_export(data: bytes, trusted: Iterable[bytes]) -> str | None:
    """``verify_document`` on a JSON export's bytes; None for what is not a JSON object (a CSV export is unsigned)."""
    try:
        doc = json.loads(bytes(data).decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return verify_document(doc, trusted) if isinstance(doc, dict) else None


__all__ = ["ALGORITHM", "MAX_PUBLIC_KEY_BYTES", "SIGNATURE_FIELD", "canonical_payload", "key_id", "public_key",
           "public_key_pem", "read_public_key", "sign_document", "signing_key", "verify_document", "verify_export",
           "write_signed"]
