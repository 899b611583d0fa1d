#!/usr/bin/env bash
# Compiles every Swift code block of the documentation: README.md, the DocC
# articles (Sources/*/*.docc/*.md) and the doc comments of Sources/ (```swift
# blocks in /// comments), against the built modules.
#
#   scripts/check-snippets.sh [BUILD_DIR]    BUILD_DIR defaults to .build/debug
#
# Each block becomes the body of a method of a class deriving from
# SnippetContext (Tests/DocSnippets/SnippetContext.swift), which declares the
# few names the samples take as given (a `loop`, a `render` function, ...).
# A block gets the imports of the documentation it is in: TimerKit's for
# TimerKit's docs, TimerKit's and TrustedTime's for TrustedTime's (it is used
# with TimerKit's clocks) and for the README, all three for Countdowns' (it
# is used with both); any other import (Testing, Synchronization) the block
# must show itself.
# All blocks are compiled together to SIL (-emit-sil), so Swift 6's data-race
# checks apply to them too. A block that is a package manifest (its first
# line is `// swift-tools-version...`) is built for real instead: a package
# with that manifest, its path dependency pointed at this checkout, and a
# main.swift importing the products it names. Needs `swift build` first.
# Ends with `N passed, N failed` (one a block).

set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi

BUILD=${1:-.build/debug}
MODULES=$BUILD/Modules
OUT=build/snippets
# The manifest packages live outside this package: SwiftPM scans the tree of
# a target rooted at the package folder (the core's), links included.
PACKAGES=${TMPDIR:-/tmp}/timerkit-snippet-packages
rm -rf "$OUT" "$PACKAGES"
mkdir -p "$OUT/blocks" "$PACKAGES"

for module in TimerKit TrustedTime Countdowns; do
    if [ ! -f "$MODULES/$module.swiftmodule" ]; then
        echo "check-snippets: $MODULES/$module.swiftmodule not found: run swift build first" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
done

