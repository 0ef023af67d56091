#!/usr/bin/env python3
"""Run a command with its stdout into a file; print its wall time in seconds.

    walltime.py STDOUT_FILE CMD [ARGS...]

The clock starts after Python is up (time.perf_counter around the child
process alone), so short commands are not charged for the timer's own start-up.
Exits with the command's status.
"""
import subprocess
import sys
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
with open(sys.argv[1], "w") as out:
    t0 = time.perf_counter()
    rc = subprocess.run(sys.argv[2:], stdout=out).returncode
    wall = time.perf_counter() - t0
print(f"{wall:.4f}")
sys.exit(rc)
