"""The subscriber against a plain PUB socket: a publication sent again (the stream's last sequence
and published_ns, as the server does after another subscriber stalled) is skipped, a new one of
the same stream and every event are not; fp16 slices and previews arrive as float32 arrays, a
short one is refused, as is a float32 preview of the wrong size."""
import numpy as np
import pytest
import zmq

from slicestream import Subscriber
from slicestream.errors import ProtocolError
from slicestream.wire import v1


@pytest.fixture
def publisher():
    """A plain PUB socket on a loopback port and its context: (context, socket, endpoint)."""
    context = zmq.Context()
    server = context.socket(zmq.PUB)
    server.setsockopt(zmq.LINGER, 0)
    server.bind("tcp://127.0.0.1:*")
    yield context, server, server.getsockopt_string(zmq.LAST_ENDPOINT)
    server.close()
    context.term()


def slice_header(slice_id, sequence, published_ns):
    header = v1.PublishHeader(protocol_version=1)
    header.slice.slice_id = slice_id
    header.slice.width = 2
    header.slice.height = 2
    header.slice.sequence = sequence
    header.slice.published_ns = published_ns
    return header


def first_received(server, live, parts):
    """Sends `parts` until the subscriber (whose subscription takes a moment) receives one."""
    for _ in range(500):
        server.send_multipart(parts)
        publication = live.receive(timeout_ms=10)
        if publication is not None:
            return publication
    raise AssertionError("the subscriber never received anything")


def drain(live):
    """Receives until nothing more arrives (the copies first_received sent)."""
    while live.receive(timeout_ms=50) is not None:
        pass


def assert_refused(server, live, parts, match):
    """Sends `parts` once, after what is pending, and expects the subscriber to refuse them."""
    drain(live)
    server.send_multipart(parts)
    with pytest.raises(ProtocolError, match=match):
        live.receive(timeout_ms=2000)


def test_a_publication_sent_again_is_skipped(publisher):
    context, server, endpoint = publisher
    event = v1.PublishHeader(protocol_version=1)
    event.event.message = "probe"
    with Subscriber(endpoint, context=context) as live:
        first_received(server, live, [b"event", event.SerializeToString()])
        drain(live)

        values = np.random.default_rng().random(4, dtype=np.float32)
        for header in [slice_header(4, 3, 111), slice_header(4, 3, 111), slice_header(5, 3, 111),
                       slice_header(4, 3, 222), slice_header(4, 3, 222)]:
            server.send_multipart([b"slice", header.SerializeToString(), values.tobytes()])
        for _ in range(2):
            server.send_multipart([b"event", event.SerializeToString()])

        received = []
        while (publication := live.receive(timeout_ms=500)) is not None:
            if publication.topic == "slice":
                received.append((publication.header.slice_id, publication.header.published_ns))
                assert np.array_equal(publication.values.ravel(), values)
            else:
                received.append("event")
        assert received == [(4, 111), (5, 111), (4, 222), "event", "event"]


def test_fp16_slices_arrive_as_float32_arrays(publisher):
    context, server, endpoint = publisher
    values = np.array([0.5, -0.25, 0.125, 1.0], dtype=np.float32)
    header = slice_header(1, 1, 1)
    header.payload_encoding = v1.PAYLOAD_ENCODING_FLOAT16
    header.payload_scale = 0.02
    payload = (values / np.float32(0.02)).astype("<f2").tobytes()
    with Subscriber(endpoint, topics=("slice",), context=context, fp16=True) as live:
        publication = first_received(server, live,
                                     [b"fp16-slice", header.SerializeToString(), payload])
        assert publication.topic == "slice"
        assert publication.values.dtype == np.float32 and publication.values.shape == (2, 2)
        np.testing.assert_allclose(publication.values.ravel(), values, rtol=2**-11)


def test_fp16_previews_arrive_as_float32_volumes_and_a_short_one_is_refused(publisher):
    context, server, endpoint = publisher
    values = np.random.default_rng().uniform(-3, 3, 24).astype(np.float32)  # x 4, y 2, z 3
    scale = np.float32(np.abs(values).max())
    header = v1.PublishHeader(protocol_version=1)
    header.preview.size_x, header.preview.size_y, header.preview.size_z = 4, 2, 3
    header.preview.sequence = 1
    header.payload_encoding = v1.PAYLOAD_ENCODING_FLOAT16
    header.payload_scale = scale
    payload = (values / scale).astype("<f2").tobytes()
    with Subscriber(endpoint, topics=("preview",), context=context, fp16=True) as live:
        publication = first_received(server, live,
                                     [b"fp16-preview", header.SerializeToString(), payload])
        assert publication.topic == "preview"
        assert publication.values.dtype == np.float32 and publication.values.shape == (3, 2, 4)
        np.testing.assert_allclose(publication.values.ravel(), values, rtol=2**-11,
                                   atol=float(scale) * 2**-11)
        header.preview.sequence = 2
        assert_refused(server, live, [b"fp16-preview", header.SerializeToString(), payload[:-2]],
                       "fp16 preview")


def test_a_float32_preview_of_the_wrong_size_is_refused(publisher):
    context, server, endpoint = publisher
    header = v1.PublishHeader(protocol_version=1)
    header.preview.size_x, header.preview.size_y, header.preview.size_z = 4, 2, 3
    header.preview.sequence = 1
    payload = np.arange(24, dtype="<f4").tobytes()
    with Subscriber(endpoint, topics=("preview",), context=context) as live:
        publication = first_received(server, live,
                                     [b"preview", header.SerializeToString(), payload])
        assert np.array_equal(publication.values, np.arange(24, dtype=np.float32).reshape(3, 2, 4))
        header.preview.sequence = 2
        assert_refused(server, live, [b"preview", header.SerializeToString(), payload[:-4]],
                       "4 x 2 x 3 preview has 96 bytes, not 92")
        header.preview.sequence = 3
        assert_refused(server, live, [b"preview", header.SerializeToString()], "not 0")
