// Where the scan stands (GetStatus): before any scan, while its darks and flats arrive, while its
// projections are reconstructed, and after its end (the store stays for GetSlice until the next).
#pragma once

#include "pipeline/backend/name_table.hpp"

namespace slicestream {

enum class ScanState { kIdle, kCalibrating, kReconstructing, kEnded };
inline constexpr NameTable<ScanState, 4> kScanStateNames{
    {{ScanState::kIdle, "idle"},
     {ScanState::kCalibrating, "calibrating"},
     {ScanState::kReconstructing, "reconstructing"},
     {ScanState::kEnded, "ended"}}};
inline const char* to_string(ScanState state) {
  return name_in(kScanStateNames, state);
}

}  // namespace slicestream
