#!/bin/bash
# (py-spy: .venv/bin/pip install py-spy; run as root.) Then: python bench/stall_stacks.py RESULT.json OUTDIR
# usage: dumper.sh BENCH_PID OUTDIR -- about every second, py-spy dump of the bench's `console serving` master,
# its serving processes and its worker (only that bench's, never another server on the machine)
bench=$1; out=$2; mkdir -p $out
while kill -0 $bench 2>/dev/null; do
  master=$(pgrep -P $bench -f "console serving" | head -1)
  if [ -n "$master" ]; then
    ts=$(date +%s.%N | cut -c1-14)
    for pid in $master $(pgrep -P $master); do
      timeout 5 ${PYSPY:-.venv/bin/py-spy} dump --pid $pid > $out/$ts.$pid.txt 2>&1 &
    done
    wait
  fi
  sleep 0.7
done
