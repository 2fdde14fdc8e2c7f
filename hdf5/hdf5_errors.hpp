// HDF5's error reporting: by default the library prints its whole error stack to stderr; the
// project's readers and writers print their own messages, which name the file, and add the stack's
// descriptions where they explain a failure (a truncated file).
#pragma once

#include <string>
#include <vector>

namespace slicestream::hdf5 {

// Stops HDF5 from printing its error stack to stderr (the default stack: per thread where HDF5 is
// built thread-safe, so call it on the thread that uses HDF5).
void silence_error_printing();

// The descriptions on the calling thread's error stack, innermost first ("truncated file: eof =
// ..."), empty when nothing failed.
std::vector<std::string> error_descriptions();

}  // namespace slicestream::hdf5
