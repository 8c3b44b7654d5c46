"""Installs static_runtime as a user would and imports it from outside the source tree:
pip into a temporary venv (Debian's pip/setuptools/venv, offline, --no-build-isolation), and
`cmake --install` into a temporary prefix. Registered as its own ctest (python_install).

SRT_BUILD_DIR names the configured build directory to reuse (ctest passes its own), so that the
pip build runs CMake on an up-to-date tree instead of compiling the library again."""

import os
import pathlib
import shutil
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]
BUILD_DIR = os.environ.get("SRT_BUILD_DIR")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with torch

pytestmark = pytest.mark.skipif(
    not BUILD_DIR or not os.path.exists(os.path.join(BUILD_DIR or "", "CMakeCache.txt")),
    reason="set SRT_BUILD_DIR to a configured build directory (ctest does)")

# Run a snippet as a user would: from /, without the build tree on PYTHONPATH.
CHECK = """
import pathlib, torch, static_runtime, static_runtime.dask
print(static_runtime.__file__)
package = pathlib.Path(static_runtime.__file__).parent
assert (package / "__init__.pyi").exists() and (package / "py.typed").exists(), list(package.iterdir())
def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ y + 1.0)
module = static_runtime.StaticModule(torch.jit.script(f))  # needs f's source: run from a file
x, y = torch.randn(4, 8), torch.randn(8, 3)
torch.testing.assert_close(module(x, y), f(x, y))
print("ok", static_runtime.__version__)
"""


def _check(python, tmp_path, **env) -> pathlib.Path:
    """Runs CHECK with `python` from /; returns where static_runtime was imported from."""
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    lines = _run([python, script], env=_user_env(**env), cwd="/").stdout.splitlines()
    assert lines[-1].startswith("ok "), lines
    return pathlib.Path(lines[0])


def _user_env(**extra: str) -> dict:
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "SRT_PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def _run(command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                            timeout=600, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(map(str, command))} exited with {result.returncode}\n"
        f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}")
    return result


def _copy_sources(destination: pathlib.Path) -> pathlib.Path:
    # What pip needs from a checkout (the C++ comes prebuilt from SRT_BUILD_DIR); a copy keeps
    # pip's in-tree build/ and egg-info out of the real source tree.
    destination.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(SOURCE_DIR / name, destination / name)
    shutil.copytree(SOURCE_DIR / "python" / "static_runtime",
                    destination / "python" / "static_runtime",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return destination


def test_pip_install_into_venv(tmp_path):
    source = _copy_sources(tmp_path / "src")
    venv = tmp_path / "venv"
    _run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv])
    _run([venv / "bin" / "pip", "install", "--no-build-isolation", "--no-index",
          "--disable-pip-version-check", source],
         env=_user_env(SRT_BUILD_DIR=os.path.abspath(BUILD_DIR)), cwd=tmp_path)

    installed = _check(venv / "bin" / "python", tmp_path)
    assert installed.is_relative_to(venv), installed

    # The `srt` console script runs the bundled C++ CLI: help, and the bundled default model.
    srt = venv / "bin" / "srt"
    help_text = _run([srt, "--help"], env=_user_env(), cwd="/").stdout
    assert "usage" in help_text.lower() and "run" in help_text, help_text
    run_text = _run([srt, "run"], env=_user_env(), cwd="/").stdout
    assert "default_model.pt" in run_text and str(venv.resolve()) in run_text, run_text

    _run([venv / "bin" / "pip", "uninstall", "-y", "static-runtime"], env=_user_env())
    assert not (venv / "bin" / "srt").exists()


def _cached(name: str) -> str:
    for line in (pathlib.Path(BUILD_DIR) / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.partition("=")[2]
    raise AssertionError(f"{name} is not in {BUILD_DIR}/CMakeCache.txt")


def test_cmake_install_into_prefix(tmp_path):
    package_dir = _cached("SRT_PYTHON_INSTALL_DIR")
    if os.path.isabs(package_dir):
        pytest.skip(f"SRT_PYTHON_INSTALL_DIR is absolute ({package_dir}): not under a prefix")
    prefix = tmp_path / "prefix"
    _run(["cmake", "--install", BUILD_DIR, "--prefix", prefix])
    site = (prefix / package_dir).parent
    assert _check(SYSTEM_PYTHON, tmp_path, PYTHONPATH=str(site)).is_relative_to(site)
    help_text = _run([prefix / "bin" / "srt", "--help"], env=_user_env(), cwd="/").stdout
    assert "usage" in help_text.lower(), help_text
    # The default directory is one that Debian's python3 searches under the prefixes /usr/local
    # and /usr: there `cmake --install` alone makes `import static_runtime` work.
    sites = _run([SYSTEM_PYTHON, "-c", "import site; print('\\n'.join(site.getsitepackages()))"],
                 env=_user_env(), cwd="/").stdout.splitlines()
    for system_prefix in ("/usr/local", "/usr"):
        assert os.path.join(system_prefix, os.path.dirname(package_dir)) in sites, sites