# Writes each ```swift block of the files given to $OUT/blocks/NNNN.swift,
# with a first comment line naming where it came from. In .swift files only
# blocks inside /// comments count, with the /// taken off.
extract() {
    awk -v out="$OUT" '
        FNR == 1 { inside = 0 }
        {
            line = $0
            if (FILENAME ~ /\.swift$/) {
                if (line !~ /^[ \t]*\/\/\//) { inside = 0; next }
                sub(/^[ \t]*\/\/\/ ?/, "", line)
            }
            if (!inside && line ~ /^[ \t]*```swift[ \t]*$/) {
                inside = 1
                count++
                file = sprintf("%s/blocks/%04d.swift", out, count)
                start = FNR + 1
                printf "// from %s:%d\n", FILENAME, start > file
                next
            }
            if (inside && line ~ /^[ \t]*```[ \t]*$/) {
                inside = 0
                close(file)
                next
            }
            if (inside) print line > file
        }
    ' "$@"
}

shopt -s nullglob globstar
extract README.md Sources/*/*.docc/*.md Sources/**/*.swift
blocks=("$OUT"/blocks/*.swift)
shopt -u nullglob globstar
if [ ${#blocks[@]} -eq 0 ]; then
    echo "check-snippets: found no Swift code block" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
sources=(Tests/DocSnippets/SnippetContext.swift)
manifests=()
index=0
for block in "${blocks[@]}"; do
    index=$((index + 1))
    origin=$(head -n 1 "$block")
    body=$(tail -n +2 "$block")
    if grep -qE '^// swift-tools-version' <<<"$body"; then
        manifests+=("$block")
        continue
    fi
    # Imports go to the top of the file; declarations that cannot be local
    # (extensions, protocols) too; everything else into the method.
    file=$OUT/Snippet$index.swift
    {
        echo "$origin"
        echo "import TimerKit"
        case "$origin" in
        "// from Sources/TimerKit/"*) ;;
        "// from Sources/Countdowns/"*) echo "import TrustedTime"; echo "import Countdowns" ;;
        *) echo "import TrustedTime" ;;
        esac
        grep -E '^import ' <<<"$body"
        if grep -qE '^(extension|protocol) ' <<<"$body"; then
            grep -vE '^import ' <<<"$body"
        else
            echo "final class Snippet$index: SnippetContext, @unchecked Sendable {"
            echo "    func sample() async throws {"
            grep -vE '^import ' <<<"$body" | sed 's/^/        /'
            echo "    }"
            echo "}"
        fi
    } >"$file"
    sources+=("$file")
done

count=$(( ${#sources[@]} - 1 ))
log=$OUT/compile.log
if swiftc -emit-sil -wmo -o /dev/null -swift-version 6 -module-name DocSnippets \
    -I "$MODULES" -I include -Xcc -fmodule-map-file="$BUILD/CTimerSNTP.build/module.modulemap" \
    "${sources[@]}" >"$log" 2>&1; then
    echo "ok    $count code blocks compile"
    passed=$((passed + count))
else
    # Count the blocks with errors; show each with where it came from.
    bad=$(grep -oE "$OUT/Snippet[0-9]+\.swift:[0-9]+:[0-9]+: error" "$log" | cut -d: -f1 | sort -u)
    nbad=$(grep -c . <<<"$bad" || true)
    for file in $bad; do
        echo "FAIL  $(head -n 1 "$file" | sed 's,^// from ,,'):"
        grep -E "^$file:[0-9]+:[0-9]+: error" "$log" | sed 's/^/      /' | head -n 5
    done
    if [ "$nbad" -eq 0 ]; then
        echo "FAIL  the code blocks do not compile:"
        grep -E 'error:' "$log" | head -n 20
        nbad=1
    fi
    passed=$((passed + count - nbad))
    failed=$((failed + nbad))
fi

# Manifests: a package beside a copy of the manifest, built for real. The
# dependency's path is this checkout, reached through a link named TimerKit
# (a package's identity is the last part of its path).
ln -sfn "$ROOT" "$PACKAGES/TimerKit"
declare -A built=()
for block in "${manifests[@]+"${manifests[@]}"}"; do
    origin=$(head -n 1 "$block" | sed 's,^// from ,,')
    # The same manifest in two places is built once.
    digest=$(tail -n +2 "$block" | sha256sum | cut -d' ' -f1)
    if [ -n "${built[$digest]:-}" ]; then
        echo "${built[$digest]%% *}    $origin: the same manifest as ${built[$digest]#* }"
        if [ "${built[$digest]%% *}" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
        continue
    fi
    package=$PACKAGES/$(basename "$block" .swift)
    name=$(sed -nE 's/.*name: "([^"]+)".*/\1/p' "$block" | head -n 1)
    target=$(grep -A1 -E '\.(executableTarget|target)\(' "$block" | sed -nE 's/.*name: "([^"]+)".*/\1/p' | head -n 1)
    products=$(sed -nE 's/.*\.product\(name: "([^"]+)".*/\1/p' "$block")
    mkdir -p "$package/Sources/$target"
    tail -n +2 "$block" | sed "s,\"\.\./TimerKit\",\"$PACKAGES/TimerKit\"," >"$package/Package.swift"
    {
        for product in $products; do echo "import $product"; done
        echo 'print("ok")'
    } >"$package/Sources/$target/main.swift"
    if swift build --package-path "$package" >"$package/build.log" 2>&1; then
        echo "ok    $origin: a package with this manifest builds ($name: ${products//$'\n'/, })"
        passed=$((passed + 1))
        built[$digest]="ok $origin"
    else
        built[$digest]="FAIL $origin"
        echo "FAIL  $origin: a package with this manifest does not build:"
        grep -E 'error' "$package/build.log" | head -n 5 | sed 's/^/      /'
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
