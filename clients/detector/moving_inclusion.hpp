// The time-varying part of the --dynamic phantom: a small ellipsoid that circles the rotation axis
// once while rising through the volume and dissolving. It is one analytic ellipsoid at every
// moment, so the simulated projections stay exact line integrals.
#pragma once

#include "kernels/phantom/ellipsoid_phantom.hpp"

namespace slicestream::detector {

// `scan_fraction` in [0, 1]: 0 at the first projection, 1 at the last. At 0 the inclusion is 1.5x
// as attenuating as the phantom's outer shell; its attenuation falls linearly to 0 at 1.
phantom::Ellipsoid moving_inclusion(const VolumeBox& box, double outer_attenuation_per_mm,
                                    double scan_fraction);

}  // namespace slicestream::detector
