#!/usr/bin/env bash
# Renders a real --timeline SVG in headless Chromium and checks that the screenshot shows
# the drawing (enough ink, and the colors of committed bars and lock waits), and that the
# file parses as XML. A missing tool is a failure, not a skip: CI installs them with
# `sh tools/setup.sh --tests`.
#
#   render_svg.sh DEDUPSIM_BINARY PNG_INK_SCRIPT
set -euo pipefail
dedupsim=$1
png_ink=$2

for tool in chromium xmllint python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "FAIL: $tool is not installed (run: sh tools/setup.sh --tests)"
    exit 1
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$dedupsim" run concurrent crash-before-commit --timeline "$work/timeline.svg" >/dev/null
xmllint --noout "$work/timeline.svg"
echo "xmllint: timeline.svg is well-formed XML"

height=$(sed -n 's/.*<svg [^>]*height="\([0-9]*\).*/\1/p' "$work/timeline.svg" | head -1)
if [ -z "$height" ]; then
  echo "FAIL: no height on the svg element"
  exit 1
fi

if ! timeout 180 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$work/profile" --screenshot="$work/timeline.png" \
    --window-size=1920,"$height" "file://$work/timeline.svg" >"$work/chromium.log" 2>&1; then
  echo "FAIL: chromium could not take the screenshot:"
  tail -20 "$work/chromium.log"
  exit 1
fi
if [ ! -s "$work/timeline.png" ]; then
  echo "FAIL: chromium wrote no screenshot:"
  tail -20 "$work/chromium.log"
  exit 1
fi

python3 "$png_ink" "$work/timeline.png"
