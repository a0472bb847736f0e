"""Parse and judge nccl-tests output (all_reduce_perf, all_gather_perf, sendrecv_perf, ...).

Accepts every output generation: pre-2.13 (no root column, an `error` column), 2.13-2.17
(fixed decimals), current (width-fitted numbers), the `-J` JSON file, with mpirun/srun
line prefixes and NCCL INFO lines mixed in. Columns are mapped from the header line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpulab.cluster.plugins.module_utils.checks import (
    Check,
    at_least,
    failed,
    passed,
    unavailable,
    warned,
)

# busbw = algbw x factor(n ranks); from nccl-tests doc/PERFORMANCE.md.
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}
DEFAULT_MIN_SIZE = 256 * 1024 * 1024

_PREFIXES = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\[\d+\]\s|\d+:\s)")
_RANK = re.compile(
    r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]+)\]\s+(.*)$"
)
_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S+\s+\S+")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)\s*(OK|FAILED)?")
_FAILURE = re.compile(
    r"Test (?:NCCL |CUDA )?failure|Test timeout|Invalid number of GPUs|^# error:\s*\S|unhandled (?:system|cuda) error"
)
_NETWORK = re.compile(r"NCCL INFO Using network (\w+)")
_VERSION = re.compile(r"^# nccl-tests version (\S+)")
_STARTING = re.compile(r"^# Collective test starting: (\S+)")
_VALIDATION = re.compile(r"validation: (\d+)")


class NcclParseError(ValueError):
    """The text is not nccl-tests output (or too little of it to judge)."""


@dataclass
class Half:
    """One of the two measurements per size: out-of-place or in-place."""

    time_us: float
    algbw: float
    busbw: float
    wrong: int | None  # None: not validated (-c 0) or an old build's 'error' column


@dataclass
class Row:
    size: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: Half
    in_place: Half | None

    @property
    def best_busbw(self) -> float:
        return max(h.busbw for h in (self.out_of_place, self.in_place) if h is not None)

    @property
    def wrong(self) -> int:
        return sum(h.wrong or 0 for h in (self.out_of_place, self.in_place) if h is not None)


@dataclass
class NcclResult:
    rows: list[Row] = field(default_factory=list)
    version: str | None = None
    collective: str | None = None
    ranks: list[dict[str, Any]] = field(default_factory=list)
    validated: bool | None = None
    oob_count: int | None = None
    oob_ok: bool | None = None
    avg_busbw: float | None = None
    avg_ok: bool | None = None  # None: no NCCL_TESTS_MIN_BW check
    failures: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)  # from 'NCCL INFO Using network X'
    has_error_column: bool = False

    @property
    def complete(self) -> bool:
        return self.avg_busbw is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "collective": self.collective,
            "ranks": self.ranks,
            "hosts": sorted({r["host"] for r in self.ranks}),
            "validated": self.validated,
            "out_of_bounds": self.oob_count,
            "avg_busbw": self.avg_busbw,
            "networks": self.networks,
            "complete": self.complete,
            "failures": self.failures,
            "rows": [
                {
                    "size": r.size,
                    "count": r.count,
                    "type": r.dtype,
                    "redop": r.redop,
                    "busbw": r.best_busbw,
                    "algbw": max(r.out_of_place.algbw, r.in_place.algbw if r.in_place else 0.0),
                    "time_us": r.out_of_place.time_us,
                    "wrong": r.wrong,
                }
                for r in self.rows
            ],
        }


def _strip(line: str) -> str:
    return _PREFIXES.sub("", line.rstrip("\n"), count=1)


def _wrong(token: str, is_error_column: bool) -> int | None:
    if is_error_column or token == "N/A":
        return None
    return int(float(token))


def _column_map(header: list[str]) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Preamble columns by name, and one {name: index} per measurement block (starting at 'time')."""
    starts = [i for i, name in enumerate(header) if name in ("time", "cputime")]
    if not starts:
        raise NcclParseError("column header has no 'time' column")
    preamble = {name: i for i, name in enumerate(header[: starts[0]])}
    blocks = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(header)
        blocks.append({name: i for i, name in enumerate(header[start:end], start)})
    return preamble, blocks


