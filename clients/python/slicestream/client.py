"""Requests to the server's requests endpoint (ZeroMQ DEALER; docs/protocol.md, "Requests and
replies"): set, move and remove live slices, reconstruct any slice at once as a numpy array,
parameters, refinement, status. A non-OK answer raises RequestError."""
import itertools
import time

import numpy as np
import zmq

from .curve import secure
from .errors import ProtocolError, RequestError
from ._socket_owner import SocketOwner
from .wire import PROTOCOL_VERSION, v1

_FILTERS = {name: getattr(v1, f"FILTER_WINDOW_{name.upper().replace('-', '_')}")
            for name in ("ram-lak", "shepp-logan", "cosine", "hamming", "hann")}
_MODES = {"sliding": v1.WINDOW_MODE_SLIDING, "rotation": v1.WINDOW_MODE_PER_ROTATION}


def _array(payload, shape, dtype, what):
    """`payload` as an array of `shape` and `dtype` (a view); a ProtocolError naming `what` when
    its size is another."""
    expected = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if payload is None or len(payload) != expected:
        raise ProtocolError(f"a {what} has {expected} bytes, "
                            f"not {0 if payload is None else len(payload)}")
    return np.frombuffer(payload, dtype=dtype).reshape(shape)


def slice_values(header, payload):
    """A slice payload (float32, x fastest, row 0 at the bottom) as an array (height, width);
    np.flipud() of it is upright (row 0 at the top)."""
    return _array(payload, (header.height, header.width), "<f4",
                  f"{header.width} x {header.height} slice").copy()


def preview_values(preview, payload):
    """A preview payload (float32, x fastest) as an array (z, y, x)."""
    return _array(payload, (preview.size_z, preview.size_y, preview.size_x), "<f4",
                  f"{preview.size_x} x {preview.size_y} x {preview.size_z} preview").copy()


def _half_values(publish_header, shape, payload, what):
    """A binary16 payload (the fp16 topics) as a float32 array of `shape`: h * scale."""
    if publish_header.payload_encoding != v1.PAYLOAD_ENCODING_FLOAT16:
        raise ProtocolError("an fp16 publication's header names another payload encoding")
    if not np.isfinite(publish_header.payload_scale):
        raise ProtocolError("an fp16 publication's scale is not finite")
    halves = _array(payload, shape, "<f2", what)
    return halves.astype(np.float32) * np.float32(publish_header.payload_scale)


def half_slice_values(publish_header, header, payload):
    """A binary16 slice payload (the fp16 topics) as a float32 array (height, width): h * scale."""
    return _half_values(publish_header, (header.height, header.width), payload,
                        f"{header.width} x {header.height} fp16 slice")


def half_preview_values(publish_header, preview, payload):
    """A binary16 preview payload ("fp16-preview") as a float32 array (z, y, x): h * scale."""
    return _half_values(publish_header, (preview.size_z, preview.size_y, preview.size_x), payload,
                        f"{preview.size_x} x {preview.size_y} x {preview.size_z} fp16 preview")


