"""Streaming frames as a detector does: ScanBegin, darks, flats, projections, ScanEnd, each a
ZeroMQ message [DataHeader][pixels] on the server's data endpoint (PUSH; docs/protocol.md)."""
import time

import numpy as np
import zmq

from ._socket_owner import SocketOwner
from .wire import PROTOCOL_VERSION, v1

_PIXEL_TYPES = {
    np.dtype("<u2"): v1.PIXEL_TYPE_UINT16,
    np.dtype("<u4"): v1.PIXEL_TYPE_UINT32,
    np.dtype("<f4"): v1.PIXEL_TYPE_FLOAT32,
}
_KINDS = {"dark": v1.FRAME_KIND_DARK, "flat": v1.FRAME_KIND_FLAT, "projection": v1.FRAME_KIND_PROJECTION}


def _set_box(wire, box):
    (wire.min_mm.x, wire.min_mm.y, wire.min_mm.z) = box.min
    (wire.max_mm.x, wire.max_mm.y, wire.max_mm.z) = box.max


class Detector(SocketOwner):
    """Sends one scan at a time. PUSH never drops: when the server is full, `send_*` blocks
    (back-pressure) for at most `send_timeout_ms` (then zmq.Again)."""

    def __init__(self, data_endpoint, context=None, send_timeout_ms=60000, send_hwm=64):
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.PUSH)
        self._socket.setsockopt(zmq.SNDHWM, send_hwm)
        self._socket.setsockopt(zmq.SNDTIMEO, send_timeout_ms)
        self._socket.setsockopt(zmq.LINGER, 10000)
        self._socket.connect(data_endpoint)
        self.scan_id = None
        self._shape = None
        self._dtype = None
        self._indices = {}

    def begin_parallel_scan(self, scan_id, angles_rad, rows, cols, box, pixel_width_mm=1.0,
                            pixel_height_mm=1.0, dtype=np.uint16, darks=0, flats=0,
                            already_linear=False, description=""):
        """ScanBegin of a parallel-beam scan (ASTRA parallel3d): one rotation is `angles_rad`."""
        begin = v1.ScanBegin(scan_id=scan_id, detector_rows=rows, detector_cols=cols,
                             pixel_width_mm=pixel_width_mm, pixel_height_mm=pixel_height_mm,
                             dark_count=darks, flat_count=flats, already_linear=already_linear,
                             projections_per_rotation=len(angles_rad), description=description)
        begin.parallel.angles_rad.extend(float(a) for a in angles_rad)
        self.begin_scan(begin, box, dtype)

    def begin_scan(self, scan_begin, box, dtype=np.uint16):
        """Any ScanBegin (cone, vectors, ...): `box` fills its volume, `dtype` its pixel type."""
        dtype = np.dtype(dtype).newbyteorder("<")
        if dtype not in _PIXEL_TYPES:
            raise ValueError(f"pixels must be uint16, uint32 or float32, not {dtype}")
        scan_begin.pixel_type = _PIXEL_TYPES[dtype]
        _set_box(scan_begin.volume, box)
        self._send(v1.DataHeader(protocol_version=PROTOCOL_VERSION, scan_begin=scan_begin))
        self.scan_id = scan_begin.scan_id
        self._shape = (scan_begin.detector_rows, scan_begin.detector_cols)
        self._dtype = dtype
        self._indices = {kind: 0 for kind in _KINDS}

    def send_frame(self, pixels, kind="projection", index=None, position=None, angle_rad=None,
                   timestamp_ns=None):
        """One frame (rows, cols) of the scan's pixel type, row 0 first. `index` defaults to the
        frame's running number within its kind; `position` (slot of the rotation) or
        `angle_rad` places a projection (default: index mod projections per rotation)."""
        if self.scan_id is None:
            raise RuntimeError("begin a scan first")
        pixels = np.ascontiguousarray(pixels, dtype=self._dtype)
        if pixels.shape != self._shape:
            raise ValueError(f"a frame of this scan is {self._shape}, not {pixels.shape}")
        if index is None:
            index = self._indices[kind]
        self._indices[kind] = index + 1
        frame = v1.Frame(scan_id=self.scan_id, kind=_KINDS[kind], index=index,
                         rows=self._shape[0], cols=self._shape[1], pixel_type=_PIXEL_TYPES[self._dtype],
                         timestamp_ns=timestamp_ns if timestamp_ns is not None else time.monotonic_ns())
        if position is not None:
            frame.position = position
        if angle_rad is not None:
            frame.angle_rad = angle_rad
        header = v1.DataHeader(protocol_version=PROTOCOL_VERSION, frame=frame)
        self._socket.send_multipart([header.SerializeToString(), memoryview(pixels).cast("B")])

    def end_scan(self, frames_sent=None):
        """ScanEnd; `frames_sent` defaults to the projections sent."""
        if frames_sent is None:
            frames_sent = self._indices.get("projection", 0)
        self._send(v1.DataHeader(protocol_version=PROTOCOL_VERSION,
                                 scan_end=v1.ScanEnd(scan_id=self.scan_id, frames_sent=frames_sent)))
        return frames_sent

    def _send(self, header):
        self._socket.send(header.SerializeToString())
