"""The text form of an :class:`~opdoctor.explain.matcher.Explanation` (``opdoctor explain``)."""

from __future__ import annotations

from opdoctor.explain.matcher import Explanation
from opdoctor.explain.rank import CAUSE_NAMES


def render_explanation(e: Explanation) -> str:
    """Ranked causes first (top cause, then alternatives with confidences and why), then the
    entities that decided, the line that matters, and the commands to run next."""
    head = (f"Cause {e.cause} — {CAUSE_NAMES[e.cause]}: {e.title}" if e.cause
            else f"Unknown: {e.title}")
    conf = f"confidence: {e.confidence}"
    if e.ranked:
        conf += f" ({e.score:.0%})"
    if e.codes:
        conf += f" · codes: {', '.join(e.codes)}"
    lines = [head, conf]
    if e.why:
        lines.append(f"why: {e.why}")
    if e.alternatives:
        lines += ["", "other causes, ranked:"]
        for a in e.alternatives:
            lines.append(f"  {a.confidence:>4.0%}  cause {a.cause} — {CAUSE_NAMES[a.cause]}: "
                         f"{a.why}")
    if e.decides:
        lines += ["", f"what decides it: {e.decides}"]
    lines += ["", e.explanation]
    for sym in e.entities.get("symbols", [])[:3]:
        lines.append(f"  symbol: {sym['demangled']}  [{sym['mangled']}]")
        lines.append(f"          is {sym['is']}")
    for key in ("op", "library", "path", "version", "module", "backend", "arch", "built",
                "have"):
        if e.entities.get(key):
            lines.append(f"  {key}: {e.entities[key]}")
    if e.evidence:
        lines += ["", "the line that matters:"] + [f"  {x}" for x in e.evidence]
    if e.other_matches:
        lines += ["", "also seen:"] + [f"  {x}" for x in e.other_matches[:5]]
    lines += ["", "next:"] + [f"  {x}" for x in e.next_steps]
    return "\n".join(lines)
