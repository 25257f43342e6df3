"""A scripted-server run whose graded values are captured or lost at known folds (issue 14).

Fixture s5-small (5 chunks, 14 graded values, chunk c holds the values of segments c).
Every fold carries each graded value it sees in its prompt, except:

* ``owning department`` (chunk 3) is never carried: never captured;
* ``billing gateway port`` (chunk 0) is dropped at fold 2 (fold not clipped, parsed);
* fold 3 ends its reply with ~3,600 estimated tokens of notes and then ``telemetry relay port``
  (chunk 1), so the 2,400-token carry cap clips the carrier there and the value is lost at fold 3
  (the owning department enters at this clipped fold too);
* arm j's fold 4 reply is broken JSON, so every value j still holds is lost at fold 4, a parse
  failure, and the two values of chunk 4 enter at a fold that did not parse.

Arms j, q, m, repeats 1 and 2 of one configuration. The first row (``a-r1-m``) also carries
an HTML/script payload in its carrier, for the viewer's XSS test.

``write_scenario(root, reappear=True)`` (issue 19) changes two things: the ``billing gateway
port`` dropped at fold 2 is written back at fold 3 (and kept from there: it is back in the final
carrier of m and q, while j's broken fold 4 loses it again), and the never-carried ``owning
department`` (entry fold 3) is written at fold 4 (it appears one fold after its entry).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

from analysis.evidence import Configuration, PartitionRun, Study
from analysis.runner.arms import load_arms
from analysis.runner.fixture import DEFAULT_SPECS, build_fixture
from analysis.runner.package import RowMeta, write_package
from analysis.runner.protocol import RunSettings, run_trajectory
from analysis.runner.simulate.replies import purpose_of
from support.scripted_server import (
    MemorizingModel,
    OpenAIBackend,
    Reply,
    ScriptedServer,
)

S5 = build_fixture(DEFAULT_SPECS[2])
XSS = ('</script><script>document.body.setAttribute("data-xss","1")</script>'
       '<img src=x onerror="document.body.setAttribute(\'data-xss\',\'2\')"> & <b>bold</b>')
STUDY = Study(
    name="survival scripted <b>scenario</b>", recency_cutoff=dt.date(2026, 1, 28), control="j", treatment="q",
    scenario="S5",
    configurations={"scripted/a": Configuration("scripted/a", "scripted", dt.date(2026, 3, 1), "loopback", None)},
    partition_runs=(PartitionRun("scripted/a", "g1", 2),),
)
NEVER, DROPPED, CLIPPED = "owning department", "billing gateway port", "telemetry relay port"


class ScenarioModel:
    """The responder of one trajectory (fold calls are counted from 0)."""

    def __init__(self, arm: str, *, xss: bool = False, reappear: bool = False) -> None:
        self.mem = MemorizingModel(S5)
        self.arm = arm
        self.xss = xss
        self.reappear = reappear
        self.fold = -1

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        if purpose_of(body) == "recall":
            return self.mem(body, index)
        self.fold += 1
        if self.arm == "j" and self.fold == 4:
            return Reply('{"summary": broken')
        user = body["messages"][-1]["content"]
        forget = {NEVER} | ({DROPPED} if self.fold == 2 else set())
        seen = [(label, v) for label, v in self.mem.facts if v in user and label not in forget]
        kept = [f"- {label}: {v}" for label, v in seen if not (self.fold == 3 and label == CLIPPED)]
        back = {3: DROPPED, 4: NEVER}.get(self.fold) if self.reappear else None
        kept += [f"- {label}: {v}" for label, v in self.mem.facts if label == back and (label, v) not in seen]
        if self.xss and self.fold == 1:
            kept.append("- note: " + XSS)
        if self.fold == 3:
            kept.append("- notes: " + "routine log review " * 600)
            kept += [f"- {label}: {v}" for label, v in seen if label == CLIPPED]
        return Reply(self.mem._shape(body, kept))


async def _run(reappear: bool = False) -> list[tuple[Any, RowMeta]]:
    arms = load_arms()
    out = []
    for rep in (1, 2):
        for pos, arm in enumerate(("m", "j", "q"), 1):
            model = ScenarioModel(arm, xss=(rep == 1 and arm == "m"), reappear=reappear)
            with ScriptedServer(model, model="scripted/a") as server:
                backend = OpenAIBackend(server.base_url, "scripted/a")
                result = await run_trajectory(backend, S5, arms[arm], RunSettings(seed=1))
                await backend.aclose()
            out.append((result, RowMeta(f"a-r{rep}-{arm}", "scripted/a", "g1", rep, pos)))
    return out


def write_scenario(root: Path, *, reappear: bool = False) -> Path:
    """Run the scenario against the scripted server and write its evidence package under ``root``."""
    write_package(root, STUDY, asyncio.run(_run(reappear)))
    return root
