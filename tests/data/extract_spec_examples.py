"""Regenerates ``spec_examples.json``: every JSON object embedded in the founding spec texts, in order.

Usage: ``python tests/data/extract_spec_examples.py PATH/TO/seeds``. The texts themselves stay outside the
repository; the tests read only the JSON written here, so they run on any clone.

Extraction: every JSON object in a text is found by trying ``json.JSONDecoder.raw_decode`` at each ``{`` and
keeping the outermost objects that parse; that covers fenced ``json`` blocks as well as objects pasted into running
text or after HTTP header lines. A text that prefixes every line with ``"NN | "`` has the prefix removed first; a
text that ends with ``schema.ts`` is cut where that starts (TypeScript, not JSON).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).with_name("spec_examples.json")
_LINE_PREFIX = re.compile(r"^\d+ \| ?", re.MULTILINE)
_DECODER = json.JSONDecoder()


def seed_texts(seeds: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(seeds.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        if _LINE_PREFIX.search(text):
            text = _LINE_PREFIX.sub("", text)
        schema_start = text.find("/* JSON-RPC types */")
        if schema_start >= 0:
            text = text[:schema_start]
        yield path.name, text


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """The outermost non-empty JSON objects embedded in ``text``, in order."""
    pos = text.find("{")
    while pos >= 0:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict) and value:
            yield value
        pos = text.find("{", end)


def main(seeds: Path) -> None:
    examples = {name: list(json_objects(text)) for name, text in seed_texts(seeds)}
    OUTPUT.write_text(json.dumps(examples, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUTPUT}: {sum(map(len, examples.values()))} objects from {len(examples)} texts")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: extract_spec_examples.py PATH/TO/seeds")
    main(Path(sys.argv[1]))
