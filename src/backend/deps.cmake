# Link dependencies of src/backend (see the top CMakeLists.txt): none. The cpu backend uses
# pthreads and libm, which every target already links. OpenBLAS is not used: the kernel work in
# src/backend/cpu/kernels/ may add it here (find_library first) as a benchmark baseline.
set(INGOT_BACKEND_DEPS)
