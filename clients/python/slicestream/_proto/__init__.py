"""The generated slicestream.v1 wire module (slicestream_pb2.py, made by protoc at build time)."""
