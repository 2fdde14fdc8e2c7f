"""Generates slicestream/_proto/slicestream_pb2.py from proto/slicestream.proto with protoc
(Debian: protobuf-compiler) while the package is built, so that the wire module always matches
the checkout's schema. SLICESTREAM_PROTO names another .proto file; PROTOC another compiler."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.environ.get("SLICESTREAM_PROTO", os.path.join(HERE, "..", "..", "proto", "slicestream.proto"))


def generate(out_dir):
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    if not protoc:
        raise SystemExit("protoc not found: install protobuf-compiler (scripts/install-deps)")
    proto = os.path.abspath(PROTO)
    if not os.path.isfile(proto):
        raise SystemExit(f"{proto} not found: build from a slicestream checkout or set SLICESTREAM_PROTO")
    os.makedirs(out_dir, exist_ok=True)
    subprocess.check_call([protoc, f"--proto_path={os.path.dirname(proto)}", f"--python_out={out_dir}", proto])


class BuildWithProto(build_py):
    """Generates the wire module into the build tree (the checkout stays clean)."""

    def run(self):
        super().run()
        if not self.dry_run:
            generate(os.path.join(self.build_lib, "slicestream", "_proto"))


setup(cmdclass={"build_py": BuildWithProto})