class Client(SocketOwner):
    def __init__(self, requests_endpoint, timeout_ms=10000, context=None, curve=None):
        """`curve`: CurveKeys (slicestream.curve) for a server with CURVE; None: plain."""
        self._context = context or zmq.Context.instance()
        self._curve = curve
        self._endpoint = requests_endpoint
        self._timeout_ms = timeout_ms
        self._ids = itertools.count(1)
        self._socket = None
        self._connect()

    def _connect(self):
        if self._socket is not None:
            self._socket.close(linger=0)
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        # A DEALER without a connection (e.g. after the server refused its CURVE key) blocks in
        # send: bounded by the timeout too.
        self._socket.setsockopt(zmq.SNDTIMEO, self._timeout_ms)
        secure(self._socket, self._curve)
        self._socket.connect(self._endpoint)

    def call(self, request):
        """Sends a v1.Request (its id and version are set here) and returns (Reply, payload or
        None). Raises TimeoutError when no answer comes in time (the socket is then replaced,
        so a late answer is never mistaken for the next one)."""
        request.protocol_version = PROTOCOL_VERSION
        request.request_id = next(self._ids)
        deadline = time.monotonic() + self._timeout_ms / 1000
        try:
            self._socket.send(request.SerializeToString())
        except zmq.Again:
            self._connect()
            raise TimeoutError(f"no connection to {self._endpoint} within {self._timeout_ms} ms") from None
        while True:
            remaining_ms = int(1000 * (deadline - time.monotonic()))
            if remaining_ms <= 0 or not self._socket.poll(remaining_ms):
                self._connect()
                raise TimeoutError(f"no reply from {self._endpoint} within {self._timeout_ms} ms")
            parts = self._socket.recv_multipart()
            reply = v1.Reply()
            try:
                reply.ParseFromString(parts[0])
            except Exception as error:
                raise ProtocolError("the reply is not a slicestream.v1.Reply") from error
            if reply.request_id == request.request_id:
                return reply, (parts[1] if len(parts) > 1 else None)

    def _checked(self, request):
        reply, payload = self.call(request)
        if reply.code != v1.STATUS_CODE_OK:
            raise RequestError(v1.StatusCode.Name(reply.code).replace("STATUS_CODE_", ""),
                               reply.reason, reply.message)
        return reply, payload

    def status(self):
        """GetStatus -> v1.StatusReport."""
        return self._checked(v1.Request(get_status=v1.GetStatus()))[0].status

    def get_slice(self, orientation, width, height):
        """Reconstructs the slice from the current window at once -> (v1.SliceHeader, array
        (height, width) of attenuation per mm, row 0 at the bottom)."""
        request = v1.Request(get_slice=v1.GetSlice(width=width, height=height))
        request.get_slice.orientation.values.extend(float(v) for v in orientation)
        reply, payload = self._checked(request)
        if payload is None:
            raise ProtocolError("a GetSlice reply without its values")
        return reply.slice, slice_values(reply.slice, payload)

    def set_slice(self, slice_id, orientation, width, height):
        """Creates or moves live slice `slice_id` (reconstructed at once, then with every frame)."""
        request = v1.Request(set_slice=v1.SetSlice(slice_id=slice_id, width=width, height=height))
        request.set_slice.orientation.values.extend(float(v) for v in orientation)
        self._checked(request)

    def remove_slice(self, slice_id):
        self._checked(v1.Request(remove_slice=v1.RemoveSlice(slice_id=slice_id)))

    def set_parameters(self, filter=None, filter_cutoff=None, mode=None, rotation_axis_offset_px=None,
                       publish_rate_hz=None, preview_interval_s=None):
        """Changes what is given (filter: 'ram-lak', 'shepp-logan', 'cosine', 'hamming', 'hann';
        mode: 'sliding', 'rotation') -> the v1.Parameters in force."""
        p = v1.SetParameters()
        if filter is not None:
            p.filter = _FILTERS[filter]
        if filter_cutoff is not None:
            p.filter_cutoff = filter_cutoff
        if mode is not None:
            p.window_mode = _MODES[mode]
        if rotation_axis_offset_px is not None:
            p.rotation_axis_offset_px = rotation_axis_offset_px
        if publish_rate_hz is not None:
            p.publish_rate_hz = publish_rate_hz
        if preview_interval_s is not None:
            p.preview_interval_s = preview_interval_s
        return self._checked(v1.Request(set_parameters=p))[0].parameters

    def set_refinement(self, slice_id, enabled=True, iterations=50, interval_s=1.0, method=None,
                       regularizer=None, weight=None, non_negative=None, stop=None,
                       discrepancy_factor=None):
        """Refinement of live axial slice `slice_id` (published on topic 'refined'): at most
        `iterations` iterations; settings left None take the server's defaults (FISTA, x >= 0,
        TV, stop at the noise level; docs/refinement.md)."""
        settings = v1.RefinementSettings(method=method or "", regularizer=regularizer or "",
                                         stop=stop or "")
        if weight is not None:
            settings.weight = weight
        if non_negative is not None:
            settings.non_negative = non_negative
        if discrepancy_factor is not None:
            settings.discrepancy_factor = discrepancy_factor
        self._checked(v1.Request(set_refinement=v1.SetRefinement(
            slice_id=slice_id, enabled=enabled, iterations=iterations, interval_s=interval_s,
            settings=settings)))

    def wait_for_scan(self, scan_id, frames_sent, baseline, timeout_s=60):
        """After a ScanEnd: waits until the server has ended scan `scan_id` with `frames_sent`
        more frames received than in `baseline` (a status taken before the ScanBegin), as
        slicestream-detector does (docs/protocol.md, "Delivery"). Returns the status."""
        before = baseline.counters.get("frames_received", 0)
        deadline = time.monotonic() + timeout_s
        while True:
            status = self.status()
            received = status.counters.get("frames_received", 0) - before
            if status.scan_id == scan_id and status.scan_state == "ended" and received >= frames_sent:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"scan {scan_id}: {received} of {frames_sent} frames received, "
                                   f"state {status.scan_state!r}")
            time.sleep(0.02)
