# `cmake --install build [--prefix DIR]`: the three programs, a man page for each generated from
# its --help and --version by help2man at build time (so the pages never drift from the flags),
# and bash completion (scripts/completion/slicestream.bash, which reads --help as it completes).
include(GNUInstallDirs)

set(slicestream_programs slicestream-server slicestream-detector slicestream-ctl)
install(TARGETS ${slicestream_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(man_pages)
  foreach(program ${slicestream_programs})
    set(page ${CMAKE_BINARY_DIR}/man/${program}.1)
    add_custom_command(
      OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1
              --source=slicestream --output=${page} $<TARGET_FILE:${program}>
      DEPENDS ${program}
      COMMENT "man page ${program}.1 from ${program} --help"
      VERBATIM)
    list(APPEND man_pages ${page})
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(WARNING "slicestream: help2man not found (scripts/install-deps installs it): "
                  "no man pages are built or installed")
endif()

# bash-completion loads completions/<command> on demand: one file per program, the same script.
foreach(program ${slicestream_programs})
  install(FILES ${PROJECT_SOURCE_DIR}/scripts/completion/slicestream.bash
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ${program})
endforeach()
