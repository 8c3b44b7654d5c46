"""Builds the compiled part of the pip package with the project's CMake (no download).

pyproject.toml holds the metadata; this file only teaches setuptools' build_ext to run CMake:
configure (first time only), build the targets the package needs (library, srt, _C), and
`cmake --install --component wheel` them into the package directory. The build directory is the
one scripts/build.sh uses ($SRT_BUILD_DIR, default build/), so an install after scripts/run.sh
reuses its build instead of compiling again.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE_DIR = pathlib.Path(__file__).resolve().parent
TARGETS = ["static_runtime", "srt", "_C"]


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = pathlib.Path(os.environ.get("SRT_BUILD_DIR", "build"))
        if not build_dir.is_absolute():
            build_dir = SOURCE_DIR / build_dir
        if not (build_dir / "CMakeCache.txt").exists():
            self._configure(build_dir)
        jobs = os.environ.get("SRT_JOBS", str(os.cpu_count() or 2))
        self._run(["cmake", "--build", str(build_dir), "--parallel", jobs, "--target", *TARGETS])

        # get_ext_fullpath: <build_lib>/static_runtime/_C.<suffix> (or the source tree with
        # --inplace); the component installs static_runtime/... under its grandparent.
        package_root = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve().parents[1]
        self._run(["cmake", "--install", str(build_dir), "--component", "wheel",
                   "--prefix", str(package_root)])
        self._keep_only_soname(package_root / "static_runtime" / "lib")

    def _configure(self, build_dir: pathlib.Path) -> None:
        # What scripts/run.sh configures: the main job's targets, no tests or benchmarks.
        command = ["cmake", "-S", str(SOURCE_DIR), "-B", str(build_dir),
                   "-DCMAKE_BUILD_TYPE=Release", "-DSRT_BUILD_TESTS=OFF",
                   "-DSRT_BUILD_BENCHMARKS=OFF", "-DSRT_BUILD_PYTHON=ON",
                   # The interpreter torch and the extension are for; a venv's python3 is the
                   # same one underneath, but find_package(Python3) must see the system prefix.
                   f"-DPython3_EXECUTABLE={os.path.realpath(sys.executable)}"]
        if shutil.which("ninja"):
            command += ["-G", "Ninja"]
        self._run(command)

    @staticmethod
    def _keep_only_soname(lib_dir: pathlib.Path) -> None:
        # The install gives libstatic_runtime.so.0.1.0 plus the symlink libstatic_runtime.so.0
        # (the SONAME, what the loader asks for). A wheel stores a symlink as a second copy of a
        # large file: keep one real file under the SONAME.
        for link in [p for p in lib_dir.iterdir() if p.is_symlink()]:
            target = link.resolve()
            link.unlink()
            target.rename(link)

    @staticmethod
    def _run(command) -> None:
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True)


setup(ext_modules=[CMakeExtension("static_runtime._C")], cmdclass={"build_ext": CMakeBuild})
