# Fails when bench code (DIR, test files excepted) includes one of our headers
# outside bench/ and common/: the benchmarks reach the server only over HTTP.
# Usage: cmake -DDIR=src/bench -P check_bench_includes.cmake
file(GLOB sources ${DIR}/*.h ${DIR}/*.cc)
set(violations "")
foreach(f ${sources})
  if(f MATCHES "_test\\.cc$")
    continue()
  endif()
  file(STRINGS ${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
    if(NOT header MATCHES "^(bench|common)/")
      string(APPEND violations "\n  ${f}: #include \"${header}\"")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR
          "bench code may include only bench/ and common/ headers (it talks to the server over HTTP):${violations}")
endif()
