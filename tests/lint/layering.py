#!/usr/bin/env python3
"""The layering of kiln's sources, checked on every `make test` (docs/architecture.md states it):

  common  <-  slurm, worker  <-  coordinator        (an arrow points at what may be included)

- common/ includes only common/.
- slurm/ includes only common/ and slurm/.
- worker/ includes nothing from coordinator/ or slurm/ (but worker/health/, the health check,
  drains its own node through slurm/); the worker core (worker/*, worker/hw/)
  includes nothing from worker/checks/; a check folder worker/checks/<p>/ includes only its own
  files, the worker core and common/.
- coordinator/ includes nothing from worker/.
- coordinator/analysis/ (the pure analysis core) includes only common/ and itself, and no header
  that does I/O (files, sockets, processes, clocks of the wall, logging).
Exit 0 when all hold; otherwise one line per breach and exit 1.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
INC = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
IO_HEADERS = {"fstream", "iostream", "cstdio", "stdio.h", "unistd.h", "fcntl.h", "filesystem", "thread",
              "spdlog/spdlog.h", "boost/asio.hpp", "sys/socket.h", "chrono"}


def allowed(path, inc):
    top = path.split("/")[0]
    if top == "common":
        return inc.startswith("common/")
    if top == "slurm":
        return inc.startswith(("common/", "slurm/"))
    if top == "worker":
        if inc.startswith("slurm/") and path.startswith("worker/health/"):
            return True  # the health check drains its own node
        if inc.startswith(("coordinator/", "slurm/")):
            return False
        parts = path.split("/")
        if parts[1] != "checks":  # the core
            return not inc.startswith("worker/checks/")
        own = "/".join(parts[:3]) + "/"
        return inc.startswith(("common/", own)) or (inc.startswith("worker/") and not inc.startswith("worker/checks/"))
    if top == "coordinator":
        if inc.startswith("worker/"):
            return False
        if path.startswith("coordinator/analysis/"):
            return inc.startswith(("common/", "coordinator/analysis/"))
        return True
    return True


def main():
    breaches = []
    files = 0
    for top in ("common", "slurm", "worker", "coordinator"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if not n.endswith((".cpp", ".hpp", ".cu", ".h")):
                    continue
                full = os.path.join(dirpath, n)
                rel = os.path.relpath(full, ROOT)
                files += 1
                text = open(full, encoding="utf-8", errors="replace").read()
                for kind, inc in INC.findall(text):
                    if kind == '"' and not allowed(rel, inc):
                        breaches.append(f"{rel}: includes {inc}")
                    # simulate_driver.cpp is the stand-alone CLI of the simulator, not the core.
                    if (kind == "<" and rel.startswith("coordinator/analysis/") and inc in IO_HEADERS
                            and not rel.endswith("simulate_driver.cpp")):
                        breaches.append(f"{rel}: the analysis core includes the I/O header <{inc}>")
    for b in breaches:
        print(b)
    if files < 50:
        print(f"only {files} source files found under {ROOT}: wrong root?")
        return 1
    print(f"layering: {files} files, {len(breaches)} breaches")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
