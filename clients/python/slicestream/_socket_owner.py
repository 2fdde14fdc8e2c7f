"""What the client's classes share: one ZeroMQ socket, closed by close() or a with block."""


class SocketOwner:
    _socket = None

    def close(self):
        """Closes the socket (its LINGER option, set where it was made, says what is waited for)."""
        if self._socket is not None:
            self._socket.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
