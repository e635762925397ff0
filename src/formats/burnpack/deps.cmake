# Burnpack metadata is CBOR, decoded with libcbor's streaming decoder (no item tree, no
# allocation inside libcbor). Debian: libcbor-dev (scripts/install-deps.sh).
find_path(INGOT_CBOR_INCLUDE_DIR cbor.h)
find_library(INGOT_CBOR_LIBRARY NAMES cbor)
if(NOT INGOT_CBOR_INCLUDE_DIR OR NOT INGOT_CBOR_LIBRARY)
  message(FATAL_ERROR "burnpack: libcbor not found (apt-get install libcbor-dev)")
endif()
set(INGOT_FMT_DEPS cbor)
