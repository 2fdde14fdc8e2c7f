"""The Python client against a real server: a numpy phantom streamed as a detector comes back as
slices that match it (one-shot GetSlice and live publications, float32 and fp16), slices and parameters are set
and removed, refusals raise RequestError with the server's reason, and /metrics is valid
Prometheus text (read by prometheus_client's parser, an independent one)."""
import os
import urllib.request

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from slicestream import Box, Client, Detector, RequestError, Subscriber, axis_slice, parallel_vectors
from slicestream.geometry import pixel_centres
from slicestream.phantom import Sphere, densities, line_integrals

# Deadlines stretch under sanitizers (scripts/sanitize sets the factor; tests/common/time_scale.hpp).
TIME_SCALE = max(1.0, float(os.environ.get("SLICESTREAM_TEST_TIME_SCALE", "1")))

ROWS, COLS, ANGLES = 40, 64, 90
BOX = Box((-32.0, -32.0, -20.0), (32.0, 32.0, 20.0))
PHANTOM = [
    Sphere((0.0, 0.0, 0.0), 22.0, 0.010),
    Sphere((8.0, -6.0, 2.0), 7.0, 0.012),
    Sphere((-9.0, 7.0, -3.0), 5.0, -0.006),
]
DARK, FLAT = 100, 40000


def relative_error(values, reference):
    return float(np.linalg.norm(values - reference) / np.linalg.norm(reference))


def stream_phantom(server, scan_id, client):
    """A parallel-beam scan of the spheres: uint16 counts with a dark and a flat."""
    angles = np.arange(ANGLES) * np.pi / ANGLES
    vectors = parallel_vectors(angles)
    baseline = client.status()
    with Detector(server.data) as detector:
        detector.begin_parallel_scan(scan_id, angles, ROWS, COLS, BOX, darks=1, flats=1,
                                     description="python client test")
        detector.send_frame(np.full((ROWS, COLS), DARK), kind="dark")
        detector.send_frame(np.full((ROWS, COLS), FLAT), kind="flat")
        for vector in vectors:
            counts = DARK + (FLAT - DARK) * np.exp(-line_integrals(PHANTOM, vector, ROWS, COLS))
            detector.send_frame(np.round(counts).astype(np.uint16))
        sent = detector.end_scan()
        client.wait_for_scan(scan_id, sent + 2, baseline)
    return sent


def test_a_numpy_phantom_scan_comes_back_as_matching_slices(server):
    with Client(server.requests) as client, Subscriber(server.slices, topics=("slice",)) as live, \
            Subscriber(server.slices, topics=("slice",), fp16=True) as compact:
        client.status()  # the server answers: the subscriptions have had time to arrive
        stream_phantom(server, 31, client)

        # One-shot: an axial slice through the small spheres, at the phantom's resolution.
        orientation = axis_slice("z", BOX, fraction=(2.0 - BOX.min[2]) / BOX.extent[2])
        header, values = client.get_slice(orientation, 64, 64)
        assert values.shape == (64, 64) and header.projections_integrated == ANGLES
        reference = densities(PHANTOM, pixel_centres(orientation, 64, 64))
        error = relative_error(values, reference)
        print(f"GetSlice axial: relative error {error:.4f} to the phantom")
        assert error < 0.2
        inside = np.linalg.norm(pixel_centres(orientation, 64, 64)[..., :2] - [0.0, -15.0], axis=-1) < 3
        assert abs(values[inside].mean() - 0.010) < 0.03 * 0.010, "absolute scale (attenuation per mm)"

        # Live: the default axial slice's final publication equals the one-shot reconstruction.
        final = final_axial_slice(live)
        o = list(final.header.orientation.values)
        _, again = client.get_slice(o, final.header.width, final.header.height)
        assert relative_error(final.values, again) < 1e-4
        assert relative_error(final.values, densities(PHANTOM, pixel_centres(o, 48, 48))) < 0.2

        # The same slice over the fp16 topic: float32 arrays within binary16's rounding.
        compact_final = final_axial_slice(compact)
        assert compact_final.values.dtype == np.float32
        assert compact_final.header.published_ns == final.header.published_ns
        error = relative_error(compact_final.values, final.values)
        print(f"fp16 live slice: relative error {error:.2e} to the float32 one")
        assert 0 < error < 5e-4


def final_axial_slice(subscriber):
    """The default axial slice's publication with every projection of scan 31."""
    while True:
        publication = subscriber.receive(timeout_ms=int(20000 * TIME_SCALE))
        assert publication is not None, "the final live slices were not published"
        h = publication.header
        if h.slice_id == 2 and h.scan_id == 31 and h.projections_integrated == ANGLES:
            return publication


def test_slices_and_parameters_are_set_and_removed(server):
    with Client(server.requests) as client:
        client.set_slice(7, axis_slice("x", BOX, 0.3), 32, 24)
        assert 7 in [s.slice_id for s in client.status().slices]
        client.remove_slice(7)
        assert 7 not in [s.slice_id for s in client.status().slices]
        with pytest.raises(RequestError) as refused:
            client.remove_slice(7)
        assert refused.value.code == "NOT_FOUND" and refused.value.reason == "unknown_slice"

        parameters = client.set_parameters(filter="hann", filter_cutoff=0.5, mode="rotation")
        assert parameters.filter_cutoff == pytest.approx(0.5)
        assert client.status().parameters.window_mode == parameters.window_mode
        with pytest.raises(RequestError) as refused:
            client.set_parameters(filter_cutoff=3)
        assert refused.value.code == "INVALID_ARGUMENT" and refused.value.reason == "bad_value"
        with pytest.raises(RequestError) as refused:
            client.get_slice([0] * 9, 16, 16)
        assert refused.value.code == "INVALID_ARGUMENT"


def test_frames_that_do_not_fit_the_scan_are_refused_before_sending(server):
    with Detector(server.data) as detector:
        detector.begin_parallel_scan(40, np.arange(4) * np.pi / 4, 8, 8, BOX)
        with pytest.raises(ValueError):
            detector.send_frame(np.zeros((8, 9)))
        with pytest.raises(ValueError):
            detector.begin_parallel_scan(41, [0.0], 8, 8, BOX, dtype=np.float64)


def test_metrics_are_valid_prometheus_text(server):
    with Client(server.requests) as client:
        stream_phantom(server, 32, client)
    text = urllib.request.urlopen(server.http + "/metrics", timeout=10).read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # prometheus_client names counter families without _total.
    integrated = families["slicestream_projections_integrated"].samples[0].value
    assert integrated == ANGLES
    latency = families["slicestream_frame_to_slice_latency_seconds"]
    assert latency.type == "histogram"
    count = [s.value for s in latency.samples if s.name.endswith("_count")][0]
    assert count == ANGLES
    assert families["slicestream_stage_service_seconds"].type == "histogram"
