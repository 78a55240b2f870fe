#!/usr/bin/env bash
# Runs the suite (less the interop and benchmark smoke tests) against the lowest versions setup.cfg declares for the runtime
# dependencies, so the floors stay installable and true. Each `name >= X` of install_requires (and of the `auth`,
# `redis`, `otel` and `skills` extras, which the tests exercise; the OpenTelemetry SDK at the API's floor) is installed as
# `name == X` into .venv-lowest/, then pytest runs
# there with PYTHONPATH pointing at this checkout. (mypy: tests/docs type-checks the documentation's code against
# these floors.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv-lowest"
cd "$ROOT"

pins="$("$PYTHON" - <<'PY'
import configparser
cfg = configparser.ConfigParser()
cfg.read("setup.cfg")
lines = cfg["options"]["install_requires"].strip().splitlines()
lines += cfg["options.extras_require"]["auth"].strip().splitlines()
lines += cfg["options.extras_require"]["redis"].strip().splitlines()
lines += cfg["options.extras_require"]["otel"].strip().splitlines()
lines += cfg["options.extras_require"]["skills"].strip().splitlines()
for line in lines:
    spec, _, marker = line.partition(";")
    name, _, floor = spec.partition(">=")
    pin = f"{name.strip()}=={floor.strip()}" if floor else spec.strip()
    print(f"{pin};{marker}" if marker else pin)
    if name.strip() == "opentelemetry-api":
        print(f"opentelemetry-sdk=={floor.strip()}")
PY
)"
tools=(pytest pytest-trio hypothesis pydantic mypy hypercorn quart-trio build twine)
stamp="$VENV/.pins"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$pins ${tools[*]}" ]]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    mapfile -t args <<<"$pins"
    "$VENV/bin/python" -m pip install --quiet "${args[@]}" "${tools[@]}"
    echo "$pins ${tools[*]}" >"$stamp"
fi
echo "lowest versions: $(echo "$pins" | tr '\n' ' ')"
PYTHONPATH="$ROOT" "$VENV/bin/python" -m pytest -q -m "not interop and not bench" -p no:cacheprovider "$@"
