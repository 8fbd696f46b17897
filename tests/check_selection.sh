#!/bin/sh
# The `tsan` label's selection (tests/CMakeLists.txt): the labelled test cases and the rest
# split the suite's selection exactly (none lost, none run twice), and every tag of the list
# selects at least one test case (a renamed tag fails here, not silently in CI).
#   check_selection.sh BINARY OUT TSAN_SPEC REST_SPEC TAG...
set -eu
binary="$1" out="$2" tsan="$3" rest="$4"
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names() { "$binary" "$1" --list-test-names-only | grep -v '^$' | sort; }
names "$out" >"$dir/all"
names "$tsan" >"$dir/tsan"
names "$rest" >"$dir/rest"
sort "$dir/tsan" "$dir/rest" >"$dir/both"
status=0
if ! cmp -s "$dir/all" "$dir/both"; then
  echo "the tsan selection and the rest do not split the suite:"
  diff "$dir/all" "$dir/both" || true
  status=1
fi
for tag in "$@"; do
  n=$(names "$tag$out" | grep -c . || true)
  echo "$tag: $n test cases"
  if [ "$n" -eq 0 ]; then
    echo "the tsan tag $tag selects no test case"
    status=1
  fi
done
echo "tsan: $(grep -c . "$dir/tsan") of $(grep -c . "$dir/all") test cases"
exit "$status"
