"""From findings to a verdict: the diagnosis (most likely cause, roots and consequences), the
per-cause status table, and the CI gate (severity overrides, baselines, fingerprints)."""
