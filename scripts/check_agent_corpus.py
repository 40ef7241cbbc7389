"""Load the real-world agent definitions in ../shared/corpora/agents; compare with expected.json.

Run:  .venv/bin/python scripts/check_agent_corpus.py [CORPUS_DIR]
Not a unit test: the corpus lives outside the repository. Prints one line per mismatch and a
summary; exits 1 if any file that the reference parser reads is rejected or read differently.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from aimon_core.agent import AgentDefinitionError, load_agent_file


def main() -> int:
    here = Path(__file__).resolve().parent.parent
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent / "shared/corpora/agents"
    expected: dict[str, dict[str, object]] = json.loads((corpus / "expected.json").read_text())
    problems: list[str] = []
    loaded = 0
    for rel, want in sorted(expected.items()):
        path = corpus / rel
        try:
            agent = load_agent_file(path)
        except AgentDefinitionError as exc:
            if want.get("name"):
                problems.append(f"{rel}: rejected but expected to load: {exc.reason}")
            continue
        loaded += 1
        if agent.name != want.get("name"):
            problems.append(f"{rel}: name {agent.name!r} != {want.get('name')!r}")
        description = agent.description.strip()[:80].strip()
        if description != str(want.get("description") or "").strip():
            problems.append(f"{rel}: description {description!r} != {want.get('description')!r}")
        tools = None if agent.tools is None else list(agent.tools)
        if tools != want.get("tools"):
            problems.append(f"{rel}: tools {tools!r} != {want.get('tools')!r}")
        model = want.get("model")
        expected_model = None if model in (None, "inherit") else model
        if agent.model.name != expected_model:
            problems.append(f"{rel}: model {agent.model.name!r} != {expected_model!r}")
    for line in problems:
        print(line)
    print(f"{loaded} of {len(expected)} agent files loaded; {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
