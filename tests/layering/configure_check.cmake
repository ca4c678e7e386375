# Layering.ConfigureFailsOnSourceOutsideStage: configure refuses source that belongs to no stage.
#   cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch folder> -DGENERATOR=Ninja -DCXX=<compiler>
#         -P tests/layering/configure_check.cmake
# It configures the real CMakeLists.txt from WORK_DIR/tree, a tree of links to the repository's
# entries whose src/ is a real folder of links to the repository's src/ entries, so files can be
# added to src/ there without touching the repository. WORK_DIR is removed at the end, pass or fail.
foreach(var SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT ${var})
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DCXX=... -P configure_check.cmake")
  endif()
endforeach()

set(tree ${WORK_DIR}/tree)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${tree}/src)
file(GLOB entries RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/CMakeLists.txt ${SOURCE_DIR}/include
  ${SOURCE_DIR}/models ${SOURCE_DIR}/bench ${SOURCE_DIR}/python)
foreach(entry IN LISTS entries)
  file(CREATE_LINK ${SOURCE_DIR}/${entry} ${tree}/${entry} SYMBOLIC)
endforeach()
file(GLOB src_entries RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/*)
foreach(entry IN LISTS src_entries)
  file(CREATE_LINK ${SOURCE_DIR}/src/${entry} ${tree}/src/${entry} SYMBOLIC)
endforeach()

function(fail why)
  file(REMOVE_RECURSE ${WORK_DIR})
  message(FATAL_ERROR "${why}")
endfunction()

# Configures the tree; rc and output (stdout and stderr together) to the caller.
function(configure out_rc out_log)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${tree} -B ${build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DGPUSCOPE_TESTS=OFF -DGPUSCOPE_FUZZ=OFF
    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_log} "${log}" PARENT_SCOPE)
endfunction()

# 1. Control: the tree as it is configures, so a failure below is the stray file's doing.
configure(rc log)
if(NOT rc EQUAL 0)
  fail("the unchanged tree of links does not configure, so this check proves nothing:\n${log}")
endif()
message(STATUS "the unchanged tree configures")

# 2. A .cc directly in src/: in no stage, so it would silently not be built.
file(WRITE ${tree}/src/stray.cc "int Stray() { return 1; }\n")
configure(rc log)
if(rc EQUAL 0)
  fail("configure accepted src/stray.cc, a source file in no stage folder")
endif()
if(NOT log MATCHES "src/stray\\.cc belongs to no stage")
  fail("configure failed with src/stray.cc, but without naming it:\n${log}")
endif()
message(STATUS "src/stray.cc: configure fails, naming it")
file(REMOVE ${tree}/src/stray.cc)

# 3. A folder of src/ that no gpuscope_stage declares.
file(WRITE ${tree}/src/newstage/thing.cc "int Thing() { return 1; }\n")
configure(rc log)
if(rc EQUAL 0)
  fail("configure accepted src/newstage/, a folder that is no stage")
endif()
if(NOT log MATCHES "src/newstage is no stage")
  fail("configure failed with src/newstage/, but without naming it:\n${log}")
endif()
message(STATUS "src/newstage/: configure fails, naming it")

file(REMOVE_RECURSE ${WORK_DIR})
