"""Watching what the server publishes (ZeroMQ SUB on the slices endpoint): live slices, refined
slices, preview volumes and events, as numpy arrays (docs/protocol.md, "Slices, previews and
events"). PUB/SUB: only what is published after the subscription reached the server arrives."""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import zmq

from .client import slice_values
from .errors import ProtocolError
from ._socket_owner import SocketOwner
from .wire import v1

TOPICS = ("slice", "refined", "preview", "event")


@dataclass
class Publication:
    topic: str  # 'slice', 'refined', 'preview' or 'event'
    header: object  # v1.SliceHeader, v1.RefinedSliceHeader, v1.PreviewHeader or v1.Event
    values: Optional[np.ndarray]  # slices (height, width), row 0 at the bottom; preview (z, y, x)


class Subscriber(SocketOwner):
    def __init__(self, slices_endpoint, topics=TOPICS, context=None, receive_hwm=1000):
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.RCVHWM, receive_hwm)
        self._socket.setsockopt(zmq.LINGER, 0)
        for topic in topics:
            if topic not in TOPICS:
                raise ValueError(f"unknown topic {topic!r}: one of {TOPICS}")
            self._socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self._socket.connect(slices_endpoint)

    def receive(self, timeout_ms=1000):
        """The next publication, or None after `timeout_ms`."""
        if not self._socket.poll(timeout_ms):
            return None
        parts = self._socket.recv_multipart()
        if len(parts) < 2:
            raise ProtocolError(f"a publication has at least two parts, not {len(parts)}")
        topic = parts[0].decode("ascii", "replace")
        header = v1.PublishHeader()
        header.ParseFromString(parts[1])
        payload = parts[2] if len(parts) > 2 else None
        if topic == "slice":
            return Publication(topic, header.slice, slice_values(header.slice, payload))
        if topic == "refined":
            return Publication(topic, header.refined, slice_values(header.refined.slice, payload))
        if topic == "preview":
            p = header.preview
            values = np.frombuffer(payload, dtype="<f4").reshape(p.size_z, p.size_y, p.size_x).copy()
            return Publication(topic, p, values)
        if topic == "event":
            return Publication(topic, header.event, None)
        raise ProtocolError(f"unknown topic {topic!r}")

    def __iter__(self):
        """Publications as they arrive (blocks; stop with break)."""
        while True:
            publication = self.receive(timeout_ms=-1)
            if publication is not None:
                yield publication
