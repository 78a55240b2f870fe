"""What both sides of the skills extension (SEP-2640, ``io.modelcontextprotocol/skills``) agree on, without I/O.

A skill is a folder whose ``SKILL.md`` starts with YAML frontmatter (``name``, ``description``, anything else
the author wrote); over MCP each file is a resource, and a ``Skill`` entry lists every file with the SHA-256
digest and byte size of its content, so a client can verify what it reads. YAML is parsed with PyYAML (the
``skills`` extra), loaded on first use, and read as YAML 1.2's core schema reads it (``yes`` stays a string, a
date stays a string), as the other SDKs' parsers do: the frontmatter of an entry must equal the file's, field by
field, on either side.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

from .errors import TrioMcpError
from .skills import Skill, SkillResource

__all__ = [
    "SKILLS_EXTENSION_ID",
    "SKILL_FILE",
    "DIRECTORY_MIME_TYPE",
    "SkillsExtraMissing",
    "FrontmatterError",
    "digest_of",
    "parse_frontmatter",
    "check_skill_name",
    "skill_to_wire",
    "skill_from_wire",
]

SKILLS_EXTENSION_ID: Final = "io.modelcontextprotocol/skills"
SKILL_FILE: Final = "SKILL.md"
#: The ``mimeType`` of a directory resource (``resources/directory/read``).
DIRECTORY_MIME_TYPE: Final = "inode/directory"

#: The Agent Skills naming rule for a skill's ``name`` (and so the last segment of its path).
_NAME: Final = re.compile(r"^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_FRONTMATTER: Final = re.compile(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)
_YAML_BOOL: Final = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class SkillsExtraMissing(TrioMcpError, ImportError):
    """Skills need PyYAML to read ``SKILL.md`` frontmatter, and the ``skills`` extra is not installed."""


class FrontmatterError(TrioMcpError, ValueError):
    """A ``SKILL.md`` has no YAML frontmatter, or frontmatter without the fields a skill must have."""


def digest_of(data: bytes) -> str:
    """The digest a ``SkillResource`` carries: ``sha256:`` and 64 lowercase hex digits of the raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_skill_name(name: object, where: str) -> str:
    """``name`` if it follows the Agent Skills naming rule (1-64 of a-z, 0-9 and single inner hyphens)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise FrontmatterError(
            f"{where}: the skill name {name!r} must be 1-64 lowercase letters, digits and single hyphens "
            "(not at either end)"
        )
    return name


_loader: Any = None


def _yaml_loader() -> Any:
    """PyYAML's safe loader, resolving plain scalars as YAML 1.2's core schema does (built once)."""
    global _loader
    if _loader is None:
        try:
            import yaml
        except ImportError:
            raise SkillsExtraMissing("skills read YAML frontmatter: pip install 'trio-mcp[skills]'") from None

        class CoreLoader(yaml.SafeLoader):
            pass

        resolvers: dict[Any, list[tuple[str, Any]]] = {}
        for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items():
            kept = [(tag, regexp) for tag, regexp in entries if tag not in _YAML_11_ONLY]
            if kept:
                resolvers[first] = kept
        CoreLoader.yaml_implicit_resolvers = resolvers
        CoreLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _YAML_BOOL, list("tTfF"))
        _loader = CoreLoader
    return _loader


#: Implicit tags of YAML 1.1 that 1.2's core schema does not have (``yes``/``no`` booleans, timestamps).
_YAML_11_ONLY: Final = frozenset({"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"})


def parse_frontmatter(text: str, where: str) -> dict[str, Any]:
    """The YAML frontmatter at the top of a ``SKILL.md`` as a JSON object, with a non-empty ``name`` and
    ``description``; ``FrontmatterError`` naming ``where`` otherwise."""
    match = _FRONTMATTER.match(text[1:] if text.startswith("\ufeff") else text)
    if match is None:
        raise FrontmatterError(f"{where} does not start with YAML frontmatter between '---' lines")
    loader = _yaml_loader()
    import yaml  # present: _yaml_loader() raised otherwise

    try:
        data = yaml.load(match.group(1), Loader=loader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"{where}: the frontmatter is not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise FrontmatterError(f"{where}: the frontmatter must be a YAML mapping, not {type(data).__name__}")
    for field in ("name", "description"):
        if not isinstance(data.get(field), str) or not data[field]:
            raise FrontmatterError(f"{where}: the frontmatter needs a non-empty string {field!r}")
    _check_json(data, where)
    return data


def _check_json(value: object, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise FrontmatterError(f"{where}: frontmatter keys must be strings, not {key!r}")
            _check_json(item, where)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, where)
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise FrontmatterError(f"{where}: {value!r} in the frontmatter has no JSON form")


def skill_to_wire(skill: Skill) -> dict[str, Any]:
    """A ``Skill`` as ``skills/list`` and ``skills/get`` send it."""
    resources: Any = (
        "dynamic"
        if skill.resources == "dynamic"
        else [{"uri": item.uri, "digest": item.digest, "size": item.size} for item in skill.resources]
    )
    return {"uri": skill.uri, "frontmatter": dict(skill.frontmatter), "resources": resources}


def skill_from_wire(data: object) -> Skill:
    """A ``Skill`` entry a server sent, checked field by field; ``ValueError`` saying what is wrong."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a skill entry must be an object, not {type(data).__name__}")
    uri = data.get("uri")
    if not isinstance(uri, str) or not uri.endswith("/" + SKILL_FILE):
        raise ValueError(f"a skill entry's uri must name its SKILL.md, not {uri!r}")
    frontmatter = data.get("frontmatter")
    if not isinstance(frontmatter, Mapping) or not all(
        isinstance(frontmatter.get(field), str) for field in ("name", "description")
    ):
        raise ValueError(f"{uri}: frontmatter must be an object with a string name and description")
    if uri.rsplit("/", 2)[-2] != frontmatter["name"]:
        raise ValueError(f"{uri}: the last path segment is not the frontmatter name {frontmatter['name']!r}")
    raw = data.get("resources")
    if raw == "dynamic":
        return Skill(uri=uri, frontmatter=dict(frontmatter), resources="dynamic")
    if not isinstance(raw, list):
        raise ValueError(f"{uri}: resources must be a list or 'dynamic', not {raw!r}")
    root = uri[: -len(SKILL_FILE)]
    files: list[SkillResource] = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise ValueError(f"{uri}: a resources entry must be an object, not {item!r}")
        file_uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        if not isinstance(file_uri, str) or not file_uri.startswith(root):
            raise ValueError(f"{uri}: {file_uri!r} is not a file of the skill")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise ValueError(f"{uri}: {file_uri} has no sha256 digest ({digest!r})")
        if type(size) is not int or size < 0:
            raise ValueError(f"{uri}: {file_uri} has no byte size ({size!r})")
        files.append(SkillResource(uri=file_uri, digest=digest, size=size))
    if uri not in {item.uri for item in files}:
        raise ValueError(f"{uri}: resources does not list the SKILL.md itself")
    return Skill(uri=uri, frontmatter=dict(frontmatter), resources=files)
