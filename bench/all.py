"""Run B1, B2, B3, B4, B6 and B9 in turn with their defaults: ``uv run python -m bench.all``.

``--quick`` shortens the pgbench reference to 5 s; ``--no-record`` skips bench/results/;
``--deep`` also runs B5 (it bulk-loads a queue of 1,000,000 items first, which takes minutes);
``--fleet`` also runs B8 (2,000 agents for 5 minutes, about ten minutes in all); ``--cells``
also runs B11 (two cells against one, each with its own database), in its isolated mode (each
cell its own PostgreSQL server and CPU) when ``--isolated`` is given too.
Other flags are not forwarded: run a single benchmark module to change them.
"""

from __future__ import annotations

import sys
from typing import Any

from bench import (
    b1_throughput,
    b2_wake_latency,
    b3_recovery,
    b4_feed,
    b5_deep_queue,
    b6_reads,
    b8_fleet,
    b9_webhook,
    b11_cells,
)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    extra = list(sys.argv[1:] if argv is None else argv)
    quick = ["--pgbench-seconds", "5"] if "--quick" in extra else []
    record = ["--no-record"] if "--no-record" in extra else []
    results: dict[str, Any] = {}
    results["b1_throughput"] = b1_throughput.main([*quick, *record])
    results["b2_wake_latency"] = b2_wake_latency.main([*quick, *record])
    results["b3_recovery"] = b3_recovery.main([*quick, *record])
    results["b4_feed"] = b4_feed.main(record)
    if "--deep" in extra:
        results["b5_deep_queue"] = b5_deep_queue.main(record)
    results["b6_reads"] = b6_reads.main(record)
    results["b9_webhook"] = b9_webhook.main(record)
    if "--fleet" in extra:
        results["b8_fleet"] = b8_fleet.main(record)
    if "--cells" in extra:
        isolated = ["--isolated"] if "--isolated" in extra else []
        results["b11_cells"] = b11_cells.main([*record, *isolated])
    print("\nsummary (targets met):")
    for name, figures in results.items():
        print(f"  {name}: {figures['targets_met']}")
    return results


if __name__ == "__main__":
    main()
