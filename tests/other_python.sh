#!/usr/bin/env bash
# Runs the suite, less the interop and benchmark smoke tests, on another Python than .venv's, in its own virtual
# environment (.venv-lowest/ or .venv-<version>/) with this checkout on PYTHONPATH:
#   other_python.sh lowest 3.10   each `name >= X` of install_requires (and of the `auth`, `redis`, `otel` and `skills`
#                                 extras, which the tests exercise; the OpenTelemetry SDK at the API's floor) as `name == X`,
#                                 so the declared floors stay installable and true;
#   other_python.sh newest 3.13   the newest releases of everything the `test` extra names, upgraded on each run.
# The interpreter is python<version> on PATH, else pyenv's latest <version>. Further arguments go to pytest;
# TRIO_MCP_XDIST (default 2) is the number of pytest-xdist workers (0: none).
# (mypy: tests/docs type-checks the documentation's code against the versions installed here.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:?usage: other_python.sh lowest|newest VERSION [pytest args]}"
VERSION="${2:?usage: other_python.sh lowest|newest VERSION [pytest args]}"
shift 2
cd "$ROOT"

interpreter() {
    if "python$VERSION" -c '' 2>/dev/null; then
        command -v "python$VERSION"
    elif command -v pyenv >/dev/null && prefix="$(pyenv prefix "$(pyenv latest "$VERSION" 2>/dev/null)" 2>/dev/null)"; then
        echo "$prefix/bin/python"
    else
        echo "no Python $VERSION here: install it (pyenv install $VERSION) or put python$VERSION on PATH" >&2
        return 1
    fi
}
PYTHON="$(interpreter)"
case "$MODE" in
lowest)
    VENV="$ROOT/.venv-lowest"
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
    tools=(pytest pytest-trio pytest-xdist hypothesis pydantic mypy hypercorn quart-trio build twine)
    stamp="$VENV/.pins"
    wanted="$("$PYTHON" -V) $pins ${tools[*]}"
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
        rm -rf "$VENV"
        "$PYTHON" -m venv "$VENV"
        mapfile -t args <<<"$pins"
        "$VENV/bin/python" -m pip install --quiet "${args[@]}" "${tools[@]}"
        echo "$wanted" >"$stamp"
    fi
    echo "$("$VENV/bin/python" -V), lowest versions: $(echo "$pins" | tr '\n' ' ')"
    ;;
newest)
    VENV="$ROOT/.venv-$VERSION"
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    requirements="$("$PYTHON" -c 'import configparser; c = configparser.ConfigParser(); c.read("setup.cfg"); print(c["options"]["install_requires"] + c["options.extras_require"]["test"])')"
    mapfile -t args < <(grep -v '^\s*$' <<<"$requirements")
    "$VENV/bin/python" -m pip install --quiet --upgrade --upgrade-strategy eager "${args[@]}"
    echo "$("$VENV/bin/python" -V), newest versions: $("$VENV/bin/python" -m pip list --format=freeze | grep -iE '^(trio|h11|trio-websocket|attrs|cattrs)==' | tr '\n' ' ')"
    ;;
*)
    echo "other_python.sh: MODE is lowest or newest, not $MODE" >&2
    exit 2
    ;;
esac

workers=()
[[ "${TRIO_MCP_XDIST:-2}" == 0 ]] || workers=(-n "${TRIO_MCP_XDIST:-2}")
PYTHONPATH="$ROOT" "$VENV/bin/python" -m pytest -q -m "not interop and not bench" -p no:cacheprovider "${workers[@]}" "$@"
