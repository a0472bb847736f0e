"""The cluster report: every module's records gathered into one verdict, as JSON and self-contained HTML.

Pure functions: `build` turns the registered module results into the report data, `render_html`
turns that into one HTML page with inline CSS and SVG (no scripts, no external assets).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils import baseline as bl
from ansible_collections.gpulab.cluster.plugins.module_utils import cost
from ansible_collections.gpulab.cluster.plugins.module_utils.checks import NOT_APPLICABLE, SEVERITY, STATUSES

NODE_SECTIONS = ("gpu", "slurm", "rdma", "nccl", "network", "host")
CLUSTER_SECTIONS = ("consistency", "scheduler", "ceph", "ray", "nccl_across", "collective", "training")
TITLES = {
    "gpu": "GPU health",
    "slurm": "Slurm",
    "rdma": "RDMA",
    "nccl": "NCCL (in node)",
    "network": "Network",
    "host": "Clock, links and power",
    "consistency": "Versions",
    "scheduler": "Slurm scheduler",
    "ceph": "Ceph",
    "ray": "Ray",
    "nccl_across": "NCCL (across nodes)",
    "collective": "Collectives and scaling",
    "training": "Training smoke benchmark",
    "baseline": "Changed since the baseline",
}
# Shown next to each failure: where to look next, by section.
NEXT_STEPS = {
    "gpu": "Run `nvidia-smi -q` on the node and compare with a healthy one; ECC, row-remap and XID faults "
    "mean draining the node, then a GPU reset or an RMA.",
    "slurm": "On the node: `systemctl status slurmd munge`, `journalctl -u slurmd`; on the controller: "
    "`scontrol show node NODE`. Rerun `--tags slurm` to put the cluster's munge key and slurm.conf back.",
    "rdma": "Check `rdma link` and `ibv_devinfo`, the cable and the switch port; rerun `--tags rdma`.",
    "nccl": "Rerun nccl-tests with NCCL_DEBUG=INFO and check /etc/nccl.conf (NCCL_SOCKET_IFNAME, NCCL_IB_HCA).",
    "network": "Check the MTU on both hosts and every switch port, `ethtool` link speed and NIC counters; "
    "rerun `--tags network`.",
    "host": "Clock: `chronyc tracking` and `chronyc sources -v` on the node, then on the management node it "
    "follows. MTU: `ip link` on the node against the plan; rerun `--tags network`. UPS: `upsc ups@127.0.0.1` on "
    "the UPS host.",
    "consistency": "Bring the odd node to the pinned version with a tagged run, e.g. "
    "`--tags nvidia_driver --limit NODE`.",
    "scheduler": "On the controller: `scontrol show config | grep -i preempt`, `sacctmgr show qos`; rerun "
    "`--tags slurm` to write slurm.conf and the QOS tiers again.",
    "ceph": "On a monitor host: `ceph health detail`, `ceph osd tree`; on the storage node: "
    "`systemctl status ceph-osd@N`, `journalctl -u ceph-osd@N`.",
    "ray": "On the head: `systemctl status gpulab-ray-head`, `ray status`; on a missing worker: `systemctl status "
    "gpulab-ray-worker`, `journalctl -u gpulab-ray-worker` (a version refused by gpulab-ray-check is named there); "
    "rerun `--tags ray`.",
    "nccl_across": "Compare each node's own nccl-tests run and the network matrix: one slow node or link slows "
    "the whole ring.",
    "collective": "Compare with the network matrix above: a slow pair slows every collective. Rerun validate.yml "
    "with `--skip-tags validate_network` to leave out iperf3.",
    "training": "Run the job by hand and read its output: `GPULAB_DEBUG=1 gpulab-sbatch ddp -N 2 --wait -- "
    "/opt/gpulab/jobs/train_digits.py --stop-at-target`; a rank that never starts points at the rendezvous.",
    "baseline": "Open the baseline's report beside this one (same check, same node). A change that was meant "
    "(a new driver, a new switch) becomes the baseline with `-e doctor_accept=true`.",
    "node": "The node returned no results: check that Ansible can reach it (`ansible NODE -m ping`).",
}
VERDICTS = {
    "pass": "Healthy",
    "pass_partial": "Healthy where it could be checked",
    "unavailable": "Healthy (some checks could not run)",
    "warn": "Degraded: see the warnings",
    "fail": "Failing: see what failed",
}
# Sections that a skipped task leaves behind, sections never run, and checks that do not apply
# to the hardware (n/a) are not judged.
NOT_JUDGED = ("skipped", "not run", NOT_APPLICABLE)


def worst(statuses: list[str], default: str = "pass") -> str:
    """The worst judged status; unavailable only when nothing could be judged."""
    judged = [s for s in statuses if s not in ("unavailable", *NOT_JUDGED)]
    if judged:
        return max(judged, key=SEVERITY.__getitem__)
    return "unavailable" if "unavailable" in statuses else default


def section(result: Any) -> dict[str, Any]:
    """One registered module result -> {status, checks, note}."""
    if not isinstance(result, dict) or not result:
        return {"status": "not run", "checks": [], "note": "not run"}
    if result.get("skipped"):
        return {"status": "skipped", "checks": [], "note": "not applicable to this node"}
    checks = list(result.get("checks") or [])
    if not checks and result.get("role") == "worker":
        return {"status": "skipped", "checks": [], "note": "worker rank: results are on the first node"}
    # A module that stopped with an error returns no checks key; registered under failed_when: false
    # it no longer says failed, so the missing key is what tells.
    if not checks and (result.get("failed") or "checks" not in result):
        message = f"the check could not complete: {result.get('msg', 'no message')}"
        checks = [{"check": "error", "status": "fail", "message": message, "code": "CHECK_ERROR"}]
    # A check that ran and judged nothing proved nothing: never a quiet pass.
    if not checks:
        message = f"the check ran but returned no records ({result.get('msg') or 'no message'})"
        checks = [{"check": "no_records", "status": "fail", "message": message, "code": "NO_CHECKS"}]
    return {"status": worst([c["status"] for c in checks]), "checks": checks, "note": ""}


def _matrix(nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    matrix: dict[str, dict[str, float | None]] = {}
    for host, results in nodes.items():
        for row in (results.get("network") or {}).get("results") or []:
            matrix.setdefault(host, {})[row["name"]] = row.get("received_gbps")
    return matrix


def _gpu_records(node: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A node's GPU records for the cost estimate; None where nothing is known (not reached, not run)."""
    gpu = node["sections"]["gpu"]
    return None if "node" in node["sections"] or gpu["status"] == "not run" else gpu["checks"]


