# Install rules and the CMake package: find_package(cairn) gives cairn::engine and the layers
# below it (cairn::base, cairn::io, cairn::net, cairn::error, cairn::format, cairn::runtime,
# cairn::store, cairn::journal, cairn::graph, cairn::storelog, cairn::publish, cairn::ops) and
# the catalog (cairn::catalog, and its rooms: cairn::iceberg, cairn::catalog_format, ...); pkg-config gives `cairn`. The headers go to
# include/cairn/ (consumers write <cairn/engine/database.hpp>), the `cairn` command to bin/.
include(CMakePackageConfigHelpers)

set(cairn_exported cairn_base cairn_io cairn_net cairn_error cairn_format cairn_runtime
    cairn_store cairn_journal cairn_graph cairn_storelog cairn_publish cairn_ops cairn_engine
    cairn_iceberg cairn_catalog_format cairn_catalog_access cairn_catalog_lake cairn_catalog_ops
    cairn_catalog_maintenance cairn_catalog_rest cairn_catalog)
foreach(target IN LISTS cairn_exported)
  string(REGEX REPLACE "^cairn_" "" short ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS ${cairn_exported} EXPORT cairnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS cairn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_BINARY_DIR}/share/man/man1/cairn.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_BINARY_DIR}/share/bash-completion/completions/cairn
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# The headers of the installed libraries; the command line's (cli/) are its own.
install(DIRECTORY base io net engine catalog
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cairn
  FILES_MATCHING PATTERN "*.hpp")

set(cairn_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cairn)
install(EXPORT cairnTargets NAMESPACE cairn:: DESTINATION ${cairn_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cairnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cairnConfig.cmake INSTALL_DESTINATION ${cairn_cmake_dir})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cairnConfig.cmake ${PROJECT_BINARY_DIR}/cairnConfigVersion.cmake
  DESTINATION ${cairn_cmake_dir})

# cairn.pc, relocatable: its prefix is found from the file's own place (${pcfiledir}), so
# `cmake --install --prefix DIR` needs no reconfigure. Absolute install directories (e.g.
# -DCMAKE_INSTALL_LIBDIR=/usr/lib64) are written as they are.
file(RELATIVE_PATH cairn_pc_to_prefix /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(cairn_pc_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(cairn_pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(cairn_pc_prefix "${CMAKE_INSTALL_PREFIX}")
else()
  set(cairn_pc_prefix "\${pcfiledir}/${cairn_pc_to_prefix}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/cairn.pc.in ${PROJECT_BINARY_DIR}/cairn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cairn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
