"""Line up stack dumps (bench/dump_stacks.sh) with tenant B's slow calls (`bench.neighbours --json`).

Usage: python bench/stall_stacks.py RESULT.json DUMP_FOLDER. For each dump taken during one of B's calls over
500 ms, prints how many request threads were in each place (innermost frame | innermost console frame).
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path


def _during_a_slow_call(moment: float, slow: list) -> bool:
    return any(start <= moment <= start + seconds for start, seconds in slow)


def _places(text: str) -> collections.Counter:
    places: collections.Counter = collections.Counter()
    for thread in re.split(r"\n(?=Thread )", text)[1:]:
        frames = [line.strip() for line in thread.splitlines()[1:] if line.strip()]
        if not frames or not any("console/" in frame or "flask" in frame for frame in frames):
            continue  # not a request thread
        ours = [frame for frame in frames if "console/" in frame]
        place = frames[0].split(" (")[0] + " | " + (ours[0] if ours else "")
        places[place[:160]] += 1
    return places


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: python bench/stall_stacks.py RESULT.json DUMP_FOLDER")
    result = json.loads(Path(argv[0]).read_text())
    slow = result["storm"]["api_slow"]
    dumps_by_moment: dict[float, list[Path]] = collections.defaultdict(list)
    for dump in sorted(Path(argv[1]).glob("*.txt")):
        dumps_by_moment[float(".".join(dump.name.split(".")[:2]))].append(dump)
    print("slow calls:", slow)
    for moment in sorted(dumps_by_moment):
        if not _during_a_slow_call(moment, slow):
            continue
        print(f"\n######## {moment:.2f}")
        for dump in dumps_by_moment[moment]:
            text = dump.read_text()
            print(" ", text.splitlines()[0] if text else "")
            for place, count in _places(text).most_common(12):
                print(f"    {count:3d}  {place}")


if __name__ == "__main__":
    main(sys.argv[1:])
