"""Line stack dumps (dumper.sh) up with B's slow calls (bench.neighbours --json): which threads, doing what."""
import json, sys, re, collections
from pathlib import Path
r = json.load(open(sys.argv[1])); d = Path(sys.argv[2])
slow = r["storm"]["api_slow"]
files = sorted(d.glob("*.txt"))
def in_stall(ts): return any(t <= ts <= t + s for t, s in slow)
by_ts = collections.defaultdict(list)
for f in files:
    ts = float(".".join(f.name.split(".")[:2])); by_ts[ts].append(f)
print("slow calls:", slow)
for ts in sorted(by_ts):
    if not in_stall(ts): continue
    print(f"\n######## {ts:.2f}")
    for f in by_ts[ts]:
        text = f.read_text()
        head = text.splitlines()[0] if text else ""
        threads = re.split(r"\n(?=Thread )", text)
        summary = collections.Counter()
        for t in threads[1:]:
            lines = [l.strip() for l in t.splitlines()[1:] if l.strip()]
            if not lines or not any("console/" in l or "flask" in l for l in lines): continue
            # innermost frame + innermost console frame
            cons = [l for l in lines if "console/" in l]
            summary[(lines[0].split(" (")[0] + " | " + (cons[0] if cons else ""))[:160]] += 1
        print(" ", head)
        for k, n in summary.most_common(12): print(f"    {n:3d}  {k}")
