"""Rank 0's view: ranks grouped by fingerprint, the differences between the groups, and the
fleet's exit code.

Every rank's record is flattened to ``key → value`` strings (:func:`compared`); ranks with the
same flattened fingerprint form a group. Identity (rank, node, host name, process) is never
compared, and ``CUDA_VISIBLE_DEVICES`` is compared by what it means (unset / no GPU visible /
N devices), not by the device numbers each local rank is given, so a healthy fleet is one group
whatever its size and the summary grows with the number of distinct groups, not of ranks.

A difference *matters* when it changes what the job loads or how it is judged: the verdict, the
target's bytes, a dependency's bytes (or whether it is found at all), the ops the probe saw
registered and their dispatch keys, the interpreter's version,
torch/TensorFlow release and variant, the CUDA runtime. Other differences (environment strings,
the interpreter's path, a dependency found under another path with the same bytes, driver,
GPUs) are reported and only fail with ``--fail-on-difference``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# Record keys whose difference matters (besides verdicts, files and dependency bytes).
MATTERS = frozenset({"python", "torch", "tensorflow", "CUDA runtime"})
HOST_ORDER = ("python", "python executable", "torch", "tensorflow", "CUDA runtime",
              "CUDA driver", "GPUs")


def ranks_text(ranks: Iterable[int]) -> str:
    """``rank 7`` / ``ranks 0-6`` / ``ranks 0-3, 5, 9-12``."""
    rs = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(parts)


_NO_GPU = "empty: no GPU visible"


def _visible_devices(value: str | None) -> str:
    if value is None:
        return "(unset)"
    if value.strip() == "":
        return _NO_GPU
    n = len([d for d in value.split(",") if d.strip()])
    return f"{n} device{'s' if n != 1 else ''}"


def _file(t: Mapping[str, Any]) -> str:
    if t.get("sha256"):
        return f"{t.get('size')} bytes, sha256 {str(t['sha256'])[:16]}"
    return "not readable" if t.get("size") is not None else "missing"


def _dep(path: str | None, sha: str | None) -> str:
    if not path:
        return "not found"
    return f"{path} (sha256 {sha[:12]})" if sha else f"{path} (unreadable)"


def verdict_label(v: Mapping[str, Any]) -> str:
    """A verdict as one comparable string: ``clean``, ``cause 2 (OD201)``, ``not checked``."""
    state = v.get("state", "")
    if state == "findings":
        codes = ", ".join(dict.fromkeys(v.get("codes", []))) or "?"
        return f"cause {v.get('cause')} ({codes})" if v.get("cause") else f"notes ({codes})"
    return str(state)


def compared(record: Mapping[str, Any]) -> dict[str, str]:
    """The flattened fingerprint of one rank: what is compared across ranks."""
    out: dict[str, str] = {}
    host = record.get("host") or {}
    for key in HOST_ORDER:
        if key in host:
            out[key] = str(host[key])
    for key, value in (record.get("env") or {}).items():
        out[f"env {key}"] = _visible_devices(value) if key == "CUDA_VISIBLE_DEVICES" \
            else ("(unset)" if value is None else str(value))
    targets = record.get("targets")
    if targets is None:
        out["verdict"] = str(record.get("unknown", "unknown"))
        return out
    many = len(targets) > 1
    for t in targets:
        p = f"{t['target']}: " if many else ""
        out[f"{p}verdict"] = verdict_label(t["verdict"])
        out[f"{p}file"] = _file(t)
        for name, path, sha in t.get("deps", []):
            out[f"{p}dep {name}"] = _dep(path, sha)
        for name, keys in sorted((t.get("ops") or {}).items()):
            out[f"{p}op {name}"] = f"registered [{keys}]" if keys else "registered, no kernel"
    return out


def _identity(key: str, value: str) -> str:
    """What of ``value`` matters: for a dependency its bytes or absence, not its path."""
    if " dep " in f" {key}" and value != "not found":
        return value.rsplit("(", 1)[-1]
    return value


def matters(key: str, values: Iterable[str]) -> bool:
    """True when ranks holding these different ``values`` of ``key`` may behave differently."""
    name = key.split(": ", 1)[-1]
    if name in MATTERS or name in ("verdict", "file") or name.startswith("op "):
        return True  # an op registered otherwise (or not at all) runs otherwise
    if name.startswith("dep "):
        return len({_identity(name, v) for v in values}) > 1
    if name == "env CUDA_VISIBLE_DEVICES":
        # A rank that sees no GPU where the others see some runs its CUDA ops nowhere
        # (survey 16's O7); how many each sees is the local rank's share, by design.
        seen = set(values)
        return _NO_GPU in seen and any(v.endswith(("device", "devices")) for v in seen)
    return False


@dataclass
class Group:
    """Ranks with one fingerprint."""

    label: str  # A, B, …
    ranks: list[int]
    nodes: list[str]
    fingerprint: dict[str, str]
    records: list[dict[str, Any]]

    @property
    def leader(self) -> dict[str, Any]:
        """The group's first record (its values stand for the group)."""
        return self.records[0]


