"""Scale run: a synthetic corpus of N runs through synth, ingest, token counting and a seed-A sweep (pool, Ray).

    python benchmarks/bench_scale.py --runs 10000 --points 1000 --work /tmp/scale [--source STORE]
Each stage is the `replay` command line in its own process, under nice and `/usr/bin/time -v`, so each has its
own peak RSS: the largest single process (time -v) and the sum over the stage's process tree (sampled from /proc
every 0.5 s; pool and Ray workers included). Prints wall time per stage, both peaks, the corpus and store sizes.
With --reuse an existing synthetic corpus in --work (same runs) is not written again.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def tree_rss(pid: int, cpu: dict[int, float] | None = None) -> int:
    """Resident bytes of ``pid`` and all its descendants (from /proc); with ``cpu``, also records each one's CPU
    seconds so far (user + system) under its pid."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * PAGE
            ticks[int(entry)] = int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        if cpu is not None and p in ticks:
            cpu[p] = max(cpu.get(p, 0.0), ticks[p] / TICKS)
        todo.extend(children.get(p, []))
    return total


def run_stage(name: str, args: list[str], log: Path, niceness: int = 10) -> dict:
    """Run one replay command; return wall seconds, peak RSS of the largest process and of the process tree."""
    cmd = ["nice", "-n", str(niceness), "/usr/bin/time", "-v", sys.executable, "-m", "replay", *args]
    peak = [0]
    loads: list[float] = []
    tree_cpu: dict[int, float] = {}
    print(f"{name:>12}: {' '.join(cmd[5:])}", flush=True)
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )

        def sample() -> None:
            ticks = 0
            while proc.poll() is None:
                peak[0] = max(peak[0], tree_rss(proc.pid, tree_cpu))
                if ticks % 20 == 0:  # the 1-minute load average every 10 s
                    loads.append(os.getloadavg()[0])
                ticks += 1
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = proc.wait()
        sampler.join()
    wall = time.perf_counter() - start
    text = log.read_text(errors="replace")
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    cpu = {
        k: float(m.group(1)) for k in ("User", "System") if (m := re.search(rf"{k} time \(seconds\): ([\d.]+)", text))
    }
    result = {
        "stage": name,
        "wall_s": wall,
        "max_rss_mb": int(match.group(1)) / 1024 if match else None,
        "tree_rss_mb": peak[0] / 2**20,
        "exit": code,
        "load": sum(loads) / max(1, len(loads)),
        "load_max": max(loads, default=0.0),
        "cpu_s": max(sum(cpu.values()), sum(tree_cpu.values())),
    }
    print(
        f"{name:>12}: {wall:8.1f} s wall, {result['cpu_s']:.0f} CPU s (process tree), "
        f"peak RSS {result['max_rss_mb'] or 0:8.0f} MB largest process, {result['tree_rss_mb']:8.0f} MB process "
        f"tree, load average {result['load']:.1f} (max {result['load_max']:.1f}), exit {code} (log {log})",
        flush=True,
    )
    return result


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6 if path.exists() else 0.0


def sweep_file(work: Path, name: str, points: int, tokenizer: str, runs: str = "%") -> Path:
    """A seed-A grid of about ``points`` points (protected range x summary threshold x reclaim floor) over the runs
    whose id or path is LIKE ``runs``."""
    n = max(2, round(points ** (1 / 3)))
    grid = {
        "protect": [2_000 + 4_000 * i for i in range(n)],
        "summary_at": [40_000 + 8_000 * i for i in range(n)],
        "reclaim_floor": [round(0.02 * i, 3) for i in range(n)],
    }
    body = "\n".join(f"{k} = {v}" for k, v in grid.items())
    path = work / f"{name}.toml"
    path.write_text(
        f'[sweep]\nname = "{name}"\npolicy = "seed_a"\nmode = "grid"\nruns = "{runs}"\n'
        f'tokenizer = "{tokenizer}"\ncache = "auto"\n\n[fixed]\nwindow = 130000\nreserve = 24576\n\n'
        f"[grid]\n{body}\n"
    )
    return path