def _half(tokens: list[str], block: dict[str, int], is_error_column: bool) -> Half:
    wrong_col = block.get("#wrong", block.get("error"))
    return Half(
        time_us=float(tokens[block.get("time", block.get("cputime"))]),
        algbw=float(tokens[block["algbw"]]),
        busbw=float(tokens[block["busbw"]]),
        wrong=_wrong(tokens[wrong_col], is_error_column) if wrong_col is not None else None,
    )


def parse_text(text: str) -> NcclResult:
    """Parse nccl-tests stdout. Raises NcclParseError when it is not nccl-tests output."""
    result = NcclResult()
    preamble: dict[str, int] | None = None
    blocks: list[dict[str, int]] = []
    for raw in text.splitlines():
        line = _strip(raw)
        if " NCCL INFO " in line or " NCCL WARN " in line:
            if (m := _NETWORK.search(line)) and m.group(1) not in result.networks:
                result.networks.append(m.group(1))
            continue
        if _FAILURE.search(line):
            result.failures.append(line.strip())
            continue
        if line.startswith("#"):
            if m := _VERSION.match(line):
                result.version = m.group(1)
            elif m := _STARTING.match(line):
                result.collective = m.group(1).removesuffix("_perf")
            elif line.startswith("# nThread") and (m := _VALIDATION.search(line)):
                result.validated = m.group(1) != "0"
            elif m := _RANK.match(line):
                rank, pid, host, device, bus, name = m.groups()
                result.ranks.append(
                    {
                        "rank": int(rank),
                        "pid": int(pid),
                        "host": host,
                        "device": int(device),
                        "bus_id": bus,
                        "gpu": name,
                    }
                )
            elif m := _OOB.match(line):
                result.oob_count = int(m.group(1))
                result.oob_ok = m.group(2) != "FAILED"
            elif m := _AVG.match(line):
                result.avg_busbw = float(m.group(1))
                result.avg_ok = {None: None, "OK": True, "FAILED": False}[m.group(2)]
            else:
                names = line.lstrip("#").split()
                if "size" in names and "count" in names:
                    preamble, blocks = _column_map(names)
                    result.has_error_column = "error" in names and "#wrong" not in names
            continue
        if _ROW.match(line):
            if preamble is None:
                raise NcclParseError(f"data row before the column header: {line.strip()[:80]!r}")
            tokens = line.split()
            try:
                row = Row(
                    size=int(tokens[preamble["size"]]),
                    count=int(tokens[preamble["count"]]),
                    dtype=tokens[preamble["type"]],
                    redop=tokens[preamble["redop"]] if "redop" in preamble else None,
                    root=int(tokens[preamble["root"]]) if "root" in preamble else None,
                    out_of_place=_half(tokens, blocks[0], result.has_error_column),
                    in_place=_half(tokens, blocks[1], result.has_error_column) if len(blocks) > 1 else None,
                )
            except (IndexError, ValueError) as exc:
                raise NcclParseError(f"malformed data row {line.strip()[:80]!r}: {exc}") from exc
            result.rows.append(row)
    if not result.rows and not result.failures and result.avg_busbw is None:
        raise NcclParseError("no nccl-tests column header, data rows or footer found")
    if result.validated is None and result.rows:
        result.validated = any(h.wrong is not None for r in result.rows for h in (r.out_of_place, r.in_place) if h)
    return result


def _json_half(d: dict[str, Any]) -> Half:
    return Half(
        time_us=float(d.get("time", d.get("cpu_time", 0.0))),
        algbw=float(d["alg_bw"]),
        busbw=float(d["bus_bw"]),
        wrong=None if d.get("nwrong") is None else int(d["nwrong"]),
    )


