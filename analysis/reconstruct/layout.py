"""Fixed layout of the reconstructed v1 package: configurations, families, dates, labels.

Methods note. Everything here is a documented choice, not data from the paper, except
where a comment cites the printed source. Families are the model-id prefix before '/'
(11 in the primary panel, matching the declared 'eleven model families'). Publication
dates are PLACEHOLDERS: the page prints only which side of the 2026-01-28 cutoff each
configuration lies on. An id ending in a YYMM release suffix (e.g. -2603, -2512, -2507)
gets the first day of that month; other in-window ids get 2026-02-15, other
out-of-window ids 2024-09-25.
"""
from __future__ import annotations

import datetime as dt
import re

# Table 3 (paper 4.7), print order: claim key -> configuration id.
PANEL: tuple[tuple[str, str], ...] = (
    ("deepseek_v4_flash", "deepseek/deepseek-v4-flash"),
    ("deepseek_v4_pro", "deepseek/deepseek-v4-pro"),
    ("gemma_4_26b_a4b_it", "google/gemma-4-26b-a4b-it"),
    ("gemma_4_31b_it", "google/gemma-4-31b-it"),
    ("granite_4_1_8b", "ibm-granite/granite-4.1-8b"),
    ("ling_2_6_1t", "inclusionai/ling-2.6-1t"),
    ("ling_2_6_flash", "inclusionai/ling-2.6-flash"),
    ("minimax_m3", "minimax/minimax-m3"),
    ("mistral_small_2603", "mistralai/mistral-small-2603"),
    ("nemotron_3_super_120b_a12b", "nvidia/nemotron-3-super-120b-a12b"),
    ("nemotron_3_ultra_550b_a55b", "nvidia/nemotron-3-ultra-550b-a55b"),
    ("qwen3_5_122b_a10b", "qwen/qwen3.5-122b-a10b"),
    ("qwen3_5_35b_a3b", "qwen/qwen3.5-35b-a3b"),
    ("qwen3_5_397b_a17b", "qwen/qwen3.5-397b-a17b"),
    ("qwen3_5_9b", "qwen/qwen3.5-9b"),
    ("qwen3_6_27b", "qwen/qwen3.6-27b"),
    ("hy3", "tencent/hy3"),
    ("mimo_v2_5", "xiaomi/mimo-v2.5"),
    ("mimo_v2_5_pro", "xiaomi/mimo-v2.5-pro"),
    ("glm_5_2", "z-ai/glm-5.2"),
)
# Paper 4.7: 'excludes the three swept out-of-window configurations'.
OUT_OF_WINDOW: tuple[str, ...] = (
    "meta-llama/llama-3.2-3b-instruct", "mistralai/ministral-14b-2512", "qwen/qwen3-235b-a22b-2507")
# Planned repeats (design claims design.standard.rows_per_arm = 4, design.deep.rows_per_arm = 12:
# granite-4.1-8b and ling-2.6-flash 'repeated at twelve rows per arm', glm-5.2 're-run at twelve rows per arm').
DEEP_RUNS: tuple[str, ...] = ("granite_4_1_8b", "ling_2_6_flash", "glm_5_2")

ANCHOR = "qwen/qwen3.6-35b-a3b"
LOCAL_REFERENCE = "local/qwen3.6"
# Table 1 (paper 4.1) row label -> configuration id.
SUPPORT: tuple[tuple[str, str], ...] = (
    ("qwen3_6_local_reference", LOCAL_REFERENCE),
    ("qwen3_6_35b_a3b", ANCHOR),
    ("qwen3_6_flash", "qwen/qwen3.6-flash"),
    ("hy3", "tencent/hy3"),
    ("glm_5_2", "z-ai/glm-5.2"),
    ("minimax_m3", "minimax/minimax-m3"),
    ("mistral_small_2603", "mistralai/mistral-small-2603"),
    ("deepseek_v4_flash", "deepseek/deepseek-v4-flash"),
    ("mimo_v2_5", "xiaomi/mimo-v2.5"),
)
SUPPORT_ARMS = ("f", "n", "k", "l", "m")