@dataclass
class Difference:
    """One key whose value differs between groups: value → ranks, largest first."""

    key: str
    values: list[tuple[str, list[int]]]
    matters: bool

    def text(self) -> str:
        """``key: value on ranks 0-6 vs value on rank 7``."""
        return f"{self.key}: " + " vs ".join(f"{v} on {ranks_text(r)}" for v, r in self.values)


@dataclass
class Missing:
    """A rank that never answered."""

    rank: int
    state: str  # "never joined" / "joined, but its check did not finish"
    hostname: str = ""


@dataclass
class FleetSummary:
    """Everything rank 0 reports."""

    world_size: int
    groups: list[Group]
    differences: list[Difference]
    missing: list[Missing]
    records: list[dict[str, Any]]
    exit_code: int = 0
    reasons: list[str] = field(default_factory=list)

    @property
    def answered(self) -> int:
        """How many ranks answered."""
        return len(self.records)


def attach_shared(records: list[dict[str, Any]]) -> None:
    """Give ranks that reused their node's check that check's host facts and targets."""
    by_rank = {r["rank"]: r for r in records}
    for r in records:
        src = r.get("checked_by", r["rank"])
        if src == r["rank"]:
            continue
        leader = by_rank.get(src)
        if leader is None or leader.get("targets") is None:
            r["host"], r["targets"] = None, None
            r["unknown"] = f"unknown: rank {src}, which checked its node, did not answer"
        else:
            r["host"], r["targets"] = leader.get("host"), leader.get("targets")


def _absent(key: str) -> str:
    """What a rank without ``key`` in its fingerprint has there."""
    name = key.rpartition(": ")[2]
    if name.startswith("dep "):
        return "(not in its dependency tree)"
    if name.startswith("op "):
        return "(not registered)"
    return "(absent)"


def summarise(records: list[dict[str, Any]], world_size: int, missing: list[Missing],
              fail_on_difference: bool) -> FleetSummary:
    """Group the ranks, list the differences and decide the exit code."""
    attach_shared(records)
    buckets: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    prints: dict[int, dict[str, str]] = {}
    for r in sorted(records, key=lambda x: int(x["rank"])):
        fp = compared(r)
        prints[r["rank"]] = fp
        buckets.setdefault(tuple(sorted(fp.items())), []).append(r)
    ordered = sorted(buckets.values(), key=lambda rs: (-len(rs), rs[0]["rank"]))
    groups = []
    for i, rs in enumerate(ordered):
        label = chr(ord("A") + i) if i < 26 else f"G{i + 1}"
        groups.append(Group(label, [r["rank"] for r in rs], sorted({r["node"] for r in rs}),
                            prints[rs[0]["rank"]], rs))
    diffs: list[Difference] = []
    keys: list[str] = []
    for g in groups:
        keys += [k for k in g.fingerprint if k not in keys]
    files = {k for k in keys if k.split(": ", 1)[-1] == "file"
             and len({g.fingerprint.get(k) for g in groups}) > 1}
    for key in keys:
        values: dict[str, list[int]] = {}
        for g in groups:
            values.setdefault(g.fingerprint.get(key, _absent(key)), []).extend(g.ranks)
        prefix, _, name = key.rpartition(": ")
        if name.startswith("dep ") and _absent(key) in values and \
                (f"{prefix}: file" if prefix else "file") in files:
            # A dependency one rank's file does not need, where the files differ: the file's
            # difference says it (a missing target was ten "dep … (absent)" lines that
            # buried it: survey 16's P9).
            continue
        if len(values) > 1:
            ordered_values = sorted(values.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
            diffs.append(Difference(key, ordered_values, matters(key, values)))
    diffs.sort(key=lambda d: not d.matters)  # what matters first, stable otherwise
    summary = FleetSummary(world_size, groups, diffs, missing, records)
    summary.exit_code, summary.reasons = exit_code(summary, fail_on_difference)
    return summary


def exit_code(s: FleetSummary, fail_on_difference: bool) -> tuple[int, list[str]]:
    """0 clean and identical in what matters · 1 a rank fails, never answered, or the ranks
    differ in what matters (any difference with ``--fail-on-difference``) · 4 a check crashed."""
    reasons: list[str] = []
    failing = [r["rank"] for r in s.records
               if r.get("targets") is None or any(t["verdict"].get("fails")
                                                  for t in r["targets"])]
    if failing:
        reasons.append(f"{ranks_text(failing)} {'fails' if len(failing) == 1 else 'fail'} "
                       "the check")
    if s.missing:
        reasons.append(f"{ranks_text(m.rank for m in s.missing)} never answered")
    serious = [d.key for d in s.differences if d.matters]
    if serious:
        reasons.append(f"the ranks differ in what matters: {', '.join(serious[:4])}"
                       + (" …" if len(serious) > 4 else ""))
    elif s.differences and fail_on_difference:
        reasons.append(f"the ranks differ (--fail-on-difference): "
                       f"{', '.join(d.key for d in s.differences[:4])}")
    if reasons:
        return 1, reasons
    if any(t["verdict"].get("internal") for r in s.records for t in r.get("targets") or []):
        return 4, ["a check crashed (internal error)"]
    return 0, []