def parse_json(data: dict[str, Any]) -> NcclResult:
    """Parse the `-J` JSON file (nccl-tests 2.17.3+)."""
    try:
        result = NcclResult(version=str(data.get("version")))
        config = data.get("config") or {}
        result.validated = bool(config.get("validation", 1))
        for d in data.get("devices") or []:
            result.ranks.append(
                {
                    "rank": int(d["rank"]),
                    "pid": int(d.get("pid", 0)),
                    "host": d["hostname"],
                    "device": int(d.get("device", 0)),
                    "bus_id": d.get("device_hex"),
                    "gpu": d.get("device_info"),
                }
            )
        for r in data.get("results") or []:
            result.rows.append(
                Row(
                    size=int(r["size"]),
                    count=int(r["count"]),
                    dtype=r.get("type", ""),
                    redop=r.get("redop"),
                    root=r.get("root"),
                    out_of_place=_json_half(r["out_of_place"]),
                    in_place=_json_half(r["in_place"]) if r.get("in_place") else None,
                )
            )
        oob = data.get("out_of_bounds") or {}
        if oob:
            result.oob_count = int(oob.get("count", 0))
            result.oob_ok = bool(oob.get("okay", True))
        avg = data.get("average_bus_bandwidth") or {}
        if avg:
            result.avg_busbw = float(avg["bandwidth"])
            result.avg_ok = avg.get("okay") if isinstance(avg.get("okay"), bool) else None
        result.failures = [str(e) for e in data.get("errors") or []]
    except (KeyError, TypeError, ValueError) as exc:
        raise NcclParseError(f"not an nccl-tests JSON result: {exc!r}") from exc
    if not result.rows and not result.failures:
        raise NcclParseError("nccl-tests JSON has no results")
    return result


def evaluate(
    result: NcclResult,
    rc: int | None = None,
    expected: float | None = None,
    pass_ratio: float = 0.9,
    min_size: int = DEFAULT_MIN_SIZE,
    rdma_expected: bool = False,
) -> list[Check]:
    """Check records: run, completeness, correctness, bandwidth (large messages only), transport."""
    checks: list[Check] = []
    if rc is not None:
        meaning = {0: "ok", 3: "NCCL error", 7: "wrong results or below NCCL_TESTS_MIN_BW"}.get(rc, "error")
        checks.append(
            passed("nccl_exit", "nccl-tests exited 0", value=rc)
            if rc == 0
            else failed("nccl_exit", f"nccl-tests exited {rc} ({meaning})", value=rc, code="NCCL_EXIT")
        )
    if result.failures:
        checks.append(
            failed("nccl_errors", "; ".join(result.failures[:3]), value=len(result.failures), code="NCCL_ERROR")
        )
    if not result.complete:
        checks.append(
            failed(
                "nccl_complete",
                "output ends without the '# Avg bus bandwidth' footer: truncated, hung or killed",
                code="NCCL_TRUNCATED",
            )
        )
    wrong_rows = [r.size for r in result.rows if r.wrong > 0]
    if wrong_rows or result.oob_ok is False:
        checks.append(
            failed(
                "nccl_correctness",
                f"wrong results: {sum(r.wrong for r in result.rows)} wrong elements at sizes {wrong_rows}, "
                f"out-of-bounds footer {result.oob_count}",
                value=sum(r.wrong for r in result.rows),
                threshold=0,
                code="NCCL_WRONG",
            )
        )
    elif result.validated is False:
        checks.append(warned("nccl_correctness", "results were not validated (run with -c 0); correctness unknown"))
    elif result.rows:
        checks.append(passed("nccl_correctness", "no wrong results", value=0, threshold=0))
    if result.avg_ok is False:
        checks.append(
            failed(
                "nccl_min_bw",
                "nccl-tests' own NCCL_TESTS_MIN_BW check FAILED",
                value=result.avg_busbw,
                unit="GB/s",
                code="NCCL_MIN_BW",
            )
        )
    checks.append(_bandwidth_check(result, expected, pass_ratio, min_size))
    if rdma_expected:
        if "Socket" in result.networks and "IB" not in result.networks:
            checks.append(
                failed(
                    "nccl_transport",
                    "NCCL used TCP sockets although the fabric declares RDMA (Using network Socket): "
                    "check NCCL_IB_HCA and the RDMA devices (rdma_health)",
                    value="Socket",
                    threshold="IB",
                    code="NCCL_SOCKET_FALLBACK",
                )
            )
        elif "IB" in result.networks:
            checks.append(passed("nccl_transport", "NCCL used RDMA (Using network IB)", value="IB", threshold="IB"))
        else:
            checks.append(unavailable("nccl_transport", "transport not shown; run with NCCL_DEBUG=INFO to see it"))
    return checks


