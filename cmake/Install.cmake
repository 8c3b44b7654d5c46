# Install rules and a package config so that an outside project can write
#   find_package(StaticRuntime REQUIRED)
#   target_link_libraries(app PRIVATE StaticRuntime::static_runtime)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS static_runtime EXPORT StaticRuntimeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION include)
install(TARGETS srt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The public API only: static_runtime/static_runtime.h and what it includes. Nothing of ops/ or
# memory/ (test/consumer checks that a user's file pulls in none of it).
install(FILES
  static_runtime/static_runtime.h static_runtime/static_module.h static_runtime/runtime.h
  static_runtime/runtime_pool.h static_runtime/options.h static_runtime/runtime_options.h
  static_runtime/stats.h static_runtime/tensor_io.h static_runtime/static_method.h
  static_runtime/benchmark.h static_runtime/memory_plan_entry.h static_runtime/argument_binding.h
  DESTINATION include/static_runtime)
# StaticModule reports what its passes did and whether its graph is batch-independent.
install(FILES passes/pass_report.h passes/batch_independence.h DESTINATION include/passes)
install(EXPORT StaticRuntimeTargets NAMESPACE StaticRuntime::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/StaticRuntime)
configure_package_config_file(cmake/StaticRuntimeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/StaticRuntimeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/StaticRuntime)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/StaticRuntimeConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/StaticRuntimeConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/StaticRuntimeConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/StaticRuntime)

# Installed programs find the installed library next to them, without LD_LIBRARY_PATH. In the pip
# package (python/CMakeLists.txt, component `wheel`) srt sits in static_runtime/bin and the library
# in static_runtime/lib.
set(SRT_SRT_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
if(NOT CMAKE_INSTALL_LIBDIR STREQUAL "lib")
  list(APPEND SRT_SRT_INSTALL_RPATH "$ORIGIN/../lib")
endif()
set_target_properties(srt PROPERTIES INSTALL_RPATH "${SRT_SRT_INSTALL_RPATH}")
