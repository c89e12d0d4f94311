"""Run every benchmark module in turn (`python -m bench`, or `make bench`)."""

from __future__ import annotations

import importlib

# Each module has `main(argv)`; add new benchmark modules here.
MODULES = (
    "bench.webhooks",
    "bench.console_pages",
    "bench.api_cpu",
    "bench.api_instructions",
    "bench.api",
    "bench.crowd",
    "bench.neighbours",
    "bench.startup",
)


def main() -> None:
    for name in MODULES:
        print(f"== {name}")
        importlib.import_module(name).main([])


if __name__ == "__main__":
    main()
