"""Markdown tables from bench/results.json's structure."""

from __future__ import annotations

from typing import Any


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(r: dict[str, Any]) -> str:
    """Every scenario of a bench/run.py result, each under its heading."""
    m = r["machine"]
    load = [round(x, 2) for x in m.get("loadavg_at_start", [])]
    load_end = [round(x, 2) for x in m.get("loadavg_at_end", [])]
    lines = [
        f"sayso benchmarks ({r['mode']}, {r.get('duration_s')} s, commit {r.get('commit')}, "
        f"`{r.get('command')}`): {m['nproc']} cores, {m['cpu']}, Python {m['python']}, "
        f"SQLite {m['sqlite']}, PostgreSQL {m.get('postgresql')}; load average {load} at "
        f"start, {load_end} at end",
    ]
    found = dict(r.get("scenarios", {}))
    for name, result in list(found.items()):
        if isinstance(result, dict) and "error" in result:
            lines += ["", f"## {name}: FAILED", "", f"`{result['error'][:500]}`"]
            del found[name]
    if "main" in found:
        lines += ["", "## Main tables", "", markdown_main(found["main"])]
    if "issue13" in found:
        lines += ["", "## Issue 13", "", markdown_issue13(found["issue13"])]
    for database, result in found.get("decision_cpu", {}).items():
        import decision_cpu

        lines += ["", f"## Decision CPU ({database})", "", decision_cpu.report(result)]
    if "api" in found:
        lines += ["", "## The approval API", "", markdown_api(found["api"])]
    if "memory" in found:
        import memory

        lines += ["", "## Memory per paused run", "", memory.report(found["memory"])]
    if "outbox" in found:
        o = found["outbox"]
        lines += [
            "",
            "## The outbox (`bench/outbox.py`)",
            "",
            f"{o['decisions']} decisions, {o['replicas']} dispatcher(s): "
            f"{o['burst_calls_per_decision']} Slack calls per decision, "
            f"{o['burst_429s_per_100_decisions']} 429s per 100 decisions, burst converged "
            f"in {o['burst_converged_seconds']} s; after a {o.get('outage_seconds', 0)} s "
            f"outage, converged {o.get('outage_converged_seconds_after')} s after it; "
            f"{o['duplicates']} duplicates",
        ]
    return "\n".join(lines)


def markdown_api(results: dict[str, Any]) -> str:
    head = [
        "database",
        "c",
        "tasks",
        "create p50 / p99",
        "decision → waiter p50 / p99",
        "decision → webhook p50 / p99",
        "tasks/s",
        "failures",
        "memory / pending request",
        "targets met",
    ]
    lines = [_row(head), _row(["---"] * len(head))]
    for database, a in results.items():
        met = [name for name, t in a["targets"].items() if t["met"]]
        missed = [name for name, t in a["targets"].items() if not t["met"]]
        lines.append(
            _row(
                [
                    database,
                    a["concurrency"],
                    a["tasks"],
                    f"{a['create_ms']['p50']} / {a['create_ms']['p99']} ms",
                    f"{a['decision_to_waiter_ms']['p50']} / {a['decision_to_waiter_ms']['p99']} ms",
                    f"{a['decision_to_webhook_ms']['p50']} / "
                    f"{a['decision_to_webhook_ms']['p99']} ms",
                    a["tasks_per_s"],
                    a["failures"],
                    f"{a['memory_per_pending_request_kb']} KiB",
                    f"{len(met)}/{len(met) + len(missed)}"
                    + (f" (missed: {', '.join(missed)})" if missed else ""),
                ]
            )
        )
    return "\n".join(lines)


def markdown_main(r: dict[str, Any]) -> str:
    """The main tables (ack, click → tool, decisions, memory, inbox)."""
    lines: list[str] = []
    head = [
        "c",
        "kind",
        "bot p50",
        "bot p99",
        "bot max",
        "bot rps",
        "floor p50",
        "floor p99",
        "floor max",
        "floor rps",
        "p99 ratio",
        ">3s",
        "errors",
    ]
    lines += [_row(head), _row(["---"] * len(head))]
    levels = {c: v for c, v in r.get("ack", {}).items() if c != "isolated"}
    for c, level in levels.items():
        for kind in ("slash", "approve"):
            b, f = level[kind]["bot"], level[kind]["floor"]
            lines.append(
                _row(
                    [
                        c,
                        kind,
                        b["p50_ms"],
                        b["p99_ms"],
                        b["max_ms"],
                        b["rps"],
                        f["p50_ms"],
                        f["p99_ms"],
                        f["max_ms"],
                        f["rps"],
                        level[kind]["p99_ratio"],
                        b["over_3s"],
                        b["errors"],
                    ]
                )
            )
    lines += [
        "",
        _row(["c", "click→tool p50 ms", "click→tool p99 ms", "max ms"]),
        _row(["---"] * 4),
    ]
    iso = r.get("ack", {}).get("isolated")
    if iso:
        lines.append(
            _row(["1 (one click at a time, bot idle)", iso["p50_ms"], iso["p99_ms"], iso["max_ms"]])
        )
    for c, level in levels.items():
        s = level["click_to_side_effect"]
        lines.append(_row([c, s["p50_ms"], s["p99_ms"], s["max_ms"]]))
    lines += [
        "",
        _row(
            [
                "database",
                "decisions",
                "decisions/s",
                "completed runs/s",
                "click→tool p50 ms",
                "click ack p99 ms",
                "bot CPU ms/decision",
            ]
        ),
        _row(["---"] * 7),
    ]
    for name in ("sqlite", "postgres"):
        d = r.get(f"decisions_{name}")
        if d:
            lines.append(
                _row(
                    [
                        name,
                        d["decisions"],
                        d["decisions_per_s"],
                        d["completed_runs_per_s"],
                        d["click_to_side_effect"]["p50_ms"],
                        d["ack"]["p99_ms"],
                        d["bot_cpu_ms_per_decision"],
                    ]
                )
            )
    mem = r.get("memory")
    if mem:
        lines += [
            "",
            _row(["paused runs", "RSS at 0 (MB)", "RSS with them (MB)", "growth (MB)"]),
            _row(["---"] * 4),
            _row(
                [
                    mem["paused_runs"],
                    mem["rss_0_paused_mb"],
                    mem["rss_with_paused_mb"],
                    mem["growth_mb"],
                ]
            ),
        ]
    lines += [
        "",
        _row(["inbox database", "requests", "pending", "visible", "p50 ms", "p99 ms", "mean ms"]),
        _row(["---"] * 7),
    ]
    for name, i in r.get("inbox", {}).items():
        lines.append(
            _row(
                [
                    name,
                    i["requests"],
                    i["pending_share"],
                    i["visible_total"],
                    i["p50_ms"],
                    i["p99_ms"],
                    i["mean_ms"],
                ]
            )
        )
    return "\n".join(lines)


