"""Markdown tables from bench/results.json's structure."""

from __future__ import annotations

from typing import Any


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        f"sayso benchmarks ({r['mode']}, {r.get('duration_s')} s): {m['nproc']} cores, {m['cpu']}, "
        f"Python {m['python']}, SQLite {m['sqlite']}, PostgreSQL {m.get('postgresql')}",
        "",
    ]
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
