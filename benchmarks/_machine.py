"""The machine a benchmark ran on, in one line for its output and BENCHMARKS.md: platform,
CPU model (Linux's /proc/cpuinfo when there), CPU count, the load average when the line is
made (these 2-core machines are shared: a figure means little without it), Python."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe() -> str:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (f"{platform.system()} {platform.machine()}, {model}, {os.cpu_count()} CPUs"
            f"{load}, Python {platform.python_version()}")
