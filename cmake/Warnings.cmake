# slicestream_warnings: strict warnings for our own targets (never for generated or third-party code).
add_library(slicestream_warnings INTERFACE)
target_compile_options(slicestream_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
                            -Wcast-align -Woverloaded-virtual -Wnull-dereference -Wformat=2
                            -Wimplicit-fallthrough>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${SLICESTREAM_WERROR}>>:-Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror all-warnings>)

# slicestream_cpu_arch: the instruction set for vectorised CPU loops.
add_library(slicestream_cpu_arch INTERFACE)
if(SLICESTREAM_CPU_ARCH)
  target_compile_options(slicestream_cpu_arch INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-march=${SLICESTREAM_CPU_ARCH}>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-march=${SLICESTREAM_CPU_ARCH}>)
endif()
