# Source rules enforced by the build (STYLE.md §4, RELIABILITY.md §0):
#  - only src/core/alloc.c calls malloc/calloc/realloc/free;
#  - no abort()/exit()/assert() in the library (file data never aborts);
#  - src/core never includes a format header; a format never includes another format's files.
file(GLOB_RECURSE srcs ${SRC}/src/*.c ${SRC}/src/*.h)
set(bad "")
foreach(f ${srcs})
  file(READ ${f} text)
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" code "${text}")   # drop comments
  file(RELATIVE_PATH rel ${SRC} ${f})
  if(NOT rel STREQUAL "src/core/alloc.c" AND code MATCHES "[^_a-z](malloc|calloc|realloc|free)[ ]*\\(")
    list(APPEND bad "${rel}: calls the libc allocator directly")
  endif()
  if(code MATCHES "[^_a-z](abort|exit|assert)[ ]*\\(")
    list(APPEND bad "${rel}: abort/exit/assert in the library")
  endif()
  if(rel MATCHES "^src/core/" AND code MATCHES "#include \"(native_layout|native_formats)\\.h\"")
    list(APPEND bad "${rel}: core includes a format header")
  endif()
endforeach()
if(bad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "source rules violated:\n${bad}")
endif()
message(STATUS "source rules: OK")
