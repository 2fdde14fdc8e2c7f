# Sanitizer and fuzzing instrumentation for every target (scripts/sanitize, scripts/fuzz).
if(SLICESTREAM_SANITIZE AND NOT SLICESTREAM_SANITIZER)
  set(SLICESTREAM_SANITIZER address)
endif()

if(SLICESTREAM_SANITIZER STREQUAL "address")
  # -fno-sanitize-recover: a UBSan finding fails the test instead of scrolling past in its log.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(SLICESTREAM_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  # ThreadSanitizer does not model std::atomic_thread_fence (GCC refuses it under -Werror=tsan).
  # Boost.Asio's handler invocation fences are redundant with its scheduler's mutex, which TSan
  # does see, so Asio is built without them instead of hiding what TSan might report.
  add_compile_definitions(BOOST_ASIO_DISABLE_FENCED_BLOCK)
elseif(SLICESTREAM_SANITIZER)
  message(FATAL_ERROR "SLICESTREAM_SANITIZER must be empty, address or thread")
endif()

if(SLICESTREAM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SLICESTREAM_FUZZ needs clang (CXX=clang++): libFuzzer is clang's")
  endif()
  # Coverage for every library the targets link; the fuzz targets add libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
