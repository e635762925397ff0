# Source rules enforced by the build (STYLE.md §4, RELIABILITY.md §0):
#  - only src/core/alloc.c calls malloc/calloc/realloc/free;
#  - no abort()/exit()/assert() in the library (file data never aborts);
#  - src/core never includes a format header; a format never includes another format's files;
#  - boxes point one way (STYLE.md §1): core, formats and backend never include a model header
#    (ingot/runtime.h, ingot/lm.h); src/runtime sees the backend only through ingot/backend.h and
#    backend_export.h, never its internals, a format's files or a relative path.
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
  if(rel MATCHES "^src/(core|formats|backend)/" AND code MATCHES "#include \"ingot/(runtime|lm)\\.h\"")
    list(APPEND bad "${rel}: a box below the runtime includes a model header")
  endif()
  if(rel MATCHES "^src/runtime/" AND
     code MATCHES "#include \"([^\"]*/)?(backend_internal|cpu|ref|kernels|native_layout|native_formats)\\.h\"|#include \"\\.\\.")
    list(APPEND bad "${rel}: the runtime includes backend or format internals")
  endif()
endforeach()
if(bad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "source rules violated:\n${bad}")
endif()
message(STATUS "source rules: OK")
