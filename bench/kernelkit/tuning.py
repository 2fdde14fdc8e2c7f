"""KernelKit's tuning space and the staged search over it, as the paper tunes (section 4.3).

The paper searches thread-block shapes by brute force, then texture resources (3D array, layered
array, one texture per projection) with the voxels per thread N_z, then block shapes again, and
varies N_theta (projections per launch) through its template. Here, per set-up:

  A  every block shape of 32..1024 threads (x in 8..128, y in 1..32) on the layered texture,
     N_z = 1 (the slice normal on memory axis 0), 32 projections per launch (ASTRA's defaults);
  B  the other two texture resources at the two best shapes of A; ASTRA's own defaults
     (3D array, 16 x 32, 32 per launch) measured beside them;
  -- one texture resource for all three slices from here on (the paper's quasi-3D design shares
     one texture): the one with the smallest sum of the slices' best times;
  C  projections per launch 8 .. 1024 (all in one launch) at the best so far;
  D  N_z = 2, 4, 8 voxels per thread along the slice (its j axis on memory axis 0, the normal on
     axis 1) with 1-D blocks of 32, 64, 128 threads;
  E  projections per launch again, if D won.

A search may stop early when its time budget runs out; the report says at which stage.
"""
import dataclasses
import time

from kernelkit_slices import TEXTURES, KernelConfig

BLOCK_SHAPES = [(x, y) for x in (8, 16, 32, 64, 128) for y in (1, 2, 4, 8, 16, 32)
                if 32 <= x * y <= 1024]
ASTRA_DEFAULT = KernelConfig("tex3D", 16, 32, 1, 32, "normal")
PROJS_PER_LAUNCH = (8, 16, 32, 64, 128, 256, 1024)


class SliceSearch:
    """The measured configurations of one slice: rows of (stage, config, ms or None)."""

    def __init__(self, measure):
        self.measure = measure  # config -> ms, or None when the configuration failed
        self.rows = []

    def run(self, stage: str, configs):
        done = {row[1] for row in self.rows}
        for config in configs:
            if config not in done:
                self.rows.append((stage, config, self.measure(config)))
                done.add(config)

    def ranked(self, texture=None):
        rows = [r for r in self.rows if r[2] is not None
                and (texture is None or r[1].texture == texture)]
        return sorted(rows, key=lambda r: r[2])

    def best(self, texture=None):
        ranked = self.ranked(texture)
        return ranked[0] if ranked else None


def stage_a():
    return [KernelConfig("tex2DLayered", x, y, 1, 32, "normal") for x, y in BLOCK_SHAPES]


def stage_b(search: SliceSearch):
    top = [r[1] for r in search.ranked()[:2]]
    others = [t for t in TEXTURES if t != "tex2DLayered"]
    return [dataclasses.replace(c, texture=t) for c in top for t in others] + [ASTRA_DEFAULT]


def stage_projections(best: KernelConfig):
    return [dataclasses.replace(best, projs_per_block=n) for n in PROJS_PER_LAUNCH]


def stage_d(best: KernelConfig):
    return [dataclasses.replace(best, loop="inplane", block_x=x, block_y=1, per_thread=z)
            for z in (2, 4, 8) for x in (32, 64, 128)]


def shared_texture(searches) -> str:
    """The texture resource with the smallest sum over the slices of their best times."""
    totals = {}
    for texture in TEXTURES:
        bests = [s.best(texture) for s in searches]
        if all(b is not None for b in bests):
            totals[texture] = sum(b[2] for b in bests)
    if not totals:
        raise RuntimeError("no texture resource worked for every slice")
    return min(totals, key=totals.get)


def search_setup(searches, budget_s: float, before_stage=None):
    """Runs stages A..E for every slice's SliceSearch; returns (texture, last stage run).
    `before_stage(per_slice_configs)`, if given, sees each stage's configurations first (to
    compile them together)."""
    deadline = time.monotonic() + budget_s

    def run(name, make):
        per_slice = [make(s) for s in searches]
        if before_stage is not None:
            before_stage(per_slice)
        for s, configs in zip(searches, per_slice):
            s.run(name, configs)

    run("A block shape", lambda s: stage_a())
    run("B texture resource", stage_b)
    texture = shared_texture(searches)
    reached = "B"
    later = (("C projections per launch", stage_projections),
             ("D voxels per thread", stage_d),
             ("E projections per launch",
              lambda b: stage_projections(b) if b.loop == "inplane" else []))
    for name, make in later:
        if time.monotonic() > deadline:
            break
        run(name, lambda s, make=make: make(s.best(texture)[1]))
        reached = name[0]
    return texture, reached
