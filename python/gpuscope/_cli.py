"""The `gpuscope` command of the Python package: execs the binary built with the module."""

import os
import sys


def binary() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "gpuscope")


def main() -> None:
    exe = binary()
    if not os.path.isfile(exe):
        sys.stderr.write("gpuscope: error: the gpuscope binary is missing from the package (%s); "
                         "reinstall with pip install --no-build-isolation .\n" % exe)
        sys.exit(1)
    if not os.access(exe, os.X_OK):
        os.chmod(exe, 0o755)
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