def _pm(s: dict[str, Any] | None) -> str:
    """p50 / max in ms, as "p50 / max"."""
    if not s or s.get("p50_ms") is None:
        return "n/a"
    return f"{s['p50_ms']:g} / {s['max_ms']:g}"


def markdown_issue13(res: dict[str, Any]) -> str:
    """Issue 13's tables (bench/run.py --issue13)."""
    lines: list[str] = []
    head = [
        "setup",
        "runs",
        "command → root p50 / max",
        "command → card p50 / max",
        "slowest card ÷ latency",
        "approval → tool p50 / max",
        "approval → answer p50 / max",
        "bot CPU ms/run",
        "errors",
    ]
    lines += [_row(head), _row(["---"] * len(head))]
    for name, v in res.items():
        if not name.startswith("model latency"):
            continue
        for s in (v["people"], v["many"]):
            lines.append(
                _row(
                    [
                        f"{name.split(': ', 1)[1]}, model {s['model_latency_s']:g} s",
                        s["runs"],
                        _pm(s["to_root"]),
                        _pm(s["to_card"]),
                        s["to_card"].get("max_x_latency"),
                        _pm(s["approval_to_tool"]),
                        _pm(s["approval_to_answer"]),
                        s["bot_cpu_ms_per_run"],
                        s["errors"],
                    ]
                )
            )
    head = [
        "setup",
        "burst",
        "new command → root, during the burst p50 / max",
        "after the burst's roots p50 / max",
        "burst's roots up after (s)",
        "burst runs in flight (ack phase)",
        "ack p99 bot / floor (ms)",
        "p99 ratio",
        "p50 ratio",
    ]
    lines += ["", _row(head), _row(["---"] * len(head))]
    for name, b in res.items():
        if not name.startswith("backlog"):
            continue
        a = b["ack_at_50"]
        lines.append(
            _row(
                [
                    name.split(": ", 1)[1],
                    b["burst"],
                    _pm(b["new_command_to_root_during_burst"]),
                    _pm(b["new_command_to_root_after_burst"]),
                    b["burst_roots_posted_after_s"],
                    " → ".join(str(n) for n in b["burst_runs_in_flight"]),
                    f"{a['bot']['p99_ms']:g} / {a['floor']['p99_ms']:g}",
                    a["p99_ratio"],
                    a["p50_ratio"],
                ]
            )
        )
    head = [
        "setup",
        "decisions",
        "decisions/s",
        "per worker process",
        "completed runs/s",
        "click ack p99 ms",
        "bot CPU ms/decision",
        "by process",
    ]
    lines += ["", _row(head), _row(["---"] * len(head))]
    for name, d in res.items():
        if not name.startswith("decisions"):
            continue
        workers = max(1, d["processes"] - 1)
        by = ", ".join(
            f"{k.rsplit('_', 1)[-1]} {v:g}" for k, v in d["cpu_ms_per_decision_by_process"].items()
        )
        lines.append(
            _row(
                [
                    name.split(": ", 1)[1],
                    d["decisions"],
                    d["decisions_per_s"],
                    round(d["decisions_per_s"] / workers, 1),
                    d["completed_runs_per_s"],
                    d["ack"]["p99_ms"],
                    d["bot_cpu_ms_per_decision"],
                    by,
                ]
            )
        )
    for name, d in res.items():
        calls = d.get("slack_calls_per_decision") if isinstance(d, dict) else None
        if name.startswith("decisions") and calls:
            listed = ", ".join(f"{m} {n:g}" for m, n in calls.items())
            lines += ["", f"Slack calls per decision ({name.split(': ', 1)[1]}): {listed}"]
    iso = {k: v for k, v in res.items() if k.startswith("isolated")}
    for name, v in iso.items():
        lines += [
            "",
            f"{name}: click → tool body p50 {v['p50_ms']} ms, p99 {v['p99_ms']} ms, "
            f"max {v['max_ms']} ms ({v['clicks']} clicks, one at a time, bot idle)",
        ]
    return "\n".join(lines)
