#!/usr/bin/env python3
"""SQLite's exception reads over span_details, with and without the partial
index span_details_exceptions (docs/BENCHMARKS.md, "Schema 8").

The generator gives a detail row only to spans with an exception; real spans
often carry events or a status message without one. This fills a synthetic
span_details (every row with an event, one in 33 with an exception), times the
exception reads' range query through span_details_time, then again with the
partial index, and prints each plan. Usage: bench/sqlite_span_details_index.py
[rows] (default 1000000); it writes a scratch database in a temporary
directory.
"""
import os
import random
import sqlite3
import sys
import tempfile
import time

HAS_EXCEPTION = "(exception_type IS NOT NULL OR exception_message IS NOT NULL)"  # schema::kSpanDetailHasException


def median_ms(db, sql, runs=5):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        db.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
    return sorted(times)[runs // 2] * 1000


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(os.path.join(tmp, "details.sqlite"))
        db.execute(
            "CREATE TABLE span_details (project_id INTEGER, trace_id_high INTEGER, trace_id_low INTEGER, "
            "span_id INTEGER, start_time_ns INTEGER, service_name TEXT, name TEXT, duration_ns INTEGER, "
            "trace_state TEXT, status_message TEXT, exception_type TEXT, exception_message TEXT, events TEXT, "
            "links TEXT, exception_group TEXT)")
        db.execute("CREATE INDEX span_details_trace ON span_details (project_id, trace_id_high, trace_id_low)")
        db.execute("CREATE INDEX span_details_time ON span_details (start_time_ns)")
        rng = random.Random(1)
        events = '[{"name":"message","attributes":{"k":"v"}}]'

        def row(i):
            exc = i % 33 == 0
            return (1, rng.getrandbits(62), rng.getrandbits(62), rng.getrandbits(62), i * 1000, f"svc{i % 10}",
                    f"op{i % 50}", 1000 + i % 977, None, "boom" if exc else None, "Err" if exc else None,
                    f"boom {i}" if exc else None, events, None, "boom <n>" if exc else None)

        db.executemany("INSERT INTO span_details VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (row(i) for i in range(rows)))
        db.commit()
        where = f"+project_id = 1 AND start_time_ns >= 0 AND start_time_ns < {rows * 1000} AND {HAS_EXCEPTION}"
        count = f"SELECT count(*) FROM (SELECT span_id, service_name, name, duration_ns FROM span_details WHERE {where})"
        page = (f"SELECT span_id, service_name, name, start_time_ns FROM span_details WHERE {where} "
                "AND exception_type = 'Err' ORDER BY start_time_ns DESC LIMIT 50")
        for label in ("span_details_time only", "with span_details_exceptions"):
            if label.startswith("with"):
                db.execute(f"CREATE INDEX span_details_exceptions ON span_details (start_time_ns) WHERE {HAS_EXCEPTION}")
                db.commit()
            plan = "; ".join(r[3] for r in db.execute("EXPLAIN QUERY PLAN " + count))
            print(f"{label}: count {median_ms(db, count):.1f} ms, newest page {median_ms(db, page):.1f} ms  [{plan}]")


if __name__ == "__main__":
    main()