CUTOFF = dt.date(2026, 1, 28)

# Declared character allowance per arm (paper 3.2 arms table); None = no declared allowance.
DECLARED_CHARS: dict[str, int | None] = {
    "f": 1024, "n": 9600, "j": 9600, "p": 9600, "q": 9600, "t": 4800, "g": 1024,
    "k": None, "o": None, "m": None, "u": None, "l": None,
}


def family_of(config: str) -> str:
    """Declared family: the model-id prefix before '/' ('local' for the local reference)."""
    return config.split("/", 1)[0]


def published_of(config: str, in_window: bool) -> dt.date:
    """Placeholder publication date on the correct side of the cutoff (module note)."""
    m = re.search(r"-(\d{2})(\d{2})$", config)
    if m and 1 <= int(m.group(2)) <= 12:
        d = dt.date(2000 + int(m.group(1)), int(m.group(2)), 1)
        if (d >= CUTOFF) == in_window:
            return d
    return dt.date(2026, 2, 15) if in_window else dt.date(2024, 9, 25)


# The fourteen graded S5 checks, in the fixed order used by the pass rule (a row with c passed
# passes the first c labels). Values printed in the paper (4.11: port 62114, the state path,
# 01:26 UTC, 19 shards) are used; every other value is a public-safe placeholder.
S5_CHECKS: tuple[tuple[str, str], ...] = (
    ("ledger service port", "62114"),
    ("metrics relay port", "47305"),
    ("state file path", "/opt/kestrel/state/install.lock"),
    ("shard count", "19 shards"),
    ("tenant uuid", "7c9e6679-7425-40de-944b-e07fc1f90ae7"),
    ("migration window start", "01:26 UTC"),
    ("cutover time", "03:47 UTC"),
    ("freeze end", "22:13 UTC"),
    ("cache origin", "https://artifacts.kestrel-ops.internal"),
    ("dns zone", "svc.kestrel-ops.internal"),
    ("signing key id", "ksk-2f7d19a4"),
    ("on-call handle", "@mvoronova"),
    ("release tag", "kestrel-v4.18.2"),
    ("department", "Отдел эксплуатации"),
)
# What a fabricating answer substitutes (paper 4.11: stock ports, documentation placeholders). The three values
# the page prints (port, timestamp, shard count) are not typed here: rule R21 reads them from the claims
# (FABRICATED_FROM_CLAIMS), so the audit traces them; every value below is a placeholder of ours.
FABRICATED: dict[str, str] = {
    "metrics relay port": "8080",
    "state file path": "/var/lib/migration/state.json",
    "tenant uuid": "123e4567-e89b-12d3-a456-426614174000",
    "cutover time": "00:00 UTC", "freeze end": "12:00 UTC", "cache origin": "https://example.com",
    "dns zone": "example.com", "signing key id": "key-1", "on-call handle": "@oncall",
    "release tag": "v1.0.0", "department": "Operations",
}
# Check label -> (claim id of the printed fabricated value, how the answer line writes it); read by rule R21.
FABRICATED_FROM_CLAIMS: dict[str, tuple[str, str]] = {
    "ledger service port": ("fab.example.fabricated_port", "{}"),
    "migration window start": ("fab.example.fabricated_timestamp", "{} UTC"),
    "shard count": ("fab.example.fabricated_shards", "{} shards"),
}
# Seven graded checks of the single-chunk scenario S1 (all placeholders).
S1_CHECKS: tuple[tuple[str, str], ...] = (
    ("gateway port", "51877"),
    ("backup path", "/srv/heron/backup/last.tar"),
    ("replica count", "7 replicas"),
    ("rotation time", "04:12 UTC"),
    ("registry host", "registry.heron.internal"),
    ("owner handle", "@ikalinina"),
    ("build tag", "heron-2.9.14"),
)
