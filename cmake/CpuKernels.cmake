# ops/*/cpu/*.cpp hold at::vec::Vectorized loops. Like ATen's own kernels they are compiled once
# per CPU capability, each with its instruction-set flags and CPU_CAPABILITY naming the inline
# namespace their symbols live in; ops/elementwise/vectorized_loops.cpp picks one at run time, the
# one ATen itself dispatches to, so both compute with the same instructions (and Sleef routines).
# The capability files skip the precompiled header: it is built without these flags.
file(GLOB SRT_CPU_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/ops/*/cpu/*.cpp)

set(SRT_CPU_FLAGS_DEFAULT "")
# The instruction sets ATen builds these capabilities with (F16C: every AVX2 CPU has it).
set(SRT_CPU_FLAGS_AVX2 -mavx2 -mfma -mf16c)
set(SRT_CPU_FLAGS_AVX512 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c)

# Vectorized<float>'s transcendental functions call Sleef (Debian: libsleef-dev), which
# libtorch_cpu links too.
find_path(SLEEF_INCLUDE_DIR sleef.h REQUIRED)
find_library(SLEEF_LIBRARY sleef REQUIRED)

foreach(capability DEFAULT AVX2 AVX512)
  set(target srt_cpu_kernels_${capability})
  add_library(${target} OBJECT ${SRT_CPU_KERNEL_SOURCES})
  target_compile_definitions(${target} PRIVATE
    CPU_CAPABILITY=${capability} CPU_CAPABILITY_${capability})
  # -Wno-maybe-uninitialized: GCC 12 flags _mm512_undefined_ps inside ATen's headers, as ATen's
  # own build does not ask it to.
  target_compile_options(${target} PRIVATE ${SRT_CPU_FLAGS_${capability}} -Wall -Wextra
    -Wno-unused-parameter -Wno-maybe-uninitialized)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${SLEEF_INCLUDE_DIR})
  # Torch's include directories and definitions (the CXX11 ABI flag) only; nothing is linked here.
  target_link_libraries(${target} PRIVATE torch)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_sources(static_runtime PRIVATE $<TARGET_OBJECTS:${target}>)
endforeach()
target_link_libraries(static_runtime PRIVATE ${SLEEF_LIBRARY})
