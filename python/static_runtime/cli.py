"""The `srt` command of a pip install: runs the srt program bundled in the package.

pip installs the C++ CLI (tools/srt.cpp) as static_runtime/bin/srt, beside the library it links;
this console script hands it the command line unchanged, so `srt run`, `srt inspect` and
`srt bench` behave as build/srt does. (A `cmake --install` puts srt itself in <prefix>/bin.)
"""

import os
import pathlib
import sys
from typing import NoReturn

_PACKAGE_DIR = pathlib.Path(__file__).resolve().parent


def program() -> pathlib.Path:
    """The bundled srt executable."""
    return _PACKAGE_DIR / "bin" / "srt"


def main() -> NoReturn:
    exe = program()
    if not os.access(exe, os.X_OK):
        sys.exit(f"srt: {exe} is missing: this static_runtime was not installed by pip "
                 "(from a build tree, run <build>/srt; after cmake --install, <prefix>/bin/srt)")
    # srt bench and srt inspect --memory-plot run this package under /usr/bin/python3 (where
    # torch is); point them at the environment it is installed in.
    os.environ.setdefault("SRT_PYTHONPATH", str(_PACKAGE_DIR.parent))
    os.execv(exe, ["srt", *sys.argv[1:]])


if __name__ == "__main__":
    main()
