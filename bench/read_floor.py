#!/usr/bin/python3
"""The least a loader that copies a file into memory of its own pays: numpy.fromfile(FILE).

A benchmark helper for bench/run_model_bench.sh, not a test. numpy reads the file into a fresh
array (on transparent huge pages: numpy advises them for large arrays), so this pays what
every loader that holds the weights in its own memory pays, the reading and the fresh pages,
and nothing else: no conversion, no checks. `cat FILE > /dev/null` pays only the reading
(into one small buffer, reused). Prints one JSON line: wall and CPU seconds of the read alone
(the interpreter's start is not counted), and the bytes read.
"""
import json
import resource
import sys
import time

import numpy as np


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    path = sys.argv[1]
    t0, c0 = time.perf_counter(), cpu_seconds()
    data = np.fromfile(path, dtype=np.uint8)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    print(json.dumps({"seconds": wall, "cpu_seconds": cpu, "bytes": int(data.size)}))


if __name__ == "__main__":
    main()
