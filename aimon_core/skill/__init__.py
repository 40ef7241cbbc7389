"""Skills: SKILL.md folders parsed, layered by priority, rendered into prompts."""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr

if TYPE_CHECKING:
    from aimon_core.skill._hooks import parse_hooks
    from aimon_core.skill._layers import (
        Candidate,
        LayeredRegistry,
        disabling_name,
        layer_folders,
        list_folder,
    )
    from aimon_core.skill._materialize import (
        BUNDLED_DIR,
        materialize_bundle,
    )
    from aimon_core.skill._model import (
        DEFAULT_MAX_ITERATIONS,
        DefinitionHooks,
        DenyAction,
        HookAction,
        Layer,
        ListingEntry,
        LoadFailure,
        ShellAction,
        Skill,
        SkillError,
        SkillExecution,
        SkillHooks,
        SkillInvocation,
    )
    from aimon_core.skill._parse import (
        parse_skill,
    )
    from aimon_core.skill._registry import (
        SkillRegistry,
        SkillRoots,
        bundle_index,
        bundle_root,
        default_roots,
        hooked_skills,
        load_skills,
        scan_skill_folder,
    )
    from aimon_core.skill._render import (
        RenderContext,
        ToolIntersectionError,
        intersect_tools,
        render_skill,
        split_arguments,
        supporting_files,
    )

# Every name loads on first use: loading the registry at start-up never imports the
# renderer or the bundle copier (~2 ms each on this machine).
_LAZY = {
    "BUNDLED_DIR": "_materialize",
    "Candidate": "_layers",
    "DEFAULT_MAX_ITERATIONS": "_model",
    "DefinitionHooks": "_model",
    "DenyAction": "_model",
    "HookAction": "_model",
    "Layer": "_model",
    "LayeredRegistry": "_layers",
    "ListingEntry": "_model",
    "LoadFailure": "_model",
    "RenderContext": "_render",
    "ShellAction": "_model",
    "Skill": "_model",
    "SkillError": "_model",
    "SkillExecution": "_model",
    "SkillHooks": "_model",
    "SkillInvocation": "_model",
    "SkillRegistry": "_registry",
    "SkillRoots": "_registry",
    "ToolIntersectionError": "_render",
    "bundle_index": "_registry",
    "bundle_root": "_registry",
    "disabling_name": "_layers",
    "layer_folders": "_layers",
    "list_folder": "_layers",
    "default_roots": "_registry",
    "hooked_skills": "_registry",
    "intersect_tools": "_render",
    "load_skills": "_registry",
    "materialize_bundle": "_materialize",
    "parse_hooks": "_hooks",
    "parse_skill": "_parse",
    "render_skill": "_render",
    "scan_skill_folder": "_registry",
    "split_arguments": "_render",
    "supporting_files": "_render",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "BUNDLED_DIR",
    "DEFAULT_MAX_ITERATIONS",
    "Candidate",
    "DefinitionHooks",
    "DenyAction",
    "HookAction",
    "Layer",
    "LayeredRegistry",
    "ListingEntry",
    "LoadFailure",
    "RenderContext",
    "ShellAction",
    "Skill",
    "SkillError",
    "SkillExecution",
    "SkillHooks",
    "SkillInvocation",
    "SkillRegistry",
    "SkillRoots",
    "ToolIntersectionError",
    "bundle_index",
    "bundle_root",
    "default_roots",
    "disabling_name",
    "hooked_skills",
    "intersect_tools",
    "layer_folders",
    "list_folder",
    "load_skills",
    "materialize_bundle",
    "parse_hooks",
    "parse_skill",
    "render_skill",
    "scan_skill_folder",
    "split_arguments",
    "supporting_files",
]