def _bandwidth_check(result: NcclResult, expected: float | None, pass_ratio: float, min_size: int) -> Check:
    if not result.rows:
        return unavailable("nccl_busbw", "no data rows to measure")
    large = [r for r in result.rows if r.size >= min_size]
    if not large:  # a sweep that stops below min_size: judge its largest message
        largest = max(r.size for r in result.rows)
        large = [r for r in result.rows if r.size == largest]
    best = max(r.best_busbw for r in large)
    sizes = f"{min(r.size for r in large)}-{max(r.size for r in large)} B"
    if len(result.ranks) == 1 or best == 0.0:
        return unavailable(
            "nccl_busbw", "busbw is 0 with a single rank: nothing crossed a link", value=best, unit="GB/s"
        )
    if expected is None:
        return unavailable(
            "nccl_busbw",
            f"busbw {best:g} GB/s at {sizes}; no expected value or link speed given",
            value=best,
            unit="GB/s",
        )
    check = at_least("nccl_busbw", best, round(expected * pass_ratio, 3), "GB/s", f"busbw at {sizes}")
    return check if check.status != "fail" else Check(**{**check.as_dict(), "code": "NCCL_SLOW"})


def build_command(
    test: str,
    tests_dir: str,
    args: list[str],
    launcher: str = "local",
    hosts: list[str] | None = None,
    gpus_per_host: int = 1,
    env: dict[str, str] | None = None,
    srun_mpi: str = "pmix",
) -> list[str]:
    """The argv that runs one nccl-tests binary: locally, or one rank per GPU with mpirun or srun."""
    binary = f"{tests_dir.rstrip('/')}/{test}"
    env = env or {}
    hosts = hosts or []
    if launcher == "local":
        return [binary, *args]
    if not hosts:
        raise ValueError(f"launcher '{launcher}' needs hosts")
    ranks = len(hosts) * gpus_per_host
    if launcher == "mpirun":
        cmd = [
            "mpirun",
            "--allow-run-as-root",
            "-np",
            str(ranks),
            "-H",
            ",".join(f"{h}:{gpus_per_host}" for h in hosts),
            "--bind-to",
            "numa",
        ]
        for name, value in sorted(env.items()):
            cmd += ["-x", f"{name}={value}"]
        return [*cmd, binary, *args]
    if launcher == "srun":
        # One rank per GPU, each node's GPUs granted (device confinement hides the others), the whole
        # node to itself (--mem=0: all its memory, whatever DefMemPerCPU says).
        exports = ",".join(["ALL", *(f"{k}={v}" for k, v in sorted(env.items()))])
        return [
            "srun",
            f"--mpi={srun_mpi}",
            "-N",
            str(len(hosts)),
            "--ntasks-per-node",
            str(gpus_per_host),
            f"--gres=gpu:{gpus_per_host}",
            "--exclusive",
            "--mem=0",
            "--job-name=gpulab-nccl-tests",
            "-w",
            ",".join(hosts),
            f"--export={exports}",
            binary,
            *args,
        ]
    raise ValueError(f"launcher must be local, mpirun or srun, got {launcher!r}")
