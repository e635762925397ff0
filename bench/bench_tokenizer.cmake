# bench_tokenizer --ab loads two builds of the library with dlopen.
target_link_libraries(bench_tokenizer PRIVATE ${CMAKE_DL_LIBS})
