# ccache cuts rebuilds of torch-heavy translation units from ~12 s to well under one.
# The sloppiness settings let it cache compilations that use a precompiled header. The base
# directory makes paths inside the checkout relative in what ccache hashes, so that a fresh clone
# elsewhere (CI's) reuses what another checkout compiled.
find_program(SRT_CCACHE ccache)
if(SRT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} ${SRT_CCACHE})
endif()
