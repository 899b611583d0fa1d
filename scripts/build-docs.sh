#!/usr/bin/env bash
# Builds the DocC catalog of each Swift library module with the toolchain's
# own `docc` (no package plugin), failing on any warning, and checks that
# every public symbol has a doc comment.
#
#   scripts/build-docs.sh [OUTPUT_DIR]     default build/docs; one archive a module
#
# Builds the package with its tests first; symbol graphs come from
# `swift package dump-symbol-graph`. Ends with
# `N passed, N failed` (one check a module for the catalog, one for coverage).

set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi

OUTPUT=${1:-build/docs}
MODULES=(TimerKit TrustedTime Countdowns)
passed=0
failed=0
mkdir -p build

# dump-symbol-graph emits a graph for every module, the package's test
# module among them, which a plain `swift build` leaves unbuilt.
if ! swift build --build-tests >build/docs-build.log 2>&1; then
    cat build/docs-build.log >&2
    echo "build-docs: swift build --build-tests failed" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
if ! swift package dump-symbol-graph --minimum-access-level public >build/docs-symbol-graph.log 2>&1; then
    cat build/docs-symbol-graph.log >&2
    echo "build-docs: swift package dump-symbol-graph failed" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
graphs=$(sed -n 's/^Files written to //p' build/docs-symbol-graph.log | tail -n 1)
if [ -z "$graphs" ] || [ ! -d "$graphs" ]; then
    echo "build-docs: no symbol graph folder in the output of dump-symbol-graph" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

for module in "${MODULES[@]}"; do
    catalog=Sources/$module/$module.docc
    own=build/docs-symbols/$module
    rm -rf "$own" "$OUTPUT/$module.doccarchive"
    mkdir -p "$own" "$OUTPUT"
    # The module's own graphs: its symbols, and its extensions of others.
    cp "$graphs/$module.symbols.json" "$own/"
    for extension in "$graphs/$module"@*.symbols.json; do
        [ -e "$extension" ] && cp "$extension" "$own/"
    done
    if docc convert "$catalog" --additional-symbol-graph-dir "$own" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.timerkit.$module" \
        --output-path "$OUTPUT/$module.doccarchive" --warnings-as-errors; then
        echo "ok    $module: $catalog builds with no warning"
        passed=$((passed + 1))
    else
        echo "FAIL  $module: docc reported the problems above"
        failed=$((failed + 1))
    fi
    # Every public symbol written in the module has a doc comment (inherited
    # docs of a protocol requirement count: sourceOrigin).
    undocumented=$(python3 - "$own/$module.symbols.json" <<'PY'
import json, sys
graph = json.load(open(sys.argv[1]))
if not graph["symbols"]:
    sys.exit("no symbols in " + sys.argv[1])
for symbol in graph["symbols"]:
    # Synthesized members (Hashable, literal initializers) have no location.
    if symbol.get("docComment") or symbol.get("sourceOrigin") or "location" not in symbol:
        continue
    print("  " + "/".join(symbol["pathComponents"]) + "  (" + symbol["kind"]["displayName"] + ")")
PY
)
    coverage_status=$?
    if [ "$coverage_status" -ne 0 ]; then
        echo "FAIL  $module: could not read the symbol graph (python3 exited $coverage_status)"
        failed=$((failed + 1))
    elif [ -z "$undocumented" ]; then
        echo "ok    $module: every public symbol is documented"
        passed=$((passed + 1))
    else
        echo "FAIL  $module: public symbols without a doc comment:"
        echo "$undocumented"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
