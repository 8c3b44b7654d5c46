# The libraries behind the GEMM kernels (ops/gemm/): oneDNN, OpenBLAS and the OpenMP runtime
# oneDNN runs on. Each ends up as an imported target that static_runtime links PRIVATE.

# Debian's dnnl-config.cmake requires the OpenCL development files (for oneDNN's GPU runtime,
# which we do not use) and fails without them; then find the CPU library and headers directly.
find_package(OpenCL QUIET)
if(OpenCL_FOUND)
  find_package(dnnl CONFIG REQUIRED)
endif()
if(NOT TARGET DNNL::dnnl)
  find_library(SRT_DNNL_LIBRARY dnnl REQUIRED)
  find_path(SRT_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp REQUIRED)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES
    IMPORTED_LOCATION ${SRT_DNNL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${SRT_DNNL_INCLUDE_DIR})
endif()

# OpenBLAS's own config names its cblas.h: the plain <cblas.h> is a Debian alternative that may be
# netlib's, which lacks openblas_set_num_threads.
find_package(OpenBLAS CONFIG REQUIRED)
if(NOT TARGET srt::openblas)
  add_library(srt::openblas INTERFACE IMPORTED)
  set_target_properties(srt::openblas PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}")
endif()

# The OpenMP runtime, libgomp, as Debian's libdnnl and libtorch use it: linked wherever thread
# counts are set (ops/gemm/threads.cpp, gemm_test). The library's own code is also compiled with
# OpenMP (SRT_OPENMP_COMPILE_OPTIONS): ATen's at::parallel_for is inline in its headers and
# splits work only in code compiled with it (ATen/ParallelOpenMP.h defines INTRA_OP_PARALLEL
# under _OPENMP); without the flag every at::parallel_for of ours ran on the calling thread
# alone, whatever the thread count and the cost model said.
find_package(OpenMP REQUIRED COMPONENTS CXX)
separate_arguments(SRT_OPENMP_COMPILE_OPTIONS UNIX_COMMAND "${OpenMP_CXX_FLAGS}")
if(NOT TARGET srt::openmp_runtime)
  add_library(srt::openmp_runtime INTERFACE IMPORTED)
  set_target_properties(srt::openmp_runtime PROPERTIES
    INTERFACE_LINK_LIBRARIES "${OpenMP_CXX_LIBRARIES}")
endif()