def writer_check(store: Path, work: Path, points: int = 100, batch: int = 32) -> None:
    """The single writer: insert ``points`` points of a finished sweep's rows into a fresh DuckDB file, a batch of
    points per transaction (as the runner commits), against writing each batch as a Parquet partition that DuckDB
    queries with read_parquet (one file per batch: no writer to share). Prints rows/s for both."""
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    src = duckdb.connect(str(store), read_only=True)
    ids = [
        r[0] for r in src.execute("SELECT DISTINCT point_id FROM sweep_results ORDER BY 1 LIMIT ?", [points]).fetchall()
    ]
    if not ids:
        print("writer: no sweep rows to measure")
        return
    rows = src.sql(
        "SELECT * FROM sweep_results WHERE point_id IN (SELECT unnest($ids))", params={"ids": ids}
    ).to_arrow_table()
    src.close()
    batches = [
        rows.filter(pc.is_in(rows["point_id"], value_set=pa.array(ids[i : i + batch])))
        for i in range(0, len(ids), batch)
    ]
    target, parts = work / "writer.duckdb", work / "writer-parquet"
    target.unlink(missing_ok=True)
    con = duckdb.connect(str(target))
    con.register("all_rows", rows)
    con.execute("CREATE TABLE r AS SELECT * FROM all_rows LIMIT 0")
    t0 = time.perf_counter()
    for b in batches:
        con.register("b", b)
        con.execute("BEGIN")
        con.execute("INSERT INTO r SELECT * FROM b")
        con.execute("COMMIT")
    duck = time.perf_counter() - t0
    parts.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    for k, b in enumerate(batches):
        con.register("b", b)
        con.execute(f"COPY (SELECT * FROM b) TO '{parts}/part-{k:05d}.parquet' (FORMAT parquet)")
    parq = time.perf_counter() - t0
    n = con.execute(f"SELECT count(*) FROM read_parquet('{parts}/*.parquet')").fetchone()[0]
    con.close()
    print(
        f"{'writer':>12}: {rows.num_rows:,} rows ({len(ids)} points x runs) into DuckDB {rows.num_rows / duck:,.0f} "
        f"rows/s ({len(ids) / duck:,.1f} points/s), as Parquet partitions {rows.num_rows / parq:,.0f} rows/s "
        f"({len(ids) / parq:,.1f} points/s; read back {n:,} rows)",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--points", type=int, default=1_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/replay-scale"))
    ap.add_argument("--source", type=Path, help="ingested real store to learn from (default: ingest the corpus)")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--tokenizer", default="o200k")
    ap.add_argument("--workers", type=int, default=2, help="sweep workers (pool) and Ray CPUs")
    ap.add_argument("--synth-workers", type=int, default=1)
    ap.add_argument(
        "--sweep-runs",
        default="%",
        help="LIKE pattern on run id or path: the sweeps' runs (e.g. '%%/000/%%', the first 1,000 synthetic runs)",
    )
    ap.add_argument("--stages", default="synth,ingest,compare,tokens,sweep-pool,sweep-ray,writer")
    ap.add_argument(
        "--tag",
        default="",
        help="appended to the sweep names: a rerun with another tag is a new "
        "sweep (the same name resumes, skipping every finished point)",
    )
    ap.add_argument("--reuse", action="store_true", help="skip synth when its output exists")
    ap.add_argument("--nice", type=int, default=10, help="niceness of every stage (a shared machine)")
    args = ap.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    source = args.source or work / "real.duckdb"
    if not source.exists():
        run_stage("real ingest", ["ingest", str(args.corpus), "--db", str(source)], work / "real-ingest.log", args.nice)
    corpus, store = work / f"synth-{args.runs}", work / f"synth-{args.runs}.duckdb"
    stages = args.stages.split(",")
    results = []
    print(
        f"scale run: {args.runs:,} runs, {args.points:,} points, {args.workers} workers, nice {args.nice}, work {work}",
        flush=True,
    )
    if "synth" in stages and not (args.reuse and corpus.exists()):
        results.append(
            run_stage(
                "synth",
                [
                    "synth",
                    "--from-db",
                    str(source),
                    "--runs",
                    str(args.runs),
                    "--out",
                    str(corpus),
                    "--seed",
                    "1",
                    "-t",
                    args.tokenizer,
                    "--workers",
                    str(args.synth_workers),
                ],
                work / "synth.log",
                args.nice,
            )
        )
        print(f"{'corpus':>12}: {size_mb(corpus):,.0f} MB in {corpus}", flush=True)
    if "ingest" in stages:
        results.append(run_stage("ingest", ["ingest", str(corpus), "--db", str(store)], work / "ingest.log", args.nice))
    if "compare" in stages:
        results.append(
            run_stage("compare", ["synth-compare", str(source), str(store)], work / "compare.log", args.nice)
        )
    if "tokens" in stages:
        results.append(
            run_stage("tokens", ["tokens", "-t", args.tokenizer, "--db", str(store)], work / "tokens.log", args.nice)
        )
    print(f"{'store':>12}: {size_mb(store):,.0f} MB ({store})", flush=True)
    for stage, executor in (("sweep-pool", "local"), ("sweep-ray", "ray")):
        if stage in stages:
            tag = ("" if args.sweep_runs == "%" else "-subset") + args.tag
            spec = sweep_file(
                work, f"scale-{executor}-{args.runs}-{args.points}{tag}", args.points, args.tokenizer, args.sweep_runs
            )
            results.append(
                run_stage(
                    stage,
                    [
                        "sweep",
                        str(spec),
                        "--db",
                        str(store),
                        "--executor",
                        executor,
                        "--workers",
                        str(args.workers),
                        "--out",
                        str(work / "sweeps"),
                        "--format",
                        "csv",
                    ],
                    work / f"{spec.stem}.log",
                    args.nice,
                )
            )
    print(f"{'store':>12}: {size_mb(store):,.0f} MB after sweeps; sweep Parquet {size_mb(work / 'sweeps'):,.0f} MB")
    if "writer" in stages:
        writer_check(store, work)
    walls = {r["stage"]: r["wall_s"] for r in results if r["exit"] == 0}  # a stopped or failed stage has no ratio
    if "sweep-pool" in walls and "sweep-ray" in walls:
        print(f"ray / pool wall time: {walls['sweep-ray'] / walls['sweep-pool']:.2f}x")


if __name__ == "__main__":
    main()
