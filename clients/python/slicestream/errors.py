"""Errors of the client."""


class RequestError(Exception):
    """The server answered a request with a non-OK code: `code` (e.g. "INVALID_ARGUMENT"),
    `reason` (machine-readable, e.g. "bad_orientation", docs/protocol.md) and its message."""

    def __init__(self, code, reason, message):
        super().__init__(f"{code} [{reason}]: {message}" if reason else f"{code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class ProtocolError(Exception):
    """A message from the server that does not follow docs/protocol.md."""
