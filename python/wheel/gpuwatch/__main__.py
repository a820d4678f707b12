"""python -m gpuwatch ARGS: execs the binary the wheel installed."""

import os
import sys

from gpuwatch import find_gpuwatch_bin

if __name__ == "__main__":
    binary = find_gpuwatch_bin()
    os.execv(binary, [binary, *sys.argv[1:]])
