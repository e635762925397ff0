# fuzz/replay.cmake - the corpus replay that runs in every build (gcc or clang, with or without
# INGOT_SANITIZE): each fuzz target compiled with a plain main() (fuzz/replay_main.c) and run as a
# ctest over its minimized corpus, plus the shared corpora of tests/corpus/ when they exist.
# Included from tests/CMakeLists.txt:
#   include(${PROJECT_SOURCE_DIR}/fuzz/replay.cmake)
# No libFuzzer and no FUZZING_BUILD_MODE here: the library enforces the header CRC as in
# production, and the targets' checks hold in both modes.

# Every fuzz/fuzz_*.c; each must have a non-empty fuzz/corpus/<target>/.
file(GLOB INGOT_REPLAY_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/fuzz_*.c)
set(INGOT_REPLAY_TARGETS)
foreach(src ${INGOT_REPLAY_SOURCES})
  get_filename_component(t ${src} NAME_WE)
  list(APPEND INGOT_REPLAY_TARGETS ${t})
endforeach()
foreach(t ${INGOT_REPLAY_TARGETS})
  add_executable(replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/${t}.c
                 ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
  target_link_libraries(replay_${t} PRIVATE ingot_internal m)
  target_compile_definitions(replay_${t} PRIVATE
                             INGOT_FIXTURES="${PROJECT_SOURCE_DIR}/../shared/fixtures")
  # ${build}/fuzz/replay_<target>, where scripts/test.sh runs them under valgrind
  set_target_properties(replay_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
  # The target's own corpus must exist and hold inputs; the shared corpora after --optional may
  # be missing or empty.
  add_test(NAME replay_${t}
           COMMAND replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${t}
                   --optional ${PROJECT_SOURCE_DIR}/tests/corpus/bad
                   ${PROJECT_SOURCE_DIR}/tests/corpus/good)
  set_tests_properties(replay_${t} PROPERTIES TIMEOUT 120 LABELS fuzz-replay)
endforeach()
