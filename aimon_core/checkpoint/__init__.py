"""Checkpoints: a snapshot of the project before every prompt, and restoring one.

The snapshot is of the tree (files, modes, symlinks), not of aimon's own edits, so changes
made through Bash, hooks and MCP tools are covered too. Snapshots live in a content-addressed
store under aimon's data folder, keyed by project; the user's repository (its `.git`, index,
stash and branches) is never read or written.
"""

from aimon_core.checkpoint._fork import fork_conversation, fork_point
from aimon_core.checkpoint._journal import Checkpoint, CheckpointJournal, JournalEntry, Restored
from aimon_core.checkpoint._prune import (
    CheckpointLimits,
    PruneReport,
    checkpoints_folder,
    checkpoints_for,
    delete_session_checkpoints,
    prune_project,
    session_checkpoints,
)
from aimon_core.checkpoint._restore import (
    ChangeKind,
    FileChange,
    RestoreReport,
    compare,
    restore,
    unified_diff,
)
from aimon_core.checkpoint._session import (
    RestorePlan,
    SessionCheckpoints,
    checkpoint_rules,
    checkpointed,
)
from aimon_core.checkpoint._tree import (
    DEFAULT_EXCLUDES,
    CheckpointError,
    CheckpointStore,
    Entry,
    Snapshot,
    TreeRules,
    TreeTooLargeError,
)

__all__ = [
    "DEFAULT_EXCLUDES",
    "ChangeKind",
    "Checkpoint",
    "CheckpointError",
    "CheckpointJournal",
    "CheckpointLimits",
    "CheckpointStore",
    "Entry",
    "FileChange",
    "JournalEntry",
    "PruneReport",
    "RestorePlan",
    "RestoreReport",
    "Restored",
    "SessionCheckpoints",
    "Snapshot",
    "TreeRules",
    "TreeTooLargeError",
    "checkpoint_rules",
    "checkpointed",
    "checkpoints_folder",
    "checkpoints_for",
    "compare",
    "delete_session_checkpoints",
    "fork_conversation",
    "fork_point",
    "prune_project",
    "restore",
    "session_checkpoints",
    "unified_diff",
]
