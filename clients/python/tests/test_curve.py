"""CURVE from Python: a server started with --curve-secret-key answers a client whose key is
allowed and nothing else (a plain client and one with another key time out)."""
import os

import numpy as np
import pytest
import zmq

from conftest import RunningServer
from slicestream import Box, Client, Detector, Subscriber, curve_keys


def write_pair(folder, name):
    public, secret = zmq.curve_keypair()
    with open(os.path.join(folder, name + ".key"), "w") as f:
        f.write("# test secret key\n" + secret.decode() + "\n")
    with open(os.path.join(folder, name + ".pub"), "w") as f:
        f.write("# test public key\n" + public.decode() + "\n")
    return os.path.join(folder, name + ".key"), os.path.join(folder, name + ".pub")


@pytest.fixture
def curve_server(tmp_path):
    server_key, server_pub = write_pair(tmp_path, "server")
    client_key, client_pub = write_pair(tmp_path, "client")
    other_key, _ = write_pair(tmp_path, "other")
    allowed = tmp_path / "clients"
    allowed.write_text(open(client_pub).read())
    running = RunningServer("--slice-size", "16", "--preview-size", "0", "--curve-secret-key",
                            server_key, "--curve-clients", str(allowed))
    yield running, curve_keys(server_pub, client_key), curve_keys(server_pub, other_key)
    assert running.stop() == 0, "".join(running.log[-20:])


def test_only_the_allowed_key_gets_through(curve_server):
    server, allowed, other = curve_server
    with Client(server.requests, timeout_ms=10000, curve=allowed) as client:
        assert client.status().backend == "cpu"
    with Client(server.requests, timeout_ms=1000, curve=other) as client:
        with pytest.raises(TimeoutError):
            client.status()
    with Client(server.requests, timeout_ms=1000) as client:
        with pytest.raises(TimeoutError):
            client.status()
    assert any("refused a client" in line for line in server.log)


def test_an_allowed_detector_streams_and_an_allowed_viewer_sees_the_slices(curve_server):
    server, allowed, _ = curve_server
    with Client(server.requests, curve=allowed) as client, \
            Subscriber(server.slices, topics=("slice",), curve=allowed) as viewer, \
            Detector(server.data, curve=allowed) as detector:
        client.status()  # the server answers: the subscription has had time to arrive
        angles = np.linspace(0, np.pi, 8, endpoint=False)
        detector.begin_parallel_scan(5, angles, 4, 16, Box((-8, -8, -2), (8, 8, 2)),
                                     dtype=np.float32, already_linear=True)
        for index in range(8):
            detector.send_frame(np.ones((4, 16), np.float32), index=index)
        detector.end_scan()
        # The axial default slice (2) spans the 16 x 16 mm of the box in square pixels.
        publication = viewer.receive(timeout_ms=20000)
        while publication is not None and publication.header.slice_id != 2:
            publication = viewer.receive(timeout_ms=20000)
        assert publication is not None and publication.header.scan_id == 5
        assert publication.values.shape == (16, 16)
