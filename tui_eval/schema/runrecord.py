"""The run record's named places (`tui-eval.run/3`): typed, so each later feature fills its place
instead of changing the format.

A record (`<app>_<set>_<time>.tui-eval.json`, beside ADK's `.evalset_result.json`) is one eval set's
results in one run. Its metadata is `RunMeta` (the run's `state`, `kind`, `versions`, `journal`, `gate`,
`executor`, and the fields records of format /2 had); each of its cases carries `CasePlaces`' fields
(`versions`, `repetition`, `nested_calls`, `final_session_state`, `human_verdicts`, `reruns_after_crash`)
beside its verdicts (`results.CaseRecord`). Readers accept records of format /2 and /1: a place a
record lacks reads as its default here.

Data only: engine/history.py computes a run's kind and resolves `RUN`, `latest` and record paths.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

RECORD_FORMAT = "tui-eval.run/3"
#: Formats readers still accept: /2 (no kind, state or versions) and /1 (free-form metric details).
OLD_RECORD_FORMATS = ("tui-eval.run/2", "tui-eval.run/1")

RunState = Literal["running", "finished", "interrupted", "cancelled"]
AgentKind = Literal["agent", "replay", "none"]
ToolsKind = Literal["live", "mock-strict", "mock-fallback"]
Selection = Literal["all", "failures", "selection"]


class _Place(BaseModel):
    # A newer writer may add a key to a place: an older reader ignores it instead of refusing the record.
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class JudgeRef(_Place):
    """The judge a run asked: its provider (`gemini`, `openai`), model, and endpoint (None: the
    provider's own)."""

    provider: str
    model: str
    endpoint: str | None = None

    def text(self) -> str:
        return f"{self.provider}:{self.model}" + (f" at {self.endpoint}" if self.endpoint else "")


class RunKind(_Place):
    """What kind of run produced a record: the one definition (engine/history.py computes it). Two runs
    compare as baseline and run only when their kinds agree on what decides a verdict: `agent`, `tools`,
    `criteria`, `judge` and `strict` (`selection` and `rescore_of` say how much of the set ran and from what)."""

    agent: AgentKind = "agent"
    tools: ToolsKind = "live"
    #: A hash of the effective criteria (metric names, thresholds, options) the eval set ran with.
    criteria: str = ""
    judge: JudgeRef | None = None
    selection: Selection = "all"
    #: The run a re-score took its agent turns from (None: the agent, or the replay, answered now).
    rescore_of: str | None = None
    strict: bool = False

    #: The parts that must agree for two runs to be compared, with the word each difference is named by.
    COMPARED: ClassVar[tuple[tuple[str, str], ...]] = (
        ("agent", "agent or replay"), ("tools", "tools"), ("criteria", "criteria"), ("judge", "judge"),
        ("strict", "--strict"))

    def differences(self, other: RunKind) -> list[str]:
        """`tools: live here, mock-strict there`, one line per part that differs (empty: same kind)."""
        out = []
        for name, word in self.COMPARED:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                out.append(f"{word}: {_kind_text(mine)} here, {_kind_text(theirs)} there")
        return out

    def text(self) -> str:
        """`agent, live tools, judge gemini:gemini-2.5-flash`: what the summary and reports say."""
        tools = {"live": "live tools", "mock-strict": "mocked tools (strict)",
                 "mock-fallback": "mocked tools (fallback to live)"}[self.tools]
        # A replay runs no tools: its recorded turns are scored as they are.
        parts = [self.agent if self.agent != "none" else "no agent", *([] if self.agent == "replay" else [tools]),
                 f"judge {self.judge.text()}" if self.judge is not None else "no judge"]
        if self.selection != "all":
            parts.append(f"{self.selection} only" if self.selection == "failures" else "a selection of cases")
        if self.rescore_of:
            parts.append(f"re-scored from {self.rescore_of}")
        if self.strict:
            parts.append("strict")
        return ", ".join(parts)


def _kind_text(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, JudgeRef):
        return value.text()
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value)
    return text[:12] if len(text) == 64 else text  # a criteria hash: its first 12 digits


class RunVersions(_Place):
    """What the run's results were computed from, as version strings (None: not computed)."""

    agent: str | None = None
    criteria: str | None = None
    judge: str | None = None


class JudgeVersion(_Place):
    """The judge a result's LLM metrics asked: provider, model, endpoint, and the model version it
    answered with (None until a judge answered, or when it does not say)."""

    provider: str
    model: str | None = None
    endpoint: str | None = None
    model_version: str | None = None


class ResultVersions(_Place):
    """What a result was computed from (`engine.versions` makes and compares them): the agent's code
    (`agents.version`; None when no agent ran it, `agent_outside` the files outside its folder the
    version covers), the tools' mode (live | mock-strict | mock-fallback), the eval case as run and the
    effective criteria (content hashes), and the judge."""

    agent: str | None = None
    agent_outside: tuple[str, ...] = ()
    tools: str = "live"
    case: str = ""
    criteria: str = ""
    judge: JudgeVersion | None = None