def _unreachable() -> dict[str, Any]:
    """The node section of a node that gave no results."""
    message = "no results from this node: unreachable, or a task failed before the checks"
    return {"status": "fail", "note": "", "checks": [{"check": "reachable", "status": "fail", "message": message}]}


def _node(results: dict[str, Any] | None) -> dict[str, Any]:
    """One node's sections and status from its registered results; a node not reached fails."""
    results = results or {}
    sections = {name: section(results.get(name)) for name in NODE_SECTIONS}
    judged = [s["status"] for s in sections.values()]
    if not results.get("reached", True):
        sections["node"] = _unreachable()
        judged.append("fail")
    return {"status": worst(judged), "sections": sections}


def _failures(where: str, sections: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The failing and warning records of some sections, each with where it is and what to do next."""
    return [
        {"node": where, "section": name, **c, "next": NEXT_STEPS[name]}
        for name, sec in sections.items()
        for c in sec["checks"]
        if c["status"] in ("fail", "warn")
    ]


def _expected_busbw(cluster: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> float | None:
    """The bus bandwidth the plan's link carries, drawn on the chart (the first module that said)."""
    said = [cluster.get("nccl_across"), cluster.get("collective"), *((n or {}).get("nccl") for n in nodes.values())]
    return next((r["expected_busbw"] for r in said if isinstance(r, dict) and r.get("expected_busbw")), None)


def build(
    nodes: dict[str, dict[str, Any]],
    cluster: dict[str, Any],
    generated: str,
    title: str = "gpulab cluster report",
    cost_settings: dict[str, Any] | None = None,
    baseline: Baseline | None = None,
) -> dict[str, Any]:
    """nodes: host -> {gpu, rdma, nccl, network: registered results, versions}; cluster: {consistency,
    collective, ...}; cost_settings: cost.SETTINGS, or None for no cost section; baseline: compare with it."""
    report_nodes = {host: _node(nodes[host]) for host in sorted(nodes)}
    cluster_sections = {name: section(cluster.get(name)) for name in CLUSTER_SECTIONS}
    versions = {host: (nodes[host] or {}).get("versions") for host in sorted(nodes)}
    changed_since = None
    if baseline is not None:
        changed_since = baseline.compare({"nodes": report_nodes, "cluster": cluster_sections, "versions": versions})
        cluster_sections["baseline"] = section(changed_since)
    failures = [f for host, node in report_nodes.items() for f in _failures(host, node["sections"])]
    failures += _failures("cluster", cluster_sections)
    statuses = [node["status"] for node in report_nodes.values()] + [s["status"] for s in cluster_sections.values()]
    verdict = worst(statuses, default="unavailable")
    failures.sort(key=lambda f: (-SEVERITY[f["status"]], f["node"], f["section"]))
    collective = cluster.get("collective") or {}
    counts = dict.fromkeys(STATUSES, 0)
    for sec in [*cluster_sections.values(), *(s for n in report_nodes.values() for s in n["sections"].values())]:
        for c in sec["checks"]:
            counts[c["status"]] += 1
    node_problems = {}
    for f in failures:
        if f["status"] == "fail" and f["node"] != "cluster":
            node_problems.setdefault(f["node"], f"{f['check']}: {f['message']}")
    gpu_records = {host: _gpu_records(node) for host, node in report_nodes.items()}
    return {
        "title": title,
        "node_problems": node_problems,
        "generated": generated,
        "verdict": verdict,
        "verdict_text": VERDICTS["pass_partial" if verdict == "pass" and counts["unavailable"] else verdict],
        "counts": counts,
        "failures": failures,
        "nodes": report_nodes,
        "cluster": cluster_sections,
        "network_matrix": _matrix(nodes),
        "network_min_gbps": next(
            (r["network"].get("min_gbps") for r in nodes.values() if (r or {}).get("network", {}).get("min_gbps")),
            None,
        ),
        "collective": {"result": collective.get("result"), "efficiency": collective.get("efficiency")},
        "nccl": {host: (r.get("nccl") or {}).get("result") for host, r in nodes.items() if (r or {}).get("nccl")},
        "nccl_across": (cluster.get("nccl_across") or {}).get("result"),
        "training": (cluster.get("training") or {}).get("runs") or {},
        "cost": cost.estimate(gpu_records, cost_settings) if cost_settings else None,
        "expected_busbw": _expected_busbw(cluster, nodes),
        "versions": versions,
        "changed_since": changed_since,
    }


@dataclass(frozen=True)
class Baseline:
    """The report a run is compared with (None: none stored yet at path) and the tolerances."""

    path: str
    report: dict[str, Any] | None
    tolerances: dict[str, float] = field(default_factory=dict)

    def compare(self, current: dict[str, Any]) -> dict[str, Any]:
        if self.report is None:
            return {**bl.no_baseline(self.path), "path": self.path, "series": {}}
        series = {f"{name}, baseline": points for name, points in _busbw_series(self.report).items()}
        return {**bl.compare(self.report, current, self.tolerances), "path": self.path, "series": series}


# ---------------------------------------------------------------- HTML

COLOURS = {
    "pass": "#1a7f37",
    "warn": "#b35900",
    "fail": "#c62828",
    "unavailable": "#6e7781",
    NOT_APPLICABLE: "#afb8c1",
    "skipped": "#afb8c1",
    "not run": "#afb8c1",
}
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.muted{color:#59636e}
.verdict{border-radius:10px;padding:18px 22px;color:#fff;margin:16px 0}
.verdict b{font-size:26px;display:block}
.reasons{margin:8px 0 0;padding-left:20px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:14px 18px;margin:10px 0}
table{border-collapse:collapse;width:100%} th,td{padding:6px 8px;text-align:left;border-bottom:1px solid #eaeef2}
th{font-weight:600;background:#f6f8fa}
.pill{display:inline-block;border-radius:10px;padding:1px 9px;color:#fff;font-size:12px;font-weight:600}
.heat td{text-align:center;font-variant-numeric:tabular-nums;border:2px solid #fff}
code{background:#eff1f3;border-radius:4px;padding:0 4px}
details summary{cursor:pointer}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pill(status: str) -> str:
    return f'<span class="pill" style="background:{COLOURS.get(status, "#6e7781")}">{_e(status)}</span>'


def _code(text: str) -> str:
    """Markdown-style `code` spans in hint texts."""
    parts = _e(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _fmt_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:g} {unit}"
        size /= 1024
    return f"{size:g} TiB"


def line_chart(
    series: dict[str, list[tuple[float, float]]],
    x_label: str,
    y_label: str,
    reference: tuple[float, str] | None = None,
) -> str:
    """SVG line chart, log2 x axis (message sizes), linear y from 0; reference: (y, label), a dashed line."""
    points = [p for pts in series.values() for p in pts if p[0] > 0]
    if not points:
        return '<p class="muted">No measurements to plot.</p>'
    width, height, left, bottom, top, right = 720, 300, 64, 44, 16, 36
    xs = [math.log2(p[0]) for p in points]
    x_min, x_max = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y_max = max([p[1] for p in points] + [reference[0] if reference else 0]) * 1.1 or 1.0

    def sx(x: float) -> float:
        return left + (math.log2(x) - x_min) / (x_max - x_min) * (width - left - right)

    def sy(y: float) -> float:
        return top + (1 - y / y_max) * (height - top - bottom)

    legend: list[str] = []
    palette = ["#0969da", "#8250df", "#1a7f37", "#bf3989", "#b35900", "#0a3069"]
    out = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{_e(y_label)}">']
    for i in range(5):
        y = y_max * i / 4
        out.append(
            f'<line x1="{left}" x2="{width - right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#eaeef2"/>'
            f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="11" text-anchor="end">{y:.3g}</text>'
        )
    for x in sorted({p[0] for p in points}):
        out.append(
            f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" font-size="11" text-anchor="middle">'
            f"{_e(_fmt_bytes(x))}</text>"
        )
    out.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 6}" font-size="12" text-anchor="middle">'
        f"{_e(x_label)}</text>"
        f'<text x="14" y="{(top + height - bottom) / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {(top + height - bottom) / 2})">{_e(y_label)}</text>'
    )
    if reference:
        y = sy(reference[0])
        out.append(
            f'<line class="expected" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#c62828" '
            f'stroke-width="1.5" stroke-dasharray="6 4"/><text x="{width - right}" y="{y - 5:.1f}" font-size="11" '
            f'text-anchor="end" fill="#c62828">{_e(reference[1])}</text>'
        )
    for i, (name, pts) in enumerate(series.items()):
        colour = palette[i % len(palette)]
        pts = sorted(p for p in pts if p[0] > 0)
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2.5" points="{path}"/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{colour}"/>' for x, y in pts]
        legend.append(f'<span style="color:{colour}">&#9632;</span> {_e(name)}')
    out.append("</svg>")
    return "".join(out) + f"<p class='legend'>{' &nbsp; '.join(legend)}</p>"


def _heat_colour(value: float | None, threshold: float | None, best: float) -> str:
    if value is None:
        return "#c62828"
    if threshold is not None and value < threshold:
        return "#f4a3a3"
    share = value / best if best else 1.0
    # Light to strong green as a pair approaches the best pair.
    light = int(92 - 42 * share)
    return f"hsl(140,55%,{light}%)"


def heat_map(matrix: dict[str, dict[str, float | None]], threshold: float | None) -> str:
    if not matrix:
        return '<p class="muted">No bandwidth measured (skipped, or check mode).</p>'
    hosts = sorted(set(matrix) | {d for row in matrix.values() for d in row})
    best = max((v for row in matrix.values() for v in row.values() if v), default=0.0)
    rows = ["<table class='heat'><tr><th>from \\ to</th>" + "".join(f"<th>{_e(h)}</th>" for h in hosts) + "</tr>"]
    for src in hosts:
        cells = []
        for dst in hosts:
            if src == dst:
                cells.append('<td style="background:#eaeef2">-</td>')
            elif dst not in matrix.get(src, {}):
                cells.append('<td style="background:#f6f8fa" class="muted">n/a</td>')
            else:
                value = matrix[src][dst]
                label = "failed" if value is None else f"{value:.1f}"
                colour = _heat_colour(value, threshold, best)
                cells.append(f'<td style="background:{colour}" title="{_e(src)} to {_e(dst)}">{label}</td>')
        rows.append(f"<tr><th>{_e(src)}</th>{''.join(cells)}</tr>")
    rows.append("</table>")
    note = f"Gbit/s, TCP (iperf3). Pass mark {threshold:g} Gbit/s." if threshold else "Gbit/s, TCP (iperf3)."
    return "".join(rows) + f'<p class="muted">{_e(note)} Red: below the pass mark or failed.</p>'


def efficiency_bar(
    efficiency: float | None,
    ddp: dict[str, Any] | None,
    healthy: float,
    acceptable: float,
    weak: float | None = None,
) -> str:
    """The strong-scaling figure against the bands; weak: the scaling_weak record's value, if any."""
    if efficiency is None or not ddp:
        return '<p class="muted">Scaling not measured (skipped, check mode, or one worker).</p>'
    width, height, pad = 720, 70, 28
    span = width - 2 * pad

    def sx(v: float) -> float:
        return pad + max(0.0, min(v, 1.0)) * span

    bands = [(0, acceptable, "#f4a3a3"), (acceptable, healthy, "#ffd8a8"), (healthy, 1.0, "#b7e4c7")]
    out = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="scaling efficiency">']
    for lo, hi, colour in bands:
        out.append(f'<rect x="{sx(lo):.1f}" y="10" width="{sx(hi) - sx(lo):.1f}" height="26" fill="{colour}"/>')
    for tick in (0, acceptable, healthy, 1.0):
        out.append(f'<text x="{sx(tick):.1f}" y="52" font-size="11" text-anchor="middle">{tick:.0%}</text>')
    out.append(
        f'<line x1="{sx(efficiency):.1f}" x2="{sx(efficiency):.1f}" y1="4" y2="42" stroke="#1f2328" stroke-width="3"/>'
        f'<text x="{sx(efficiency):.1f}" y="66" font-size="12" font-weight="700" text-anchor="middle">'
        f"{efficiency:.0%}</text></svg>"
    )
    out.append(
        f"<p>Strong scaling: T1 = {_e(ddp.get('step_time_1_ms'))} ms on 1 worker, "
        f"T{_e(ddp.get('workers'))} = {_e(ddp.get('step_time_n_ms'))} ms on {_e(ddp.get('workers'))} workers, "
        f"global batch {_e(ddp.get('global_batch'))}; efficiency = T1 / (N &times; TN). "
        f"Above {healthy:.0%}: healthy; {acceptable:.0%}-{healthy:.0%}: look at the network; "
        f"below {acceptable:.0%}: look at I/O and synchronisation.</p>"
    )
    if weak is not None:
        out.append(
            f"<p>Weak scaling (information): each of {_e(ddp.get('workers'))} workers on batch "
            f"{_e(ddp.get('global_batch'))}, TW = {_e(ddp['step_time_weak_ms'])} ms; T1 / TW = {weak:.0%}. "
            f"The batch was sized so that one worker's step takes at least {_e(ddp.get('min_step_ms'))} ms "
            f"({_e(ddp.get('depth'))} x {_e(ddp.get('width'))} model, {_e(ddp.get('gradient_bytes'))} gradient bytes "
            "per step).</p>"
        )
    return "".join(out)


def _busbw_series(report: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    series = {}
    result = (report.get("collective") or {}).get("result") or {}
    if result.get("allreduce"):
        name = f"torch {result.get('backend')} all-reduce, {result.get('world_size')} workers"
        series[name] = [(r["bytes"], r["busbw_gbs"]) for r in result["allreduce"]]
    # Rows as NcclResult.as_dict writes them: busbw is the better of out-of-place and in-place.
    runs = [(f"in {host}", nccl) for host, nccl in sorted((report.get("nccl") or {}).items())]
    across = report.get("nccl_across") or {}
    if across:
        runs.append((f"across {', '.join(sorted(set(across.get('hosts') or []))) or 'nodes'}", across))
    for where, nccl in runs:
        points = [(row["size"], row["busbw"]) for row in (nccl or {}).get("rows") or []]
        if points:
            series[f"nccl-tests {nccl.get('collective') or ''} {where}".replace("  ", " ")] = points
    return series


def _banner_reasons(failures: list[dict[str, Any]], shown: int = 8) -> str:
    """The failing and warning records, one line each, for the verdict banner."""
    if not failures:
        return ""
    items = [f"<li>{_e(f['node'])} &middot; {_e(f['check'])}: {_e(f['message'])}</li>" for f in failures[:shown]]
    if len(failures) > shown:
        items.append(f"<li>and {len(failures) - shown} more below</li>")
    return f"<ul class='reasons'>{''.join(items)}</ul>"


def _money(value: float | None, currency: str) -> str:
    return "-" if value is None else f"{value:,.2f} {_e(currency)}"


def cost_table(estimate: dict[str, Any] | None) -> str:
    """The cost section: every input, each node's power, the yearly energy and the 3-year comparison."""
    if not estimate:
        return "<p>Not estimated: set <code>validation_cost</code> (electricity price, base load, prices).</p>"
    s, t = estimate["settings"], estimate["totals"]
    cur = s["currency"]
    shown = {key: f"{value:g}" if isinstance(value, float) else value for key, value in s.items()}
    rows = [f"<tr><td>{_e(cost.SETTINGS[key])}</td><td>{_e(shown[key])}</td></tr>" for key in cost.SETTINGS]
    parts = ["<table id='cost-inputs'><tr><th>Input</th><th>Value</th></tr>", *rows, "</table>"]
    used = estimate.get("utilization") or {"value": s["utilization"], "measured": False}
    source = (
        "measured: the GPUs' mean utilization in Prometheus"
        if used["measured"]
        else "the input above: Prometheus had no GPU utilization to measure it by"
    )
    parts.append(f"<p id='cost-utilization'>Utilization used: {used['value']:g} ({_e(source)}).</p>")
    parts.append(
        "<table id='cost-nodes' style='margin-top:14px'><tr><th>Node</th><th>GPUs read</th>"
        "<th>GPU draw when validated (W)</th><th>GPU power limits (W)</th><th>Average draw (W)</th></tr>"
    )
    for host, p in estimate["nodes"].items():
        average = "not measured" if p["average_w"] is None else f"{p['average_w']:g}"
        parts.append(
            f"<tr><td>{_e(host)}</td><td>{p['gpus']}</td><td>{p['draw_w']:g}</td><td>{p['limit_w']:g}</td>"
            f"<td>{_e(average)}</td></tr>"
        )
    parts.append(
        "</table><p class='muted'>Average draw = base load + utilization &times; GPU power limits "
        "+ (1 &minus; utilization) &times; GPU draw when validated (a training GPU runs at its limit).</p>"
    )
    if estimate["not_measured"]:
        parts.append(
            "<p id='cost-missing'><b>Incomplete:</b> no GPU power reading from "
            f"{_e(', '.join(estimate['not_measured']))}; the sums below leave those nodes out.</p>"
        )
    years = shown["years"]
    parts.append(
        "<table id='cost-totals' style='margin-top:8px'>"
        f"<tr><td>Average draw of the cluster</td><td>{t['average_w']:g} W</td></tr>"
        f"<tr><td>Energy per year</td><td>{t['kwh_per_year']:,.1f} kWh = {_money(t['energy_per_year'], cur)}</td></tr>"
        f"<tr><td>Home lab over {_e(years)} years (hardware + energy)</td><td>{_money(t['homelab'], cur)}</td></tr>"
        f"<tr><td>Cloud over {_e(years)} years ({t['gpus']} GPUs, {t['gpu_hours']:,} GPU-hours)</td>"
        f"<td>{_money(t['cloud'], cur)}</td></tr>"
        f"<tr><td>Home lab per GPU-hour used</td><td>{_money(t['homelab_per_gpu_hour'], cur)}</td></tr></table>"
    )
    return "".join(parts)


def smoke_table(runs: dict[str, dict[str, Any]], target_note: str) -> str:
    """The training smoke benchmark's runs, one row per node count."""
    if not runs:
        return "<p class='muted'>Not run (it runs as Slurm jobs once the training role is applied).</p>"
    rows = [
        "<table><tr><th>Nodes</th><th>Ranks</th><th>Target reached</th><th>Epochs</th>"
        "<th>Seconds to target</th><th>Samples/s</th><th>Ran on</th></tr>"
    ]
    for count in sorted(runs, key=int):
        r = runs[count]
        seconds = "" if r.get("seconds_to_target") is None else f"{r['seconds_to_target']:.2f}"
        speed = "" if r.get("samples_per_second") is None else f"{r['samples_per_second']:,.0f}"
        rows.append(
            f"<tr><td>{_e(count)}</td><td>{_e(r.get('world_size'))}</td>"
            f"<td>{_pill('pass' if r.get('reached') else 'fail')}</td><td>{_e(r.get('epochs_to_target') or '')}</td>"
            f"<td>{seconds}</td><td>{speed}</td><td>{_e(', '.join(r.get('nodes') or []))}</td></tr>"
        )
    rows.append(f"</table><p class='muted'>{_e(target_note)}</p>")
    return "".join(rows)


def _failures_table(failures: list[dict[str, Any]]) -> str:
    if not failures:
        return "<p>Nothing failed and nothing warned.</p>"
    rows = [
        f"<tr><td>{_pill(f['status'])}</td><td>{_e(f['node'])}</td><td>{_e(f['check'])}</td>"
        f"<td>{_e(f['message'])}</td><td>{_code(f['next'])}</td></tr>"
        for f in failures
    ]
    return (
        "<table><tr><th>Status</th><th>Where</th><th>Check</th><th>Finding</th><th>Next</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _nodes_table(nodes: dict[str, Any], cluster: dict[str, Any]) -> str:
    parts = [
        "<table id='nodes'><tr><th>Node</th><th>Overall</th>",
        *(f"<th>{_e(TITLES[s])}</th>" for s in NODE_SECTIONS),
    ]
    parts.append("</tr>")
    for host, node in nodes.items():
        cells = []
        for name in NODE_SECTIONS:
            sec = node["sections"][name]
            detail = "; ".join(f"{c['check']}: {c['message']}" for c in sec["checks"][:12]) or sec["note"]
            cells.append(f"<td title='{_e(detail)}'>{_pill(sec['status'])}</td>")
        parts.append(f"<tr><th>{_e(host)}</th><td>{_pill(node['status'])}</td>{''.join(cells)}</tr>")
    parts.append("</table>")
    parts.append(
        "<p>Cluster: " + ", ".join(f"{_e(TITLES[n])} {_pill(s['status'])}" for n, s in cluster.items()) + "</p>"
    )
    return "".join(parts)


def _every_check(report: dict[str, Any]) -> str:
    """Every section with checks, folded: each check's status, value, threshold and message."""
    parts = []
    scopes = [(h, n["sections"]) for h, n in report["nodes"].items()] + [("cluster", report["cluster"])]
    for scope, sections in scopes:
        for name, sec in sections.items():
            if not sec["checks"]:
                continue
            parts.append(
                f"<details><summary>{_e(scope)} &middot; {_e(TITLES.get(name, name))} {_pill(sec['status'])}"
                "</summary><table><tr><th>Check</th><th>Status</th><th>Value</th><th>Threshold</th><th>Message</th></tr>"
            )
            for c in sec["checks"]:
                value = "" if c.get("value") is None else f"{c.get('value')} {c.get('unit') or ''}"
                threshold = "" if c.get("threshold") is None else c.get("threshold")
                parts.append(
                    f"<tr><td>{_e(c['check'])}</td><td>{_pill(c['status'])}</td><td>{_e(value)}</td>"
                    f"<td>{_e(threshold)}</td><td>{_e(c['message'])}</td></tr>"
                )
            parts.append("</table></details>")
    return "".join(parts)


def _changed_since(report: dict[str, Any]) -> str:
    """The doctor's comparison: each regression and change with the baseline's value, today's and the
    tolerance, and today's bus bandwidth drawn beside the baseline's."""
    changed = report.get("changed_since")
    if not changed:
        return ""
    if changed["since"] is None:
        note = changed["checks"][0]["message"]
        return f"<h2>Changed since the baseline</h2><div class='card' id='changed'><p>{_e(note)}</p></div>"
    rows = changed["regressions"] + changed["changes"]
    parts = [
        f"<h2>Changed since {_e(changed['since'])}</h2>",
        f"<div class='card' id='changed' data-regressions='{len(changed['regressions'])}'>",
        f"<p class='muted'>Baseline {_e(changed['path'])}: {changed['compared']} metrics compared, "
        f"{len(changed['regressions'])} outside tolerance, {changed['improved']} better.</p>",
    ]
    if rows:
        parts.append(
            "<table><tr><th>Where</th><th>Status</th><th>Baseline</th><th>Now</th><th>Tolerance</th><th>What</th></tr>"
        )
        for c in rows:
            unit = f" {c['unit']}" if c.get("unit") else ""
            tolerance = "" if c.get("tolerance") is None else f"{c['tolerance']:g}"
            parts.append(
                f"<tr class='change' data-check='{_e(c['check'])}'><td>{_e(c['check'])}</td>"
                f"<td>{_pill(c['status'])}</td><td class='old'>{_e(c.get('baseline'))}{_e(unit)}</td>"
                f"<td class='new'>{_e(c.get('value'))}{_e(unit)}</td><td>{_e(tolerance)}</td>"
                f"<td>{_e(c['message'])}</td></tr>"
            )
        parts.append("</table>")
    if changed["series"]:
        series = {**changed["series"], **{f"{name}, now": pts for name, pts in _busbw_series(report).items()}}
        parts.append(line_chart(series, "message size", "bus bandwidth (GB/s)"))
    parts.append("</div>")
    return "".join(parts)


def render_html(report: dict[str, Any], healthy: float = 0.9, acceptable: float = 0.7) -> str:
    verdict = report["verdict"]
    counts = report["counts"]
    cluster = report["cluster"]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>{_e(report['title'])}</title><style>{CSS}</style></head><body><main>",
        f"<h1>{_e(report['title'])}</h1><div class='muted'>Generated {_e(report['generated'])}</div>",
        f"<div class='verdict' id='verdict' data-status='{_e(verdict)}' style='background:{COLOURS[verdict]}'>",
        f"<b>{_e(report['verdict_text'])}</b>{counts['pass']} passed, {counts['warn']} warnings, "
        f"{counts['fail']} failed, {counts['unavailable']} could not run, "
        f"{counts[NOT_APPLICABLE]} do not apply to this hardware{_banner_reasons(report['failures'])}</div>",
        _changed_since(report),
        "<h2>What failed, and what to check next</h2><div class='card'>",
        _failures_table(report["failures"]),
        "</div><h2>Nodes</h2><div class='card'>",
        _nodes_table(report["nodes"], cluster),
        "</div>",
    ]

    parts.append("<h2>Bus bandwidth against message size</h2><div class='card'>")
    expected = report.get("expected_busbw")
    reference = (expected, f"expected {expected:g} GB/s (the plan's link speed)") if expected else None
    parts.append(line_chart(_busbw_series(report), "message size", "bus bandwidth (GB/s)", reference))
    parts.append("</div><h2>Node-to-node bandwidth</h2><div class='card'>")
    parts.append(heat_map(report["network_matrix"], report.get("network_min_gbps")))
    parts.append("</div><h2>Scaling efficiency</h2><div class='card'>")
    collective = report.get("collective") or {}
    ddp = (collective.get("result") or {}).get("ddp")
    weak = next((c["value"] for c in cluster["collective"]["checks"] if c["check"] == "scaling_weak"), None)
    parts.append(efficiency_bar(collective.get("efficiency"), ddp, healthy, acceptable, weak))
    parts.append("</div><h2>Training smoke benchmark</h2><div class='card' id='training'>")
    target = next((c["threshold"] for c in cluster["training"]["checks"] if c.get("threshold")), "a fixed accuracy")
    parts.append(
        smoke_table(
            report.get("training") or {},
            f"A small classifier on scikit-learn's digits trained with DDP until {target}; throughput is "
            "information only. It shows that a job trains across nodes end to end. It is not MLPerf.",
        )
    )
    parts.append("</div><h2>What the cluster costs to run</h2><div class='card' id='cost'>")
    parts.append(cost_table(report.get("cost")))
    parts.append("</div><h2>Every check</h2><div class='card'>")
    parts.append(_every_check(report))
    parts.append("</div></main></body></html>\n")
    return "".join(parts)
