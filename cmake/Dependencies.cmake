# All dependencies come from Debian 12 packages (scripts/install-deps installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(Protobuf REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(CLI11 CONFIG QUIET)
find_package(TIFF REQUIRED)
find_package(PNG REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
pkg_check_modules(FFTW3F REQUIRED IMPORTED_TARGET fftw3f)

# cppzmq is header-only (zmq.hpp); Debian ships no CMake target that works without libzmq's config.
find_path(CPPZMQ_INCLUDE_DIR zmq.hpp REQUIRED)
add_library(slicestream_zmq INTERFACE)
target_include_directories(slicestream_zmq SYSTEM INTERFACE ${CPPZMQ_INCLUDE_DIR})
target_link_libraries(slicestream_zmq INTERFACE PkgConfig::ZMQ)

# FFTW's threaded float library is not described by fftw3f.pc.
find_library(FFTW3F_THREADS_LIBRARY fftw3f_threads REQUIRED)
add_library(slicestream_fftw INTERFACE)
target_link_libraries(slicestream_fftw INTERFACE PkgConfig::FFTW3F ${FFTW3F_THREADS_LIBRARY})

# CLI11 (libcli11-dev) is header-only; older packages lack the CMake config.
if(NOT TARGET CLI11::CLI11)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()

add_library(slicestream_hdf5 INTERFACE)
target_include_directories(slicestream_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(slicestream_hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES})