class NestedCall(_Place):
    """A tool or agent call made inside another call (an AgentTool's inner calls): `parent` is the call
    id it ran under (no id in ADK's data links them: tui-eval matched them by nesting), `agent` the agent
    that made it, `depth` 1 inside a top-level call, 2 inside that...; `seconds` its own run time. Also
    what an actual turn keeps of them (`model.Invocation.nested_calls`)."""

    name: str
    args: JsonValue = None
    response: JsonValue = None
    call_id: str | None = None
    parent: str | None = None
    agent: str | None = None
    depth: int = 1
    seconds: float | None = None

    @property
    def arguments(self) -> dict[str, JsonValue]:
        """`args` as a dict (a call recorded without arguments has none)."""
        return self.args if isinstance(self.args, dict) else {}


class HumanVerdict(_Place):
    """A person's verdict on a case, a turn (`turn`) or a metric (`metric`), with the versions it was
    given against (it carries to later runs while those are unchanged)."""

    verdict: Literal["pass", "fail"]
    reason: str = ""
    metric: str | None = None
    turn: int | None = None
    by: str | None = None
    at: float | None = None
    case_version: str | None = None
    turns_version: str | None = None


class CasePlaces(_Place):
    """The places each case of a /3 record carries (defaults for a case of an older record)."""

    #: What the result was computed from (None: a record written before versions were kept).
    versions: ResultVersions | None = None
    #: Which repetition (1-based, --num-runs) of the run this result is.
    repetition: int = Field(default=1, ge=1)
    #: invocation_id -> the calls made inside that turn's calls, in order.
    nested_calls: dict[str, list[NestedCall]] = Field(default_factory=dict)
    #: The agent's session state when the case ended (None: not captured).
    final_session_state: dict[str, JsonValue] | None = None
    human_verdicts: list[HumanVerdict] = Field(default_factory=list)
    #: How often the case was started again after its worker crashed.
    reruns_after_crash: int = Field(default=0, ge=0)


#: The per-case places' names, in the order a record writes them.
CASE_PLACES = tuple(CasePlaces.model_fields)


class GateRecord(_Place):
    """The CI gate's outcome, as `tui-eval run` decided it (engine/gate.py): its exit code and why, and
    against which baseline run: the case ids of each kind of change."""

    code: int
    word: str
    reasons: list[str] = Field(default_factory=list)
    fail_on_regression: bool = False
    baseline_run: str | None = None
    #: Why there is no baseline run, when there is none (`no saved run of the same kind`).
    baseline_missing: str | None = None
    regressions: list[str] = Field(default_factory=list)
    fixes: list[str] = Field(default_factory=list)
    still_failing: list[str] = Field(default_factory=list)
    not_run: list[str] = Field(default_factory=list)
    not_evaluated: list[str] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        """A gate that failed (exit 1): such a run is never `latest` for a later baseline."""
        return self.code == 1


class ExecutorInfo(_Place):
    """What ran the agent: `local` (a pool of worker processes), `inline` (this process: a replay),
    `ray` (the Ray tui-eval started), `ray-cluster` (the cluster it joined, at `address`)."""

    kind: str = "local"
    address: str | None = None
    workers: int | None = None

    def text(self) -> str:
        words = {"local": "local pool", "inline": "in process", "ray": "Ray (started by tui-eval)",
                 "ray-cluster": "Ray cluster"}
        head = words.get(self.kind, self.kind)
        if self.address:
            head += f" {self.address}"
        if self.workers:
            head += f", {self.workers} worker{'s' if self.workers != 1 else ''}"
        return head


class RunMeta(BaseModel):
    """A run record's metadata: everything but its cases. Records of format /2 and /1 read with the
    defaults for the places they lack (their `state` from `cancelled`)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    format: str
    run_id: str
    name: str
    state: RunState = "finished"
    kind: RunKind | None = None
    versions: RunVersions = Field(default_factory=RunVersions)
    #: The file name (in the record's folder) of the run's journal of finished cases.
    journal: str | None = None
    gate: GateRecord | None = None
    executor: ExecutorInfo | None = None
    adk_file: str | None = None
    app_name: str | None = None
    agent: str | None = None
    eval_file: str = ""
    eval_set_id: str
    creation_timestamp: float
    cancelled: bool = False
    # What the run covered: all | failures (failures only) | selection (some cases) | cancelled.
    coverage: str = "all"
    # Seconds the whole run took (wall clock).
    duration: float = 0.0
    criteria: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)
    config_source: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    repetition: int = 1
    num_runs: int = 1
    wall_seconds: float | None = None
    #: What produced the run (agent folder or replay file, models, judge credentials): store.provenance.
    source: dict[str, JsonValue] | None = None
    insight: dict[str, JsonValue] | None = None
    code_state: dict[str, JsonValue] | None = None
    code_diff_file: str | None = None
