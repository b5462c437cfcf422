# SPDX-License-Identifier: MIT
# Installation (binary, man page, shell completions, docs) and the Debian
# package: `cmake --install BUILD --prefix P`, `cpack -G DEB` in BUILD
# (docs/packaging.md). The man page and the completion scripts are written by
# the built binary (optadvisor man, optadvisor completion SHELL), so they
# follow its real commands and options.
include(GNUInstallDirs)

install(TARGETS optadvisor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(EXISTS "${PROJECT_SOURCE_DIR}/LICENSE")
  install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION ${CMAKE_INSTALL_DOCDIR})
endif()

if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "optadvisor: cross-compiling, so no man page or completion scripts (they are written by running the binary)")
else()
  set(OPTADVISOR_SHARE_DIR "${PROJECT_BINARY_DIR}/share")
  set(OPTADVISOR_SHELL_FILES
      "${OPTADVISOR_SHARE_DIR}/optadvisor.1" "${OPTADVISOR_SHARE_DIR}/bash/optadvisor"
      "${OPTADVISOR_SHARE_DIR}/zsh/_optadvisor" "${OPTADVISOR_SHARE_DIR}/fish/optadvisor.fish")
  add_custom_command(
    OUTPUT ${OPTADVISOR_SHELL_FILES}
    COMMAND "${CMAKE_COMMAND}" -DEXE=$<TARGET_FILE:optadvisor> -DOUT_DIR=${OPTADVISOR_SHARE_DIR}
            -P "${PROJECT_SOURCE_DIR}/cmake/generate_shell_files.cmake"
    DEPENDS optadvisor "${PROJECT_SOURCE_DIR}/cmake/generate_shell_files.cmake"
    COMMENT "Writing the man page and shell completions from optadvisor"
    VERBATIM)
  add_custom_target(optadvisor_shell_files ALL DEPENDS ${OPTADVISOR_SHELL_FILES})
  install(FILES "${OPTADVISOR_SHARE_DIR}/optadvisor.1" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES "${OPTADVISOR_SHARE_DIR}/bash/optadvisor" DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
  install(FILES "${OPTADVISOR_SHARE_DIR}/zsh/_optadvisor" DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
  install(FILES "${OPTADVISOR_SHARE_DIR}/fish/optadvisor.fish" DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
endif()

# cpack -G DEB
set(OPTADVISOR_PACKAGE_MAINTAINER "The optadvisor authors" CACHE STRING "Maintainer field of the .deb: 'Name <email>'")
set(CPACK_PACKAGE_NAME "optadvisor")
set(CPACK_PACKAGE_VENDOR "The optadvisor authors")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ML performance advisor: what limits a model on given hardware")
set(CPACK_PACKAGE_CONTACT "${OPTADVISOR_PACKAGE_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR "DEB")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${OPTADVISOR_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Depends: computed by dpkg-shlibdeps from the libraries the binary links (libstdc++, libc, libfmt, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PACKAGE_DESCRIPTION
    "optadvisor estimates the memory, time to first token, decode speed and
throughput of a language model on a device from a database of sourced
hardware profiles and an analytic performance model, says what bounds it
(compute, memory bandwidth, overhead, interconnect, capacity) and ranks what
to change. Hardware, model, quantization and engine data are built in;
--hw auto detects the local GPU or Apple silicon.")
include(CPack)

# Tests (ctest -R packaging): completion scripts parse and complete, colour only
# on a terminal, the install tree, and the .deb (skipped without dpkg tools).
if(OPTADVISOR_BUILD_TESTS)
  enable_testing()
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(OPTADVISOR_PACKAGING_TESTS "${PROJECT_SOURCE_DIR}/tests/packaging")
  add_test(NAME packaging_completions COMMAND bash "${OPTADVISOR_PACKAGING_TESTS}/check_completions.sh" $<TARGET_FILE:optadvisor>)
  add_test(NAME packaging_tty_color
           COMMAND Python3::Interpreter "${OPTADVISOR_PACKAGING_TESTS}/check_tty_color.py" $<TARGET_FILE:optadvisor>)
  if(NOT CMAKE_CROSSCOMPILING)
    add_test(NAME packaging_install COMMAND bash "${OPTADVISOR_PACKAGING_TESTS}/check_install.sh" "${PROJECT_BINARY_DIR}")
    add_test(NAME packaging_deb COMMAND bash "${OPTADVISOR_PACKAGING_TESTS}/check_deb.sh" "${PROJECT_BINARY_DIR}")
    # Both build and install from this build directory; cpack builds everything first (slow in Debug).
    set_tests_properties(packaging_install packaging_deb PROPERTIES RESOURCE_LOCK optadvisor_build_dir LABELS packaging)
    set_tests_properties(packaging_deb PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  endif()
  set_tests_properties(packaging_completions packaging_tty_color PROPERTIES LABELS packaging)
endif()
