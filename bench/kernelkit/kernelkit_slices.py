"""KernelKit's voxel-driven cone-beam backprojector (VoxelDrivenConeBP) on quasi-3D slices.

Used as the paper's real-time case study uses it: one texture of the window's projections shared by
one kernel per slice, geometry parameters in each kernel's constant memory, the slice written by
KernelKit's kernel into a CuPy array (zeroed first, as its BackProjector does when not additive).

A slice is a KernelKit volume of one voxel across (the slice normal) with 1 mm isotropic voxels.
Its memory axes are chosen per kernel configuration: with the slice normal on memory axis 0 every
thread computes one voxel (the paper's N_z = 1, as ASTRA does for slices); with the slice's j
axis on memory axis 0 every thread walks `per_thread` voxels along it (the paper's N_z).
"""
import contextlib
import io
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import cupy as cp
import numpy as np

import kernelkit as kk
from kernelkit.data import aspitched
from kernelkit.kernel import copy_to_texture
from kernelkit.kernels import VoxelDrivenConeBP

from setups import PIXEL_MM

TEXTURES = ("tex2DLayered", "tex3D", "tex2D")


@dataclass(frozen=True)
class KernelConfig:
    """One point of KernelKit's tuning space (its Jinja2 template arguments)."""

    texture: str  # tex2DLayered (layered array), tex3D (3D array), tex2D (pitched, per projection)
    block_x: int  # threads along the slice's i axis: voxels_per_block[2]
    block_y: int  # threads along memory axis 1: voxels_per_block[1]
    per_thread: int  # voxels along memory axis 0 per thread: voxels_per_block[0]
    projs_per_block: int  # projections per kernel launch (the paper's N_theta)
    loop: str  # "normal": memory axis 0 is the slice normal; "inplane": it is the slice's j axis

    def label(self) -> str:
        return (f"{self.texture} {self.block_x}x{self.block_y}x{self.per_thread} "
                f"{self.projs_per_block}/launch {self.loop}")


def projection_geometries(setup, vectors) -> list:
    detector = kk.Detector(rows=setup.rows, cols=setup.cols, pixel_height=PIXEL_MM,
                           pixel_width=PIXEL_MM)
    return [
        kk.ProjectionGeometry(source_position=vectors.source[p],
                              detector_position=vectors.detector[p], detector=detector,
                              u=vectors.u[p] / np.linalg.norm(vectors.u[p]),
                              v=vectors.v[p] / np.linalg.norm(vectors.v[p]), beam=kk.Beam.CONE)
        for p in range(setup.projections)
    ]


def volume_geometry(slice_spec):
    """The slice as a KernelKit volume in world axis order, one voxel thick."""
    voxel = np.linalg.norm(slice_spec.x_axis) / slice_spec.width
    if not np.isclose(voxel, np.linalg.norm(slice_spec.y_axis) / slice_spec.height):
        raise ValueError(f"slice {slice_spec.name}: KernelKit's kernel needs isotropic voxels")
    shape, low, high = [1, 1, 1], [0.0] * 3, [0.0] * 3
    for a in range(3):
        low[a] = slice_spec.base[a] - voxel / 2
        high[a] = slice_spec.base[a] + voxel / 2
    for axis, vector, count in ((slice_spec.i_axis, slice_spec.x_axis, slice_spec.width),
                                (slice_spec.j_axis, slice_spec.y_axis, slice_spec.height)):
        shape[axis] = count
        low[axis] = slice_spec.base[axis]
        high[axis] = slice_spec.base[axis] + vector[axis]
    return kk.VolumeGeometry(shape=shape, voxel_size=(voxel,) * 3, extent_min=low,
                             extent_max=high)


def volume_axes(slice_spec, loop: str) -> tuple:
    """World axis of each memory axis; the slice's i axis is always the fastest (coalesced)."""
    n, i, j = slice_spec.normal_axis, slice_spec.i_axis, slice_spec.j_axis
    return (n, j, i) if loop == "normal" else (j, n, i)


def volume_shape(slice_spec, loop: str) -> tuple:
    h, w = slice_spec.height, slice_spec.width
    return (1, h, w) if loop == "normal" else (h, 1, w)


