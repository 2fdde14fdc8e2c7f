"""Python client of slicestream-server (docs/protocol.md): stream numpy frames as a detector,
request slices as numpy arrays, set and remove slices and parameters, watch what is published.

    from slicestream import Client, Detector, Subscriber, Box, axis_slice
"""
from .client import Client
from .detector import Detector
from .errors import ProtocolError, RequestError
from .geometry import Box, axis_slice, parallel_vectors, pixel_centres
from .subscriber import Publication, Subscriber
from .wire import v1

__all__ = ["Box", "Client", "Detector", "ProtocolError", "Publication", "RequestError", "Subscriber",
           "axis_slice", "parallel_vectors", "pixel_centres", "v1"]
__version__ = "0.1.0"
