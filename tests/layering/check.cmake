# Layering.UpwardIncludeFailsToBuild: proves that an include from a lower stage of a higher one fails the build.
#   cmake -DBUILD_DIR=<configured build folder> -P tests/layering/check.cmake
# Targets are described in tests/layering/CMakeLists.txt.
if(NOT BUILD_DIR)
  message(FATAL_ERROR "usage: cmake -DBUILD_DIR=<build folder> -P check.cmake")
endif()

function(build target out_rc out_log)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_log} "${log}" PARENT_SCOPE)
endfunction()

# 1. Every stage sees exactly the folders of the stages it links (and no others).
build(layering_visibility rc log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layering_visibility failed: a stage sees a folder it does not link, or "
    "misses one it does:\n${log}")
endif()
message(STATUS "every stage sees exactly the folders of its dependency closure")

# 2. Positive control: the probe, as a file of io, includes io/ and base/ and builds.
build(layering_probe_legal rc log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layering_probe_legal should build (io including io/ and base/):\n${log}")
endif()
message(STATUS "io including io/ and base/ builds")

# 3. The same file plus `#include "analyze/steps.h"` fails, and for that reason only: the compiler
# reports that very header missing (GCC: "No such file or directory", clang: "file not found").
build(layering_probe_upward rc log)
if(rc EQUAL 0)
  message(FATAL_ERROR "layering_probe_upward built: io can include analyze/, the layers are not "
    "enforced")
endif()
if(NOT log MATCHES "analyze/steps\\.h[^\n]*(No such file or directory|file not found)")
  message(FATAL_ERROR "layering_probe_upward failed, but not because analyze/steps.h was not "
    "found:\n${log}")
endif()
message(STATUS "io including analyze/ fails to build: analyze/steps.h not found")
