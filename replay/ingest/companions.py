"""Files a supported harness writes beside its logs that hold no agent run (its "companions").

When ingest expands a folder, a file whose path ends as one of these rules says, and that no reader sniffs as its own,
is skipped and counted instead of reported as an unknown format. A file named on the command line is never skipped
here: it is read, and an error if it is not a log. Each rule is one file name (or name shape) taken from the writer in
the harness's own source; nothing is matched by extension alone.

| harness | file (``<id>``: the instance folder's own name) | writer |
|---|---|---|
| mini-swe-agent | ``preds.json`` | run/benchmarks/swebench.py ``update_preds_file`` |
| mini-swe-agent | ``exit_statuses_<unix time>.yaml`` | run/benchmarks/swebench.py and programbench.py ``main``,
  written by utils/batch_progress.py ``RunBatchProgressManager._save_overview_data_yaml`` |
| mini-swe-agent | ``minisweagent.log`` | run/benchmarks/swebench.py ``main`` (utils/log.py ``add_file_handler``) |
| mini-swe-agent | ``<id>/submission.tar.gz`` | run/benchmarks/programbench.py ``copy_submission`` |
| SWE-agent | ``preds.json`` | run/merge_predictions.py ``merge_predictions`` (from run/run_batch.py
  ``RunBatch.main``) |
| SWE-agent | ``tmppreds.json`` | run/hooks/swe_bench_evaluate.py ``SweBenchEvaluate.on_instance_completed`` |
| SWE-agent | ``run_batch.log`` | run/run_batch.py ``RunBatch.__init__`` (``add_file_handler``) |
| SWE-agent | ``run_batch_exit_statuses.yaml`` | run/run_batch.py ``RunBatch.__init__``, written by run/_progress.py
  ``RunBatchProgressManager._save_overview_data_yaml`` |
| SWE-agent | ``run_batch.config.yaml`` | run/run_batch.py ``RunBatch.from_config`` |
| SWE-agent | ``<id>/<id>.config.yaml`` | run/run_batch.py ``RunBatch._run_instance`` |
| SWE-agent | ``<id>/<id>.{trace,debug,info}.log`` | run/run_batch.py ``RunBatch._add_instance_log_file_handlers``,
  run/run_single.py ``RunSingle.__init__`` |
| SWE-agent | ``<id>/<id>.pred`` | run/common.py ``save_predictions`` |
| SWE-agent | ``<id>/<id>.patch`` | run/hooks/apply_patch.py ``SaveApplyPatchHook._save_patch`` |
| SWE-agent | ``<id>/config.yaml`` | run/run_single.py ``RunSingle.run`` |
| inspect_ai | ``logs.json`` | log/_file.py ``write_log_dir_manifest`` |
| inspect_ai | ``listing.json`` | log/_file.py ``write_log_listing`` |
| inspect_ai | ``eval-set.json`` | _eval/evalset.py ``write_eval_set_info`` |
| OpenHands (eval) | ``metadata.json`` | evaluation/utils/shared.py ``make_metadata`` |
| OpenHands (eval) | ``maximum_retries_exceeded.jsonl`` | evaluation/utils/shared.py
  ``log_skipped_maximum_retries_exceeded`` |
| OpenHands (eval) | ``{logs,infer_logs}/instance_<id>.log`` | evaluation/utils/shared.py
  ``reset_logger_for_multiprocessing`` |
| OpenHands (eval) | ``<output>.swebench.jsonl`` | evaluation/benchmarks/swe_bench/scripts/eval/
  convert_oh_output_to_swe_json.py |
| Gemini CLI | ``logs.json`` | packages/core/src/core/logger.ts ``Logger._updateLogFile`` |
| Gemini CLI | ``shell_history`` | packages/cli/src/ui/hooks/useShellHistory.ts ``writeHistoryFile`` |
| Gemini CLI | ``checkpoints/<time>-<file>-<tool>.json`` (a restore point before a file edit: a copy of the
  conversation, not a run) | packages/cli/src/ui/hooks/useGeminiStream.ts (0.3.4; later
  packages/core/src/utils/checkpointUtils.ts) |
| Gemini CLI | ``tool-outputs/[session-<id>/]<tool>_<call id>_<random>.txt`` | packages/core/src/context/
  toolOutputMaskingService.ts ``ToolOutputMaskingService.mask`` |
| Copilot CLI | ``<session uuid>/workspace.yaml``, ``plan.md``, ``autopilot-objective.json``,
  ``client-metadata.json``, ``session.db``, ``checkpoints/index.md``, ``checkpoints/[checkpoint-]<n>*.md`` |
  @github/copilot 1.0.102 cli-main.js (minified): the session workspace writer and ``copySessionFsOptionalFile``,
  ``checkpointIndexFromName`` |

| Codex CLI | ``history.jsonl`` | codex-rs/core/src/message_history.rs ``append_entry`` (Claude Code writes its prompt
  history under the same name in ``~/.claude``) |
| Codex CLI | ``session_index.jsonl`` | codex-rs/core/src/rollout/session_index.rs ``append_session_index_entry`` |
| Codex CLI | ``log/codex-tui.log`` | codex-rs/tui/src/lib.rs ``run_main`` |
| Codex CLI | ``version.json`` | codex-rs/tui/src/updates.rs ``check_for_update``, ``dismiss_version`` |
| Codex CLI | ``models_cache.json`` | codex-rs/models-manager/src/manager.rs ``OpenAiModelsManager::new`` (cache.rs
  ``ModelsCacheManager::persist_cache``) |
| Codex CLI | ``auth.json`` | codex-rs/login/src/auth/storage.rs ``FileAuthStorage::save`` |
| Codex CLI | ``config.toml`` | codex-rs/core/src/config/edit.rs (``ConfigEdit`` persistence) |
| Codex CLI | ``{state,logs,goals,memories}_<n>.sqlite`` (and SQLite's ``-wal``/``-shm``) | codex-rs/state/src/lib.rs
  ``STATE_DB_FILENAME``, ``LOGS_DB_FILENAME``, ``GOALS_DB_FILENAME``, ``MEMORIES_DB_FILENAME`` |
| Claude Code | ``<session>/subagents/[<dir>/...]agent-<id>.meta.json`` (a workflow's agents are in
  ``subagents/workflows/<run id>/``) | @anthropic-ai/claude-code-linux-x64 2.1.332 (minified): the sub-agent
  transcript's path (``subagents/``, the agent's transcript subfolder if it has one, ``agent-<id>.jsonl``) with
  ``.jsonl`` replaced by ``.meta.json`` |
| Claude Code | ``<session>/workflows/<run id>.json`` | 2.1.332: the workflow run's sidecar (``{runId, timestamp,
  ...}``) in the session's ``workflows`` folder |
| Claude Code | ``<session>/workflows/scripts/<name>-<n>.js`` | 2.1.332: the workflow script, in ``workflows/scripts`` |
| Claude Code | ``<session>/remote-agents/remote-agent-<id>.meta.json`` | 2.1.332: the remote agent's metadata |
| Claude Code | ``<session>/tool-results/[<dir>/]<file>`` | 2.1.27 cli.js: a tool result saved to
  ``<project>/<session>/tool-results/<tool use id>`` (``.json`` for block content) when it is too large to send or
  is microcompacted; 2.1.97 cli.js also saves a WebFetch's binary content there
  (``webfetch-<ms>-<random>.<ext>``, an image or a PDF); 2.1.332's cleanup also walks one folder level below |
| Claude Code | ``<session>/{archived,ccr-tip,custom-title,precompact,sent-prefix}.json``, ``resume-head.jsonl``,
  ``auto-mode-classifier-error.txt``; beside the transcript ``<session>.ccr-tip.json``, ``<session>.precompact.json``
  | 2.1.332: the session folder's side files its retention cleanup lists, and the project-level siblings it names |
| Claude Code | ``<session>/mcp-tasks/mcp-task-<id>.{meta,outcome}.json`` | 2.1.332: an MCP task's metadata and
  outcome (``listMcpTaskMetadata``, ``listMcpTaskOutcomes``) |
| Claude Code | ``sessions-index.json`` | 2.1.27 cli.js: the project folder's session index (``{version: 1, entries,
  originalPath}``); 2.1.332 no longer writes it |
| Claude Code | ``<project>/bridge-pointer.json`` | 2.1.80 cli.js: the Remote Control bridge's pointer
  (``{sessionId, environmentId, source}``) in the project folder |
| Claude Code | ``projects/<project>/memory/[<dir>/...]<name>.md`` | 2.1.34 on (cli.js 2.1.38, 2.1.41, 2.1.68): auto
  memory, the project folder's ``memory`` directory (``MEMORY.md`` and the topic files the model writes; 2.1.68
  lists its ``.md`` files recursively) |

A saved tool result and an auto-memory file hold whatever a tool printed or the model wrote, a transcript's lines
among them (a ``git diff`` of one, say): their name alone decides (``any_content``), whatever a reader sniffs.

The workflow journal ``<session>/subagents/workflows/<run id>/journal.jsonl`` is not one: the ``claude-code``
reader reads it (its ``started``/``result`` entries).

Cline needs none: a task folder holding ``ui_messages.json`` is one run, read whole, so the other files
``disk.ts`` ``GlobalFileNames`` names there (``task_metadata.json``, ``context_history.json``) are never listed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from replay.errors import ReplayError
from replay.readers import detect

_ID = r"(?P<id>[^/]+)/(?P=id)"  # <id>/<id>...: a file named after the instance folder it is in
_UUID = r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}"


@dataclass(frozen=True)
class Companion:
    """One kind of file a harness writes beside its logs: ``shown`` in the summary, ``tail`` a regex over the last
    parts of the path ('/'-separated) that must match whole."""

    harness: str
    shown: str
    tail: str
    any_content: bool = False  # the file holds any text (a tool's output): skipped even when a reader sniffs it
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(r"(?:^|/)(?:" + self.tail + r")\Z"))

    def matches(self, path: str) -> bool:
        return self.regex.search(path) is not None


COMPANIONS: tuple[Companion, ...] = (
    Companion("SWE-agent/mini-swe-agent", "preds.json", r"preds\.json"),
    Companion("mini-swe-agent", "exit_statuses_*.yaml", r"exit_statuses_\d+(?:\.\d+)?\.yaml"),
    Companion("mini-swe-agent", "minisweagent.log", r"minisweagent\.log"),
    Companion("mini-swe-agent", "<id>/submission.tar.gz", r"[^/]+/submission\.tar\.gz"),
    Companion("SWE-agent", "tmppreds.json", r"tmppreds\.json"),
    Companion("SWE-agent", "run_batch.log", r"run_batch\.log"),
    Companion("SWE-agent", "run_batch_exit_statuses.yaml", r"run_batch_exit_statuses\.yaml"),
    Companion("SWE-agent", "run_batch.config.yaml", r"run_batch\.config\.yaml"),
    Companion("SWE-agent", "<id>/<id>.config.yaml", _ID + r"\.config\.yaml"),
    Companion("SWE-agent", "<id>/<id>.{trace,debug,info}.log", _ID + r"\.(?:trace|debug|info)\.log"),
    Companion("SWE-agent", "<id>/<id>.pred", _ID + r"\.pred"),
    Companion("SWE-agent", "<id>/<id>.patch", _ID + r"\.patch"),
    Companion("SWE-agent", "<id>/config.yaml", r"[^/]+/config\.yaml"),
    Companion("inspect_ai/Gemini CLI", "logs.json", r"logs\.json"),
    Companion("inspect_ai", "listing.json", r"listing\.json"),
    Companion("inspect_ai", "eval-set.json", r"eval-set\.json"),
    Companion("OpenHands", "metadata.json", r"metadata\.json"),
    Companion("OpenHands", "maximum_retries_exceeded.jsonl", r"maximum_retries_exceeded\.jsonl"),
    Companion("OpenHands", "infer_logs/instance_<id>.log", r"(?:infer_)?logs/instance_[^/]+\.log"),
    Companion("OpenHands", "*.swebench.jsonl", r"[^/]+\.swebench\.jsonl"),
    Companion("Gemini CLI", "shell_history", r"shell_history"),
    Companion("Gemini CLI", "checkpoints/<time>-<file>-<tool>.json", r"checkpoints/[^/]+\.json"),
    Companion(
        "Gemini CLI",
        "tool-outputs/<tool>_<call>_<random>.txt",
        r"tool-outputs/(?:session-[^/]+/)?[^/]+_[^/]+_[0-9a-z]+\.txt",
    ),
    *(
        Companion("Copilot CLI", f"<session>/{name}", _UUID + "/" + re.escape(name))
        for name in ("workspace.yaml", "plan.md", "autopilot-objective.json", "client-metadata.json", "session.db")
    ),
    Companion(
        "Copilot CLI", "<session>/checkpoints/*.md", _UUID + r"/checkpoints/(?:index|(?:checkpoint-)?\d+[^/]*)\.md"
    ),
    Companion("Codex CLI/Claude Code", "history.jsonl", r"history\.jsonl"),
    Companion("Codex CLI", "session_index.jsonl", r"session_index\.jsonl"),
    Companion("Codex CLI", "log/codex-tui.log", r"log/codex-tui\.log"),
    Companion("Codex CLI", "version.json", r"version\.json"),
    Companion("Codex CLI", "models_cache.json", r"models_cache\.json"),
    Companion("Codex CLI", "auth.json", r"auth\.json"),
    Companion("Codex CLI", "config.toml", r"config\.toml"),
    Companion(
        "Codex CLI",
        "{state,logs,goals,memories}_<n>.sqlite",
        r"(?:state|logs|goals|memories)_\d+\.sqlite(?:-wal|-shm)?",
    ),
    Companion(
        "Claude Code", "<session>/subagents/.../agent-<id>.meta.json", r"subagents/(?:[^/]+/)*agent-[^/]+\.meta\.json"
    ),
    Companion("Claude Code", "<session>/workflows/<run id>.json", _UUID + r"/workflows/[^/]+\.json"),
    Companion("Claude Code", "<session>/workflows/scripts/*.js", _UUID + r"/workflows/scripts/[^/]+\.js"),
    Companion(
        "Claude Code",
        "<session>/remote-agents/remote-agent-<id>.meta.json",
        _UUID + r"/remote-agents/remote-agent-[^/]+\.meta\.json",
    ),
    Companion(
        "Claude Code",
        "<session>/tool-results/<file>",
        _UUID + r"/tool-results/(?:[^/]+/)?[^/]+",
        any_content=True,
    ),
    Companion(
        "Claude Code",
        "<session>/<side file>",
        _UUID
        + r"/(?:(?:archived|ccr-tip|custom-title|precompact|sent-prefix)\.json|resume-head\.jsonl"
        + r"|auto-mode-classifier-error\.txt)",
    ),
    Companion("Claude Code", "<session>.{ccr-tip,precompact}.json", _UUID + r"\.(?:ccr-tip|precompact)\.json"),
    Companion(
        "Claude Code",
        "<session>/mcp-tasks/mcp-task-<id>.{meta,outcome}.json",
        _UUID + r"/mcp-tasks/mcp-task-[^/]+\.(?:meta|outcome)\.json",
    ),
    Companion("Claude Code", "sessions-index.json", r"sessions-index\.json"),
    Companion("Claude Code", "<project>/bridge-pointer.json", r"bridge-pointer\.json"),
    Companion(
        "Claude Code", "projects/<project>/memory/*.md", r"projects/[^/]+/memory/(?:[^/]+/)*[^/]+\.md", any_content=True
    ),
)


def rule_for(path: Path) -> Companion | None:
    """The companion rule whose name ``path`` has, whatever its content (``companion_of`` also sniffs it)."""
    text = path.absolute().as_posix()
    return next((c for c in COMPANIONS if c.matches(text)), None)


def companion_of(path: Path) -> Companion | None:
    """The companion rule ``path`` (a file found in a folder) matches, provided no reader sniffs it as its own log
    (unless the rule is ``any_content``); else None. A file that cannot be read is not a companion: ingest reports
    it."""
    rule = rule_for(path)  # absolute: a relative path may lack the folder names a rule needs (``<id>/<id>.patch``)
    if rule is None or rule.any_content:
        return rule
    try:
        return rule if detect(path) is None else None
    except (OSError, ReplayError):
        return None


def summary(found: list[tuple[Path, Companion]]) -> str:
    """One line: how many companions were skipped, by harness and file kind."""
    by_harness: dict[str, Counter[str]] = {}
    for _, c in found:
        by_harness.setdefault(c.harness, Counter())[c.shown] += 1
    parts = "; ".join(
        f"{harness}: " + ", ".join(f"{shown} x{n}" if n > 1 else shown for shown, n in kinds.items())
        for harness, kinds in by_harness.items()
    )
    n = len(found)
    return f"skipped {n} file{'s' if n != 1 else ''} harnesses write beside their logs, holding no run ({parts})"
