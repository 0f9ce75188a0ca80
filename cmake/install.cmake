# What `cmake --install` puts where, and the Debian packages CPack makes of it.
#
#   bin/taskforce                              the command
#   share/taskforce/taskforce.json             the built-in defaults, spelled out
#   lib/libtaskforce.a, include/taskforce/     the library and its header
#   lib/cmake/taskforce/                       find_package(taskforce)
#   lib/pkgconfig/taskforce.pc                 pkg-config taskforce
#
# Components: `command` (the first two) and `development` (the rest), one
# .deb each.
include(CMakePackageConfigHelpers)

set(taskforce_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/taskforce")

if(NOT TASKFORCE_LIBRARY_ONLY)
  install(TARGETS taskforce RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT command)
  install(FILES config/taskforce.json
          DESTINATION ${CMAKE_INSTALL_DATADIR}/taskforce COMPONENT command)
endif()

install(TARGETS taskforce_core EXPORT taskforceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY include/taskforce DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development)
install(EXPORT taskforceTargets NAMESPACE taskforce::
        DESTINATION ${taskforce_cmake_dir} COMPONENT development)
configure_package_config_file(cmake/taskforceConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/taskforceConfig.cmake"
  INSTALL_DESTINATION ${taskforce_cmake_dir})
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(
  "${CMAKE_CURRENT_BINARY_DIR}/taskforceConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/taskforceConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/taskforceConfigVersion.cmake"
              cmake/FindCAF.cmake
        DESTINATION ${taskforce_cmake_dir} COMPONENT development)

# The .pc file finds its prefix from where it lies, so the same file serves
# `cmake --install --prefix DIR` and the .deb.
file(RELATIVE_PATH taskforce_pc_to_prefix
     "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" taskforce_pc_to_prefix "${taskforce_pc_to_prefix}")
configure_file(cmake/taskforce.pc.in
               "${CMAKE_CURRENT_BINARY_DIR}/taskforce.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/taskforce.pc"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

# --- cpack -G DEB: taskforce_<v>_<arch>.deb and libtaskforce-dev_<v>_<arch>.deb
if(NOT TASKFORCE_LIBRARY_ONLY)
  set(CPACK_PACKAGE_NAME taskforce)
  set(CPACK_PACKAGE_VENDOR "taskforce")
  set(CPACK_PACKAGE_CONTACT "taskforce maintainers <taskforce@localhost>")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
      "admission pool and task-list runner for AI coding subagents")
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_GENERATOR DEB)
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_COMPONENTS_ALL command development)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SECTION devel)
  set(CPACK_DEBIAN_COMMAND_PACKAGE_NAME taskforce)
  # dpkg-shlibdeps names the packages of the shared libraries the command
  # links against (libcaf-core0.17, libgit2-1.5, libsqlite3-0, libspdlog1.10…).
  set(CPACK_DEBIAN_COMMAND_PACKAGE_SHLIBDEPS ON)
  # git only for `taskforce demo`'s closing `git log --graph`.
  set(CPACK_DEBIAN_COMMAND_PACKAGE_RECOMMENDS "git")
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libtaskforce-dev)
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
  # The static library brings no shared-library dependencies of its own: a
  # program built against it links these, through the CMake package or the
  # .pc file.
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
      "libcaf-dev (>= 0.17), libcaf-dev (<< 0.18), libgit2-dev (>= 1.5), libsqlite3-dev, libspdlog-dev, libfmt-dev, pkg-config")
  include(CPack)
endif()
