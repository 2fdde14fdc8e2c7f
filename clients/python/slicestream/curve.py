"""ZeroMQ CURVE for a server started with --curve-secret-key (docs/operations.md,
"Authentication"): the server's public key and this client's key pair, from the files that
`slicestream-ctl keygen` writes (one Z85 key a line; empty lines and '#' lines are comments)."""
from dataclasses import dataclass

import zmq


@dataclass(frozen=True)
class CurveKeys:
    server_public_key: str  # Z85, 40 characters
    public_key: str
    secret_key: str


def read_key(path):
    """The Z85 key in a key file; ValueError naming the file when there is none."""
    with open(path, encoding="ascii") as f:
        for line in f:
            text = line.strip()
            if text and not text.startswith("#"):
                if len(text) != 40:
                    raise ValueError(f"{path}: '{text[:48]}' is not a 40-character Z85 key")
                return text
    raise ValueError(f"{path}: no key")


def curve_keys(server_key_file, client_key_file):
    """CurveKeys from the server's public key file and this client's secret key file (its public
    key is derived, as the server derives it)."""
    secret = read_key(client_key_file)
    public = zmq.curve_public(secret.encode("ascii")).decode("ascii")
    return CurveKeys(read_key(server_key_file), public, secret)


def secure(socket, curve):
    """Makes `socket` a CURVE client before it connects (nothing when `curve` is None)."""
    if curve is None:
        return
    socket.curve_serverkey = curve.server_public_key.encode("ascii")
    socket.curve_publickey = curve.public_key.encode("ascii")
    socket.curve_secretkey = curve.secret_key.encode("ascii")
