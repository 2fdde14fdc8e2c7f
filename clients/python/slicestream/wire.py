"""The slicestream.v1 messages (docs/protocol.md). The module is generated from proto/ by protoc
when the package is built (setup.py); in a checkout that was never built, run
``python3 clients/python/setup.py build_py`` or install it with pip."""
try:
    from ._proto import slicestream_pb2 as v1
except ImportError as error:  # pragma: no cover - a message for a checkout without the module
    raise ImportError(
        "slicestream's wire module is missing: install the package "
        "(/usr/bin/python3 -m pip install --no-build-isolation clients/python) or generate it "
        "(protoc --python_out=clients/python/slicestream/_proto --proto_path=proto proto/slicestream.proto)"
    ) from error

PROTOCOL_VERSION = 1

__all__ = ["v1", "PROTOCOL_VERSION"]
