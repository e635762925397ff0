# setup.py - builds the `ingot` Python package: runs the project's CMake (one directory up) for
# the static library, compiled position-independent, and links it into one abi3 extension
# (CPython's limited API 3.9), so the installed package needs no libingot.so. Offline: nothing
# is fetched. `python3 -m pip install --no-build-isolation --no-index ./python [--target DIR]`.
#
# Environment: INGOT_PY_SANITIZE=1 builds library and extension with ASan+UBSan (tests only);
# INGOT_PY_CMAKE_DIR picks the CMake build directory (default: under setuptools' build_temp);
# CMAKE_BUILD_PARALLEL_LEVEL the build's jobs (default 2).
import os
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SANITIZE = os.environ.get("INGOT_PY_SANITIZE") == "1"


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(ingot VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


class CMakeBuildExt(build_ext):
    """Builds libingot.a with the project's CMake, then the extension against it."""

    def run(self):
        if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
            raise RuntimeError("ingot: setup.py must stay in python/ of the ingot source tree")
        bdir = os.environ.get("INGOT_PY_CMAKE_DIR") or os.path.join(
            os.path.abspath(self.build_temp), "cmake-asan" if SANITIZE else "cmake")
        cfg = [
            "cmake", "-S", ROOT, "-B", bdir,
            # RelWithDebInfo: the configuration the project tests (-O3 Release trips GCC 12's
            # -Wmaybe-uninitialized in src/formats/gguf/gguf_split.c under -Werror)
            "-DCMAKE_BUILD_TYPE=" + ("Debug" if SANITIZE else "RelWithDebInfo"),
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            "-DINGOT_BUILD_TESTS=OFF", "-DINGOT_BUILD_BENCH=OFF",
            "-DINGOT_SANITIZE=" + ("ON" if SANITIZE else "OFF"),
        ]
        if shutil.which("ccache"):
            cfg.append("-DCMAKE_C_COMPILER_LAUNCHER=ccache")
        subprocess.check_call(cfg, stdout=subprocess.DEVNULL)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", bdir, "--target", "ingot_static", "-j", jobs])
        libs = ["pthread", "m"]
        with open(os.path.join(bdir, "ingot.pc"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("Libs.private:"):
                    libs = [w[2:] for w in line.split()[1:] if w.startswith("-l")]
        # the extension's own three files are always recompiled: setuptools would otherwise
        # reuse objects built with the other INGOT_PY_SANITIZE setting
        self.force = True
        for ext in self.extensions:
            ext.extra_objects = [os.path.join(bdir, "libingot.a")]
            ext.libraries = libs
            if SANITIZE:
                flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
                ext.extra_compile_args += flags
                ext.extra_link_args += flags
        super().run()


ext = Extension(
    "ingot._ingot",
    sources=["src/_ingot.c", "src/save.c", "src/runtime.c"],
    include_dirs=[os.path.join(ROOT, "include")],
    define_macros=[("Py_LIMITED_API", "0x03090000"), ("INGOT_STATIC_DEFINE", "1")],
    extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror",
                        "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
    extra_link_args=[],
    py_limited_api=True,
)

setup(
    name="ingot",
    version=project_version(),
    description="Open, verify, save and convert neural-network weight files zero-copy (ingot)",
    packages=["ingot"],
    package_data={"ingot": ["*.pyi", "py.typed"]},
    ext_modules=[ext],
    cmdclass={"build_ext": CMakeBuildExt},
    python_requires=">=3.9",
    install_requires=[],
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
    zip_safe=False,
)
