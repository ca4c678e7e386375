"""Builds gpuscope's Python module and binary with CMake (pyproject.toml has the metadata).

    pip install --no-build-isolation .

With GPUSCOPE_PREBUILT_DIR=BUILD it packages the module and binary of that CMake build instead
(one configured with GPUSCOPE_PYTHON on, as a test build with the project's venv is), compiling
nothing. Otherwise it configures CMakeLists.txt with -DGPUSCOPE_PYTHON=ON -DGPUSCOPE_TESTS=OFF
(Ninja, Release, ccache when present) and builds the targets _gpuscope (the module) and gpuscope (the command, shipped as
package data and run by the `gpuscope` console script). The CMake build folder is
build/python (GPUSCOPE_BUILD_DIR overrides it), kept between builds so a rebuild is incremental.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        prebuilt = os.environ.get("GPUSCOPE_PREBUILT_DIR")
        if prebuilt:
            # A CMake build that already holds the module and the binary (a test build with
            # GPUSCOPE_PYTHON=ON, tests/python/pip_install.sh): package them, compile nothing.
            self._package(Path(prebuilt).resolve(), target)
            return
        build_dir = Path(os.environ.get("GPUSCOPE_BUILD_DIR", ROOT / "build" / "python")).resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release", "-DGPUSCOPE_PYTHON=ON", "-DGPUSCOPE_TESTS=OFF",
            "-DPython_EXECUTABLE=" + sys.executable,
        ]
        if shutil.which("ccache") and "CMAKE_CXX_COMPILER_LAUNCHER" not in os.environ:
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_gpuscope",
                               "gpuscope", "--", "-j", jobs])
        self._package(build_dir, target)

    @staticmethod
    def _package(build_dir: Path, target: Path) -> None:
        modules = sorted(build_dir.glob("_gpuscope*.so"))
        if not modules:
            raise RuntimeError("CMake built no _gpuscope module in %s" % build_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(modules[0], target)
        bin_dir = target.parent / "bin"
        bin_dir.mkdir(exist_ok=True)
        shutil.copy2(build_dir / "gpuscope", bin_dir / "gpuscope")


setup(ext_modules=[CMakeExtension("gpuscope._gpuscope")], cmdclass={"build_ext": CMakeBuild})
