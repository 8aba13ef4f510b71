"""Growth of simulation time with run length, per built-in policy, through the sweep path (``point_frame``).

Synthetic canonical runs (replay.synth.long_run: one tool call and its result per request, results of 200-12,000
characters) of each size are simulated one run at a time under each policy's defaults. Printed per policy:
request-configurations/s at each size, the growth exponent of total time from the smallest to the largest size
(1.0 is linear), and the throughput as a ratio to ``full``'s on the largest size (and on a stored corpus with
--db), ``full`` timed alternately with the policy in the same rounds. Ratios and exponents are measured in one
process on one machine; absolute rates depend on its load.

    python benchmarks/bench_linear.py                       # 1,000 / 4,000 / 16,000 requests, every policy
    python benchmarks/bench_linear.py --db /tmp/y.duckdb    # plus the ratio to full over the stored corpus
    python benchmarks/bench_linear.py --sizes 50 200 --policy seed_a full
"""

from __future__ import annotations

import argparse
import math
import time

from replay.policies import registry
from replay.simulator.kernels.packed import PackedRuns, pack
from replay.sweeps.adapter import resolve
from replay.sweeps.point_rows import point_frame, warm_up
from replay.synth.long_run import long_run

SIZES = (1_000, 4_000, 16_000)


def best_times(packed: PackedRuns, policies: list[str], min_time: float, repeats: int = 3) -> list[float]:
    """Best time of one ``point_frame`` of each policy over ``packed``, after one call each not timed (prices and
    cache models looked up once). The policies are timed in turn, round after round (at least ``repeats`` rounds and
    ``min_time`` s per policy), so a ratio between them is measured under the same load. The time is this process's
    CPU time (the loop is single-threaded): on a shared, loaded machine wall time mostly measures the other
    processes."""
    points = [resolve(policy, {}, "auto") for policy in policies]
    for point in points:
        point_frame(packed, point)
    best, spent, n = [math.inf] * len(points), 0.0, 0
    while spent < min_time * len(points) or n < repeats:
        n += 1
        for i, point in enumerate(points):
            t0 = time.process_time()
            point_frame(packed, point)
            took = time.process_time() - t0
            best[i], spent = min(best[i], took), spent + took
    return best


def exponent(sizes: tuple[int, ...], times: list[float]) -> float:
    """Slope of log(time) against log(requests) between the smallest and the largest size."""
    return math.log(times[-1] / times[0]) / math.log(sizes[-1] / sizes[0])


def measure(
    policies: list[str], sizes: tuple[int, ...], min_time: float, db: str | None = None, repeats: int = 3
) -> dict[str, dict]:
    """Per policy: ``rate`` (request-configurations/s per size), ``exponent``, ``ratio`` (to full, largest size)
    and with ``db`` ``corpus_ratio`` (to full over the stored runs)."""
    packs = {n: pack([long_run(n)]) for n in sizes}
    corpus = None
    if db:
        from replay.simulator.load import load_runs
        from replay.store import open_store

        corpus = pack(load_runs(open_store(db, read_only=True)))
    names = ["full", *[p for p in policies if p != "full"]]
    out: dict[str, dict] = {}
    for policy in names:
        warm_up(policy)
        # each policy beside full, alternately: the x full ratios come from the same rounds
        pair = ["full"] if policy == "full" else ["full", policy]
        timed = [best_times(packs[n], pair, min_time, repeats) for n in sizes]
        times = [t[-1] for t in timed]
        row = {"rate": [n / t for n, t in zip(sizes, times, strict=True)], "exponent": exponent(sizes, times)}
        row["ratio"] = timed[-1][0] / timed[-1][-1]
        if corpus is not None:
            both = best_times(corpus, pair, min_time, repeats)
            row["corpus_rate"] = corpus.n_requests / both[-1]
            row["corpus_ratio"] = both[0] / both[-1]
        out[policy] = row
    return {p: out[p] for p in names if p in policies or p == "full"}


def table(results: dict[str, dict], sizes: tuple[int, ...]) -> str:
    """A markdown table of :func:`measure`'s results."""
    corpus = any("corpus_ratio" in r for r in results.values())
    head = ["policy", *(f"{n:,} req/s" for n in sizes), f"exponent {sizes[0]:,}->{sizes[-1]:,}", "x full"]
    head += ["x full (corpus)"] if corpus else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for policy, r in results.items():
        cells = [policy, *(f"{v:,.0f}" for v in r["rate"]), f"{r['exponent']:.2f}", f"{r['ratio']:.2f}"]
        cells += [f"{r['corpus_ratio']:.2f}"] if corpus else []
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="requests per run, ascending")
    ap.add_argument("--policy", nargs="+", default=None, help="built-in policies (default: every one)")
    ap.add_argument("--min-time", type=float, default=0.5, help="repeat each measurement for at least this long (s)")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per measurement at least (best is kept)")
    ap.add_argument("--db", default=None, help="a store to measure the ratio to full over its runs as well")
    args = ap.parse_args()
    sizes = tuple(args.sizes)
    policies = args.policy or list(registry())
    print(table(measure(policies, sizes, args.min_time, args.db, args.repeats), sizes))


if __name__ == "__main__":
    main()
