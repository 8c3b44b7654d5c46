# ctest driver: install the already-built project into WORK_DIR/prefix, then configure, build
# and run the consumer against that prefix only.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)

# The installed package is the public API only: no internal header is shipped, and none is
# reached from the public header.
foreach(internal ops memory)
  if(EXISTS ${WORK_DIR}/prefix/include/${internal})
    message(FATAL_ERROR "the install ships ${WORK_DIR}/prefix/include/${internal}/")
  endif()
endforeach()
file(READ ${WORK_DIR}/build/public_header.d dependencies)
string(REGEX MATCHALL "[^ \\\n]*/include/(ops|memory)/[^ \\\n]*" internal_headers "${dependencies}")
if(internal_headers)
  message(FATAL_ERROR "<static_runtime/static_runtime.h> pulls in internal headers: ${internal_headers}")
endif()
string(FIND "${dependencies}" "static_runtime/static_module.h" found)
if(found EQUAL -1)
  message(FATAL_ERROR "public_header.d does not list the public headers: ${dependencies}")
endif()
message(STATUS "the public header pulls in no header of ops/ or memory/")
