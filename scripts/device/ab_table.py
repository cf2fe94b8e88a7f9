"""Old against new from scripts/device/ab-trees' JSON summaries: NAME_{old,new}_REP.json."""
import glob, json, os, re, statistics, sys
d = sys.argv[1]
rows = {}
for p in glob.glob(os.path.join(d, "*_*_[12345]*.json")):
    m = re.match(r"(.*)_(old|new)_([0-9])\.json$", os.path.basename(p))
    if not m: continue
    s = json.load(open(p))
    for ps in s["passes"]:
        key = (m.group(1), "on" if ps["overlap"] else "off")
        rows.setdefault(key, {"old": [], "new": []})[m.group(2)].append(ps["time_per_step_ms"] * 1e3)
try:
    fl = {re.sub(r"/(iterations:\d+|manual_time)", "", r["name"]): r["real_time"]
          for r in json.load(open(os.path.join(d, "bench-floor.json")))["benchmarks"] if r.get("run_type") != "aggregate"}
except Exception:
    fl = {}
floor = {"eager_4k": fl.get("floor/np1/eager/4096"), "graphs_g1_4k": fl.get("floor/np1/graph_k1/4096"),
         "graphs_g16_4k": fl.get("floor/np1/graph_k16/4096")}
print("run | pass | old us/step (3 runs) | new us/step (3 runs) | new/old (medians) | floor us | new x floor")
for (name, ov), r in sorted(rows.items()):
    o, n = r["old"], r["new"]
    mo, mn = (statistics.median(o) if o else float("nan")), (statistics.median(n) if n else float("nan"))
    f = floor.get(name)
    print(f"{name} | {ov} | {mo:.2f} ({', '.join(f'{x:.2f}' for x in sorted(o))}) | {mn:.2f} ({', '.join(f'{x:.2f}' for x in sorted(n))}) | {mn/mo:.3f} | "
          f"{'-' if f is None else f'{f:.2f}'} | {'-' if f is None else f'{mn/f:.2f}'}")