class KernelCache:
    """Compiled kernels per (slice, configuration). CuPy keeps one module per distinct source, so
    identical sources would share one constant-memory parameter table: a comment naming the slice
    keeps the three slices' kernels apart (set-ups run one after another and re-upload)."""

    def __init__(self, threads: int = 8):
        self._kernels = {}
        self.threads = threads
        self.compile_seconds = []  # per kernel (NVRTC through CuPy, in a worker thread or not)
        self.precompile_wall_seconds = 0.0

    @staticmethod
    def _build(slice_index: int, slice_spec, config: KernelConfig):
        kernel = VoxelDrivenConeBP(
            voxels_per_block=(config.per_thread, config.block_y, config.block_x),
            projs_per_block=config.projs_per_block,
            volume_axes=volume_axes(slice_spec, config.loop), projection_axes=(0, 1, 2))
        kernel._cuda_source += f"\n// quasi-3D slice {slice_index}\n"
        started = time.perf_counter()
        kernel.compile(texture=VoxelDrivenConeBP.InterpolationMethod(config.texture))
        return kernel, time.perf_counter() - started

    def get(self, slice_index: int, slice_spec, config: KernelConfig):
        key = (slice_index, config)
        if key not in self._kernels:
            with contextlib.redirect_stdout(io.StringIO()):  # KernelKit prints every compile
                kernel, seconds = self._build(slice_index, slice_spec, config)
            self._kernels[key] = kernel
            self.compile_seconds.append(seconds)
        return self._kernels[key]

    def precompile(self, items):
        """Compiles (slice_index, slice_spec, config) items in worker threads; one that fails is
        left to get(), where its measurement records the error."""
        todo = {}
        for slice_index, slice_spec, config in items:
            if (slice_index, config) not in self._kernels:
                todo[(slice_index, config)] = slice_spec
        if not todo:
            return
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), ThreadPoolExecutor(self.threads) as pool:
            futures = {key: pool.submit(self._build, key[0], spec, key[1])
                       for key, spec in todo.items()}
            for key, future in futures.items():
                try:
                    self._kernels[key], seconds = future.result()
                    self.compile_seconds.append(seconds)
                except Exception:  # noqa: BLE001 (reported by get() and the measurement)
                    pass
        self.precompile_wall_seconds += time.perf_counter() - started


class WindowTextures:
    """The window's projections (N x rows x cols float32 on the GPU) as KernelKit textures, made
    on first use: one layered or 3D CUDA array, or one pitched 2D texture per projection."""

    def __init__(self, projections):
        self.projections = projections
        self._arguments = {}
        self._keep = {}

    def argument(self, kind: str):
        """What the kernel takes for this kind: a TextureObject, or int64 texture handles."""
        if kind not in self._arguments:
            if kind == "tex2D":
                objects = [copy_to_texture(aspitched(self.projections[p].copy(), xp=cp),
                                           "pitch2d") for p in range(self.projections.shape[0])]
                self._keep[kind] = objects
                self._arguments[kind] = cp.array([o.ptr for o in objects], dtype=cp.int64)
            else:
                self._arguments[kind] = copy_to_texture(self.projections, "array",
                                                        layered=kind == "tex2DLayered")
            cp.cuda.Device().synchronize()
        return self._arguments[kind]

    def refill(self, kind: str, stream):
        """Re-fills the texture of `kind` from the device copy of the window on `stream`."""
        if kind == "tex2D":
            with stream:
                for p, texture in enumerate(self._keep[kind]):
                    texture.ResDesc.arr[...] = self.projections[p]
        else:
            self._arguments[kind].ResDesc.cuArr.copy_from(self.projections, stream)

    def release(self):
        self._arguments.clear()
        self._keep.clear()


class SliceBackprojection:
    """One slice: its volume geometry and array, and the enqueue of one backprojection."""

    def __init__(self, slice_index, slice_spec, proj_geoms, kernels: KernelCache):
        self.index = slice_index
        self.spec = slice_spec
        self.proj_geoms = proj_geoms
        self.kernels = kernels
        self.geometry = volume_geometry(slice_spec)
        self._volumes = {}

    def volume(self, loop: str):
        if loop not in self._volumes:
            self._volumes[loop] = cp.zeros(volume_shape(self.spec, loop), dtype=cp.float32)
        return self._volumes[loop]

    def prepare(self, config: KernelConfig):
        """Compiles (or reuses) the kernel and uploads this set-up's parameters to it."""
        kernel = self.kernels.get(self.index, self.spec, config)
        kernel.set_params(kernel.geoms2params(self.proj_geoms, self.geometry))
        return kernel

    def enqueue(self, kernel, config: KernelConfig, textures: WindowTextures):
        """volume := BP(window) on the current stream, as BackProjector(additive=False) does."""
        volume = self.volume(config.loop)
        volume.fill(0.0)
        kernel(textures.argument(config.texture), volume, self.geometry)

    def result(self, config: KernelConfig):
        """The slice (height x width, i fastest) as a CuPy array."""
        return self.volume(config.loop).reshape(self.spec.height, self.spec.width)


def launcher(stream, enqueue_all):
    """A function that runs everything `enqueue_all` enqueues, replayed from a CUDA graph (the
    paper times graphs, free of Python's launch overhead), or, where the capture fails, by
    calling `enqueue_all` again; and whether it is a graph."""
    mode = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", None)
    try:
        with stream:
            if mode is None:
                stream.begin_capture()
            else:
                stream.begin_capture(mode)
            try:
                enqueue_all()
            finally:
                graph = stream.end_capture()
        return (lambda: graph.launch(stream)), True
    except Exception:  # noqa: BLE001 (launched directly instead, and reported as such)
        stream.synchronize()
        return enqueue_all, False


def median_ms(stream, launch, reps: int, warmup: int) -> float:
    """Median of CUDA-event timings of `launch()` on `stream` after `warmup` runs."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        launch()
    stream.synchronize()
    samples = []
    for _ in range(reps):
        start.record(stream)
        launch()
        stop.record(stream)
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(samples))
