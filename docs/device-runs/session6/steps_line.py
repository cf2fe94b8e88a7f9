"""One line per gpurelay run from its JSON summary: time per step of each pass, the overlap
speedup and the host's time per step (session 6's device calls).
usage: steps_line.py NAME SUMMARY.json"""
import json
import sys

name, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
parts = []
for p in d["passes"]:
    host = p["host_us_per_step"]
    parts.append(f"{'on' if p['overlap'] else 'off'} {p['time_per_step_ms']:.3f} ms "
                 f"(step span {p['phases_ms']['step']['median']:.3f}, host q/r/cb "
                 f"{host['queue']:.0f}/{host['retire']:.0f}/{host['callback']:.0f} us, "
                 f"{p['timing']['used']})")
print(f"{name:34s} {d['transport']:38s} verified {d['verified']}: " + "; ".join(parts))
