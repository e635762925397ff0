# .npz deflated members are inflated with zlib (allocation through the file's allocator via
# zalloc/zfree). Debian: zlib1g-dev. The zip container reader itself (src/core/zip.c) needs no zlib.
find_path(INGOT_ZLIB_INCLUDE_DIR zlib.h)
find_library(INGOT_ZLIB_LIBRARY NAMES z)
if(NOT INGOT_ZLIB_INCLUDE_DIR OR NOT INGOT_ZLIB_LIBRARY)
  message(FATAL_ERROR "npy: zlib not found (apt-get install zlib1g-dev)")
endif()
set(INGOT_FMT_DEPS z)
