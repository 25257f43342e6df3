"""Vocabulary and sentence templates of the v2 synthetic session (data only).

Every word here is ours; none of the planted values of the paper's v1 fixture
appears. Filler vocabulary is chosen so that filler text can never contain a
planted value: no digits runs longer than four, no ``UTC``, no ``shards``, no
``@``, no ``https://``, no ``.lan``/``.lock``, no Cyrillic.
"""

from __future__ import annotations

#: The fourteen graded facts: (key, label, value class, sentence template).
#: Labels are pairwise non-substrings; the grader binds a value to its label.
GRADED_FACTS: tuple[tuple[str, str, str, str], ...] = (
    ("billing_port", "billing gateway port", "port",
     "The billing gateway was moved and now listens on port {v}."),
    ("relay_port", "telemetry relay port", "port",
     "Point every collector at the telemetry relay on port {v} from now on."),
    ("lock_path", "state lock path", "path",
     "The installer keeps its state lock at {v}, so never delete that file by hand."),
    ("shard_count", "search shard count", "count",
     "After the rebalance the search cluster runs with {v}; do not change it."),
    ("batch_uuid", "migration batch UUID", "uuid",
     "The migration batch we are tracking has UUID {v}."),
    ("freeze_start", "freeze window start", "timestamp",
     "The change freeze window starts at {v} and nothing ships after that."),
    ("drill_time", "failover drill time", "timestamp",
     "The failover drill is booked for {v}; tell the database team."),
    ("rotation_deadline", "key rotation deadline", "timestamp",
     "Key rotation has a hard deadline of {v}."),
    ("cache_origin", "asset cache origin", "url",
     "The asset cache now pulls from the origin {v} instead of the old bucket."),
    ("dns_zone", "internal DNS zone", "dns_zone",
     "Internal records go into the DNS zone {v}, not the public one."),
    ("signing_key", "artifact signing key id", "key_id",
     "Sign every artifact with the key whose id is {v}."),
    ("oncall_handle", "primary on-call handle", "handle",
     "If anything breaks tonight, page the primary on-call, {v}."),
    ("release_tag", "hotfix release tag", "release_tag",
     "The hotfix we deploy is tagged {v} in the release repository."),
    ("department", "owning department", "department_cyrillic",
     "Ownership of this system formally sits with {v}."),
)

#: Distractor classes (planted, never asked): (class, sentence template).
DISTRACTOR_CLASSES: tuple[tuple[str, str], ...] = (
    ("cluster_id", "Side note: cluster {v} finished its health check without warnings."),
    ("tenant_code", "The request came from tenant {v}, which is not part of this change."),
    ("licence_key", "For the audit trail, the staging licence key is {v}."),
    ("image_digest", "The sidecar image currently deployed is pinned to {v}."),
)

WORDS: tuple[str, ...] = (
    "amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
    "juniper", "kelp", "lumen", "maple", "nimbus", "onyx", "pylon", "quartz", "raven",
    "sierra", "tundra", "umbra", "vortex", "willow", "xenon", "yarrow", "zephyr", "basalt",
    "cinder", "dune", "falcon", "glacier", "heron", "ivory", "jasper", "lotus", "mistral",
    "nectar", "orchid", "prairie", "quill", "ripple", "saffron", "thistle", "velvet",
)
SERVICES: tuple[str, ...] = (
    "api-edge", "auth", "scheduler", "indexer", "mailer", "queue", "reports", "webhooks",
    "payments", "search", "thumbnailer", "exporter",
)
LEVELS: tuple[str, ...] = ("INFO", "INFO", "INFO", "DEBUG", "WARN")
STATUSES: tuple[int, ...] = (200, 200, 200, 204, 304, 404, 429, 503)
FIRST_NAMES: tuple[str, ...] = (
    "mira", "tobin", "ayla", "corvin", "deshi", "elka", "faro", "ilsa", "joren", "kaito",
)
LAST_NAMES: tuple[str, ...] = (
    "vance", "okafor", "lindqvist", "moreau", "tanaka", "ruiz", "novak", "quist",
)
DEPT_PREFIX: tuple[str, ...] = ("Отдел", "Служба", "Управление", "Департамент")
DEPT_ADJ: tuple[str, ...] = ("сетевой", "облачной", "платёжной", "складской", "почтовой", "учётной")
DEPT_NOUN: tuple[str, ...] = ("телеметрии", "инфраструктуры", "логистики", "аналитики", "отчётности")

OPERATOR_FILLER: tuple[str, ...] = (
    "Keep going with the maintenance checklist and tell me when the {s} checks are done.",
    "Can you look at the {s} logs again, I want to be sure nothing regressed overnight.",
    "Good. Next, verify that the {s} service restarted cleanly and report anything odd.",
    "Please rerun the smoke tests for {s}; the last run was flaky in the {w} region.",
    "I am back. Summarise what changed in {s} while I was away, briefly.",
    "Leave the {w} environment alone for now and focus on {s}.",
)
ASSISTANT_FILLER: tuple[str, ...] = (
    "Checking the recent {s} logs now.",
    "I will tail the {s} journal and look for errors.",
    "Running the health probe against {s} in the {w} region.",
    "Pulling the last batch of {s} request logs for review.",
)
ASSISTANT_ACK: tuple[str, ...] = (
    "Noted, I have recorded that. Continuing with the checklist.",
    "Understood. I will keep that in mind for the rest of the session.",
    "Recorded. Moving on to the next maintenance step.",
)
TOOL_COMMANDS: tuple[str, ...] = (
    "journalctl -u {s} --since -{m}m --no-pager",
    "kubectl logs deploy/{s} --tail {n}",
    "tail -n {n} /srv/logs/{s}/current",
)
