"""What the workflow tests share: a project, a runtime on a scripted model, a routed script."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from aimon_core.agent import AgentEvent
from aimon_core.llm import LLMRequest, LLMResponse, ScriptedLLMClient, TextBlock
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.runtime._workflows import WorkflowScope
from aimon_core.workflow import MemoryRunStore, RunStore

SURVEY = """\
name: survey
stages:
  - name: explore
    tasks:
      - {agent: explore, prompt: "List the functions in calc.py"}
      - {agent: explore, prompt: "List the tests in test_calc.py"}
  - name: report
    tasks:
      - agent: general-purpose
        prompt: "Summarise: {{stages.explore.tasks.0.output}} / {{stages.explore.tasks.1.output}}"
"""

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('calc ok')\n"


def make_project(root: Path, workflows: Mapping[str, str] | None = None) -> Path:
    """Make a project with calc.py, test_calc.py and the given workflow files."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TEST_CALC)
    folder = root / ".aimon" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (workflows or {"survey": SURVEY}).items():
        (folder / f"{name}.yaml").write_text(text)
    return root


def git(cwd: Path, *args: str) -> str:
    """Run git for the test (never for the model), with a fixed identity."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=30, check=True)
    return done.stdout


def make_repo(root: Path, workflows: Mapping[str, str] | None = None) -> Path:
    """Make the project a git repository with one commit on main."""
    make_project(root, workflows)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def first_prompt(request: LLMRequest) -> str:
    """Return the text of the first user message of a request (the task's prompt)."""
    first = request.messages[0]
    return "".join(b.text for b in first.content if isinstance(b, TextBlock))


Answer = Callable[[LLMRequest], LLMResponse]


def by_prompt(routes: Mapping[str, Answer | list[LLMResponse]], calls: int
              ) -> ScriptedLLMClient:
    """A scripted client that answers each request by the first route its task prompt holds.

    A route is a function of the request or a list of responses taken in order.
    """

    def step(request: LLMRequest) -> LLMResponse:
        prompt = first_prompt(request)
        for marker, route in routes.items():
            if marker in prompt:
                return route(request) if callable(route) else route.pop(0)
        raise AssertionError(f"no route for a task prompt {prompt!r}")

    return ScriptedLLMClient(steps=[step] * calls)


def assemble(root: Path, client: ScriptedLLMClient, *allowed: str,
             store: RunStore | None = None, max_tasks: int = 4,
             mode: str | None = None, sandbox: bool = False, model: str | None = None
             ) -> AgentAssembly:
    """Build the project's default runtime on `client`, its runs kept in `store`; `model`
    names the model (a priced one makes responses cost something)."""
    scope = WorkflowScope(store or MemoryRunStore(), max_tasks=max_tasks)
    flags = RuntimeFlags(allowed=allowed, permission_mode=mode, sandbox=sandbox)
    return build_runtime(root, flags=flags, parts=RuntimeParts(client=client, workflows=scope,
                                                               model=model))


def events_of(kind: type, events: list[AgentEvent]) -> list:  # type: ignore[type-arg]
    """Return the events of one type."""
    return [e for e in events if isinstance(e, kind)]


class HeldClient:
    """A scripted client whose model calls wait at `gate` until the test opens it; `arrived`
    is set as soon as one does. For tests that interrupt work while the model is asked."""

    def __init__(self, inner: ScriptedLLMClient) -> None:
        import asyncio

        self.inner = inner
        self.provider = inner.provider
        self.arrived = asyncio.Event()
        self.gate = asyncio.Event()

    async def call(self, request: LLMRequest) -> LLMResponse:
        self.arrived.set()
        await self.gate.wait()
        return await self.inner.call(request)

    async def stream(self, request: LLMRequest):  # type: ignore[no-untyped-def]
        self.arrived.set()
        await self.gate.wait()
        async for event in self.inner.stream(request):
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()
