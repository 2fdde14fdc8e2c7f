"""Cone-beam FDK backprojection in float64 from first principles, to check what KernelKit computes.

For every point X and projection p: the ray from the source s through X meets the detector plane
at P; P's continuous detector column and row (pixel centres at integers) give a bilinear sample of
the projection (zero outside the detector); the sample is weighted by (R / L)^2, R the distance of
the rotation axis and L that of X from the source, both along the detector normal:

    value(X) = sum_p (R_p / L_p(X))^2 * bilinear_p(col_p(X), row_p(X))

This is the slice the CUDA backend computes without its pi / N angular weight (ProjectionMap:
weight 1 and den = L / R for bench_scene.cu's geometry), and what KernelKit's voxel-driven kernel
computes for unit voxels (its 1 / den^2 is |det(u, v, s - d)|^2 / (|u x v| det(u, v, s - X)^2),
which equals (R / L)^2 when the pixels seen at the axis are as wide as a voxel). Written against
the array API, so it runs on numpy or, in float64 on the GPU, on cupy.
"""


def _bilinear(xp, image, col, row):
    """image (rows x cols) at continuous (col, row), pixel centres at integers, zero outside."""
    rows, cols = image.shape
    x0 = xp.floor(col)
    y0 = xp.floor(row)
    fx = col - x0
    fy = row - y0
    ix = x0.astype(xp.int64)
    iy = y0.astype(xp.int64)
    total = xp.zeros_like(col)
    for dy, wy in ((0, 1.0 - fy), (1, fy)):
        for dx, wx in ((0, 1.0 - fx), (1, fx)):
            x = ix + dx
            y = iy + dy
            inside = (x >= 0) & (x < cols) & (y >= 0) & (y < rows)
            texel = image[xp.clip(y, 0, rows - 1), xp.clip(x, 0, cols - 1)]
            total += xp.where(inside, texel.astype(xp.float64), 0.0) * wx * wy
    return total


def fdk_backproject(xp, projections, vectors, points):
    """Backprojects `projections` (N x rows x cols) at `points` (M x 3, mm) in float64.

    `vectors` is a setups.ConeVectors (numpy, mm)."""
    n, rows, cols = projections.shape
    X = xp.asarray(points, dtype=xp.float64)
    total = xp.zeros(X.shape[0], dtype=xp.float64)
    for p in range(n):
        s = xp.asarray(vectors.source[p], dtype=xp.float64)
        d = xp.asarray(vectors.detector[p], dtype=xp.float64)
        u = xp.asarray(vectors.u[p], dtype=xp.float64)
        v = xp.asarray(vectors.v[p], dtype=xp.float64)
        normal = xp.cross(u, v)
        normal = normal / xp.linalg.norm(normal)
        if float(normal @ (d - s)) < 0:
            normal = -normal
        to_point = X - s
        distance = to_point @ normal  # L
        axis_distance = float(-s @ normal)  # R
        hit = s + to_point * (float((d - s) @ normal) / distance)[:, None]
        offset = hit - d
        # offset = a u + b v: solve with the Gram matrix (u and v need not be orthogonal).
        uu, uv, vv = float(u @ u), float(u @ v), float(v @ v)
        ou, ov = offset @ u, offset @ v
        det = uu * vv - uv * uv
        a = (ou * vv - ov * uv) / det
        b = (ov * uu - ou * uv) / det
        col = a + (cols / 2.0 - 0.5)
        row = b + (rows / 2.0 - 0.5)
        weight = (axis_distance / distance) ** 2
        total += weight * _bilinear(xp, projections[p], col, row)
    return total
