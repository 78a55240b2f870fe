"""Wire-level plumbing: protocol revisions, the converter between wire dicts and types, the method registry."""
