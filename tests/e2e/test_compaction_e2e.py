"""End to end: one `aimon -p` process runs a 200-iteration turn in a 20k-token window.

The loopback server plays the model: a Read call per iteration, a summary whenever aimon
asks for one, and usage equal to the size of what it received, as a provider reports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from aimon_core.session import FileSessionRecordStore
from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall

from .conftest import AIMON, MODEL_ARGS, PROVIDER, aimon_env

WINDOW = 20_000
ITERATIONS = 200
SUMMARY_SYSTEM_START = "You write the working memory"
FILES = 5


def request_tokens(body: Any) -> int:
    """Return a generous count of a request's tokens: its whole JSON body, 4 characters each."""
    return len(json.dumps(body, ensure_ascii=False)) // 4


def is_summary(request: RecordedRequest) -> bool:
    return request.system_text().startswith(SUMMARY_SYSTEM_START)


class Model:
    """Answers each request: a summary, the next Read call, or after 200 of them the answer."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.calls = 0
        self.summaries = 0
        self.sizes: list[tuple[bool, int]] = []
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        tokens = request_tokens(request.body)
        with self.lock:
            summary = is_summary(request)
            self.sizes.append((summary, tokens))
            if summary:
                self.summaries += 1
                return Reply(text=f"Summary {self.summaries}: read the files; keep reading.",
                             input_tokens=tokens, output_tokens=40)
            self.calls += 1
            if self.calls > ITERATIONS:
                return Reply(text="Read them all.", input_tokens=tokens)
            path = str(self.project / f"f{self.calls % FILES}.txt")
            return Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": path}),),
                         input_tokens=tokens, output_tokens=30)


def test_a_200_iteration_turn_stays_inside_a_20k_window(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".aimon").mkdir(parents=True)
    for n in range(FILES):
        (project / f"f{n}.txt").write_text("".join(f"file {n} line {i}: {'x' * 40}\n"
                                                   for i in range(80)))
    (project / ".aimon" / "settings.json").write_text(
        json.dumps({"compaction": {"contextWindow": WINDOW}}))
    model = Model(project)
    with LoopbackModelServer(model, provider=PROVIDER) as server:
        done = subprocess.run(
            [AIMON, *MODEL_ARGS, "-p", "read every file, many times",
             "--max-iterations", str(ITERATIONS + 5), "--output-format", "stream-json"],
            cwd=project, env=aimon_env(server), capture_output=True, text=True, timeout=240,
            check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    result = lines[-1]
    assert result["type"] == "result" and result["result"] == "Read them all."
    assert result["num_iterations"] == ITERATIONS + 1
    compactions = [line for line in lines if line["type"] == "compaction"]
    assert len(compactions) >= 5
    assert all(c["trigger"] == "auto" and c["summarised"] for c in compactions)
    assert all(c["tokens_after"] < c["tokens_before"] for c in compactions)
    assert model.summaries == len(compactions)
    biggest = max(tokens for _, tokens in model.sizes)
    assert biggest < WINDOW, f"a request of {biggest} tokens passed the {WINDOW}-token window"
    # The summaries are part of the turn's cost.
    assert result["usage"]["input_tokens"] == sum(tokens for _, tokens in model.sizes)
    store = FileSessionRecordStore(Path(os.environ["AIMON_HOME"]) / "data")
    record = store.load(result["session_id"])
    assert record.transcript.messages[0].text.startswith("This session is being continued")
    assert record.compaction_failure_count == 0
