#!/usr/bin/env python3
"""Prints every slice slicestream-server publishes (id, size, projections, value range) and every
event, until Ctrl-C.

    /usr/bin/python3 examples/watch_slices.py [--slices tcp://127.0.0.1:5571]
"""
import argparse

from slicestream import Subscriber

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--slices", default="tcp://127.0.0.1:5571")
args = parser.parse_args()

with Subscriber(args.slices) as subscriber:
    try:
        for publication in subscriber:
            h = publication.header
            if publication.topic == "event":
                print(f"event {h.kind} {h.reason}: {h.message}")
            elif publication.topic == "preview":
                print(f"preview {h.size_x}x{h.size_y}x{h.size_z} #{h.sequence}")
            else:
                s = h.slice if publication.topic == "refined" else h
                v = publication.values
                print(f"{publication.topic} {s.slice_id} {s.width}x{s.height} #{s.sequence} "
                      f"{s.projections_integrated} projections, values {v.min():.4g} .. {v.max():.4g}")
    except KeyboardInterrupt:
        pass
