"""Watching what the server publishes (ZeroMQ SUB on the slices endpoint): live slices, refined
slices, preview volumes and events, as numpy arrays (docs/protocol.md, "Slices, previews and
events"). PUB/SUB: only what is published after the subscription reached the server arrives.
After another subscriber stalled, the server sends the latest publication of a stream again; a
repeat (the stream's last sequence and published_ns) is skipped here. With fp16=True slices,
refined slices and previews travel as binary16 (the topics "fp16-slice", "fp16-refined" and
"fp16-preview": half the bytes, 11 significant bits of the largest value) and arrive as float32
arrays all the same."""
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import zmq

from .client import half_preview_values, half_slice_values, preview_values, slice_values
from .curve import secure
from .errors import ProtocolError
from ._socket_owner import SocketOwner
from .wire import v1

TOPICS = ("slice", "refined", "preview", "event")
HALF_TOPICS = {"slice": "fp16-slice", "refined": "fp16-refined", "preview": "fp16-preview"}


@dataclass
class Publication:
    topic: str  # 'slice', 'refined', 'preview' or 'event'
    header: object  # v1.SliceHeader, v1.RefinedSliceHeader, v1.PreviewHeader or v1.Event
    values: Optional[np.ndarray]  # slices (height, width), row 0 at the bottom; preview (z, y, x)


class Subscriber(SocketOwner):
    def __init__(self, slices_endpoint, topics=TOPICS, context=None, receive_hwm=1000, curve=None,
                 fp16=False):
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.RCVHWM, receive_hwm)
        self._socket.setsockopt(zmq.LINGER, 0)
        for topic in topics:
            if topic not in TOPICS:
                raise ValueError(f"unknown topic {topic!r}: one of {TOPICS}")
            wire_topic = HALF_TOPICS.get(topic, topic) if fp16 else topic
            self._socket.setsockopt(zmq.SUBSCRIBE, wire_topic.encode())
        secure(self._socket, curve)
        self._socket.connect(slices_endpoint)
        self._last_stamps = {}  # (topic, slice id) -> (sequence, published_ns) last received

    def receive(self, timeout_ms=1000):
        """The next publication, or None after `timeout_ms` (-1: wait forever)."""
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000.0
        while True:
            left_ms = -1 if timeout_ms < 0 else max(0, int((deadline - time.monotonic()) * 1000))
            publication = self._receive_any(left_ms)
            if publication is None or not self._repeats_last(publication):
                return publication

    def _repeats_last(self, publication):
        if publication.topic == "event":
            return False  # events are never sent twice
        header = publication.header
        slice_header = header.slice if publication.topic == "refined" else header
        stream = (publication.topic, getattr(slice_header, "slice_id", 0))
        stamp = (slice_header.sequence, slice_header.published_ns)
        if self._last_stamps.get(stream) == stamp:
            return True
        self._last_stamps[stream] = stamp
        return False

    def _receive_any(self, timeout_ms):
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
        if topic == "fp16-slice":
            return Publication("slice", header.slice, half_slice_values(header, header.slice, payload))
        if topic == "fp16-refined":
            return Publication("refined", header.refined,
                               half_slice_values(header, header.refined.slice, payload))
        if topic == "preview":
            return Publication(topic, header.preview, preview_values(header.preview, payload))
        if topic == "fp16-preview":
            return Publication("preview", header.preview,
                               half_preview_values(header, header.preview, payload))
        if topic == "event":
            return Publication(topic, header.event, None)
        raise ProtocolError(f"unknown topic {topic!r}")

    def __iter__(self):
        """Publications as they arrive (blocks; stop with break)."""
        while True:
            publication = self.receive(timeout_ms=-1)
            if publication is not None:
                yield publication
