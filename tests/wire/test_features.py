"""The revision table: every feature is placed, and the projection drops exactly what a revision lacks."""

from __future__ import annotations

import pytest

from trio_mcp._wire.features import FIELDS, REVISIONS, Feature, content_for_revision, has, project
from trio_mcp._wire.versions import KNOWN_VERSIONS


def test_every_feature_has_a_known_first_revision_and_ends_after_it() -> None:
    assert set(REVISIONS) == set(Feature)
    for first, last in REVISIONS.values():
        assert first in KNOWN_VERSIONS
        assert last is None or (last in KNOWN_VERSIONS and first <= last)


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_projection_keeps_a_field_exactly_when_its_revision_has_the_feature(version: str) -> None:
    for kind, fields in FIELDS.items():
        for field, feature in fields.items():
            projected = project(kind, {field: 1, "name": "kept"}, version)
            assert (field in projected) is has(version, feature), (kind, field, version)
            assert projected["name"] == "kept"


def test_the_table_matches_the_spec_where_it_is_easy_to_get_wrong() -> None:
    assert [v for v in KNOWN_VERSIONS if has(v, Feature.BATCHES)] == ["2025-03-26"]  # added, then removed
    assert not has("2026-07-28", Feature.TASKS)
    assert has("2026-07-28", Feature.STRUCTURED_OUTPUT) and not has("2025-03-26", Feature.STRUCTURED_OUTPUT)


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_content_a_revision_lacks_becomes_text(version: str) -> None:
    audio = content_for_revision({"type": "audio", "data": "", "mimeType": "audio/wav"}, version)
    link = content_for_revision({"type": "resource_link", "uri": "file:///a", "name": "a"}, version)
    assert (audio["type"] == "audio") is has(version, Feature.AUDIO_CONTENT)
    assert (link["type"] == "resource_link") is has(version, Feature.RESOURCE_LINKS)
