# SRT_SANITIZE builds every target of this project (library, CPU kernel objects, srt, srt_tests, the
# Python module) instrumented by a sanitizer:
#   address  AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer, part of ASan)
#   thread   ThreadSanitizer
# Use a build directory of its own (scripts/sanitize.sh uses build-asan / build-tsan): instrumented
# objects must not mix with the normal build. LibTorch, oneDNN, OpenBLAS, libgomp and Python are
# not instrumented; cmake/sanitizers/*.supp holds the suppressions for what they report.
set(SRT_SANITIZE "" CACHE STRING "Sanitizer build: empty, 'address' (ASan+UBSan) or 'thread' (TSan)")
set_property(CACHE SRT_SANITIZE PROPERTY STRINGS "" address thread)

if(SRT_SANITIZE STREQUAL "")
  return()
elseif(SRT_SANITIZE STREQUAL "address")
  # -fno-sanitize-recover: a UB finding fails the test instead of scrolling by. No vptr check:
  # it needs the RTTI of LibTorch's polymorphic classes, which libtorch does not export
  # (c10::DynamicType's typeinfo: the link fails).
  set(SRT_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize=vptr
                         -fno-sanitize-recover=undefined)
elseif(SRT_SANITIZE STREQUAL "thread")
  set(SRT_SANITIZE_FLAGS -fsanitize=thread)
else()
  message(FATAL_ERROR "SRT_SANITIZE='${SRT_SANITIZE}': expected empty, 'address' or 'thread'")
endif()
message(STATUS "Sanitizer build: ${SRT_SANITIZE} (${SRT_SANITIZE_FLAGS})")

# Directory-wide, so every target defined after this file (here and in python/, test/) gets it.
# -O1 comes after the build type's -O3 and wins: readable stacks at a bearable speed; -g for
# file:line in reports; frame pointers for the fast unwinder the sanitizers use.
add_compile_options(${SRT_SANITIZE_FLAGS} -fno-omit-frame-pointer -g -O1)
add_link_options(${SRT_SANITIZE_FLAGS})

# An instrumented library needs the sanitizer runtime linked into the executable that loads it
# (ASan insists on coming first; TSan's interceptors must precede libc). Consumers of the exported
# target (test/consumer) get the flag with it. Deferred: the target is defined after this file.
cmake_language(DEFER CALL target_link_options static_runtime INTERFACE ${SRT_SANITIZE_FLAGS})
