#!/bin/bash
# Checks of the Debian package that make_package.sh made (in OUT_DIR), one per CTest test:
#   package_test.sh CHECK OUT_DIR SOURCE_DIR
# Each check says the one-line mutation it catches. Every check fails, never skips, when a
# tool it needs is missing: `sh tools/setup.sh --tests` installs them.
set -euo pipefail
check="$1" out=$(cd "$2" && pwd) source=$(cd "$3" && pwd)
root="$out/root"
deb=$(ls "$out"/*.deb)
failed=0
fail() {
  echo "FAILED: $*"
  failed=1
}
field() { dpkg-deb -f "$deb" "$1"; }
# The package names of a relation field, without versions or alternatives' bars.
names() { tr ',|' '\n\n' | sed -e 's/(.*)//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u; }
# A scratch folder of the check's own, removed at the end.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

case "$check" in

# The file name, the version and the fields dpkg reads.
# Mutation caught: CPACK_PACKAGE_VERSION set apart from project(VERSION) (the package and
# `dedupsim --version` disagree), or CPACK_DEBIAN_FILE_NAME left to CPack's own naming.
identity)
  printed=$("$root/usr/bin/dedupsim" --version)
  version=$(field Version)
  arch=$(dpkg --print-architecture)
  [ "$printed" = "dedupsim $version" ] || fail "dedupsim --version prints '$printed', the package is $version"
  [ "$(basename "$deb")" = "dedupsim_${version}_${arch}.deb" ] || fail "file name $(basename "$deb")"
  [ "$(field Package)" = dedupsim ] || fail "Package: $(field Package)"
  [ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
  # The changelog's latest entry is this version (Debian's tools read it from there).
  top=$(zcat "$root/usr/share/doc/dedupsim/changelog.gz" | head -1)
  case "$top" in
    "dedupsim ($version) "*) ;;
    *) fail "the changelog's latest entry is '$top', not version $version" ;;
  esac
  [ -s "$root/usr/share/doc/dedupsim/copyright" ] || fail "no copyright file"
  ;;

# Depends is exactly the packages of the libraries the executable links (its NEEDED
# entries, found in the system's multiarch folder); what it only opens (libpq, with dlopen)
# or starts (PostgreSQL's server programs) is recommended, not depended on.
# Mutation caught: CPACK_DEBIAN_PACKAGE_SHLIBDEPS off (Depends empty), or libpq5 moved into
# CPACK_DEBIAN_PACKAGE_DEPENDS (a dependency on something it does not link).
depends)
  binary="$root/usr/bin/dedupsim"
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  owner() { dpkg -S "*/$multiarch/$1" 2>/dev/null | head -1 | sed 's/[:,].*//'; }
  objdump -p "$binary" | awk '$1 == "NEEDED" { print $2 }' >"$scratch/needed"
  [ -s "$scratch/needed" ] || fail "no NEEDED entry read from $binary"
  : >"$scratch/linked"
  while read -r soname; do
    package=$(owner "$soname")
    [ -n "$package" ] || fail "no installed package has $soname"
    echo "$package" >>"$scratch/linked"
  done <"$scratch/needed"
  sort -u -o "$scratch/linked" "$scratch/linked"
  field Depends | names >"$scratch/depends"
  if ! cmp -s "$scratch/linked" "$scratch/depends"; then
    fail "Depends is not the packages of the linked libraries (< linked, > Depends):"
    diff "$scratch/linked" "$scratch/depends" || true
  fi
  # Every Depends entry says the version it needs (dpkg-shlibdeps's symbols files).
  field Depends | tr ',' '\n' | grep -v '(>= ' && fail "a Depends entry without a version"
  field Recommends | names >"$scratch/recommends"
  grep -q 'libpq\.so\.5' "$binary" || fail "the executable does not name libpq.so.5"
  grep -qx libpq.so.5 "$scratch/needed" && fail "the executable links libpq: it should open it"
  libpq=$(owner libpq.so.5)
  [ -n "$libpq" ] || fail "no installed package has libpq.so.5"
  grep -qx "$libpq" "$scratch/recommends" || fail "Recommends lacks $libpq (libpq, opened)"
  grep -q '/usr/lib/postgresql' "$binary" || fail "the executable does not look in /usr/lib/postgresql"
  grep -qx postgresql "$scratch/recommends" || fail "Recommends lacks postgresql (the server it starts)"
  field Suggests | names >"$scratch/suggests"
  for broker in nats-server rabbitmq-server libnats3.4 librabbitmq4; do
    grep -qx "$broker" "$scratch/suggests" || fail "Suggests lacks $broker"
  done
  cat "$scratch/recommends" "$scratch/suggests" | grep -qxFf "$scratch/depends" &&
    fail "a package both depended on and recommended or suggested"
  echo "Depends: $(field Depends)"
  ;;

# Unpacked into a scratch root, the installed program runs the post's six lines from a
# folder outside the repository, and grades the installed example consumers.
# Mutation caught: the executable installed somewhere else than bin/ (no usr/bin/dedupsim
# in the package), or the examples left out of the install rules.
runs)
  cd "$scratch"
  export PATH="$root/usr/bin:$PATH" NO_COLOR=1
  [ "$(command -v dedupsim)" = "$root/usr/bin/dedupsim" ] || fail "dedupsim is not the package's"
  dedupsim run all >"$scratch/lines"
  if ! cmp -s "$scratch/lines" "$source/tests/data/post_lines.txt"; then
    fail "run all from the package does not print the post's six lines:"
    diff "$source/tests/data/post_lines.txt" "$scratch/lines" || true
  fi
  examples="$root/usr/share/doc/dedupsim/examples"
  (cd "$source/examples" && find . -type f | sort) >"$scratch/repo-examples"
  (cd "$examples" && find . -type f | sort) >"$scratch/package-examples" || true
  cmp -s "$scratch/repo-examples" "$scratch/package-examples" ||
    fail "the package's examples are not the repository's"
  status=0
  dedupsim check "$examples/consumers/inbox.toml" >/dev/null || status=$?
  [ "$status" -eq 0 ] || fail "check of the installed inbox.toml exits $status, not 0"
  status=0
  dedupsim check "$examples/consumers/naive.toml" >/dev/null || status=$?
  [ "$status" -eq 1 ] || fail "check of the installed naive.toml exits $status, not 1"
  ;;

# `cmake --install` installs what the package holds: the same files and folders, with the
# same modes.
# Mutation caught: a file put in the package alone (CPACK_INSTALLED_DIRECTORIES, or an
# install rule in a component CPack packs and a plain install does not).
install-set)
  listing() { (cd "$1" && find . -mindepth 1 -printf '%y %m %P\n' | sort); }
  dpkg-deb -c "$deb" | awk '{ print substr($1, 1, 1), $NF }' |
    sed -e 's|^- |f |' -e 's|\./||' -e 's|/$||' | grep -v ' $' | sort >"$scratch/package"
  (cd "$out/install" && find . -mindepth 1 -printf '%y %P\n' | sort) >"$scratch/install"
  if ! cmp -s "$scratch/package" "$scratch/install"; then
    fail "cmake --install and the package differ (< package, > cmake --install):"
    diff "$scratch/package" "$scratch/install" || true
  fi
  # Same modes: a program 755, every other file 644, folders 755.
  listing "$out/install" | awk '$1 == "f" && $3 != "usr/bin/dedupsim" && $2 != 644 { print }
    $1 == "d" && $2 != 755 { print } $3 == "usr/bin/dedupsim" && $2 != 755 { print }' >"$scratch/modes"
  [ ! -s "$scratch/modes" ] || { fail "unexpected modes:"; cat "$scratch/modes"; }
  echo "$(grep -c . "$scratch/package") entries in both"
  ;;

# The installed man page is the one the build wrote, compressed, and renders without a
# groff warning (man --warnings=w passes -ww to groff).
# Mutation caught: the man page installed uncompressed or from another file than the one
# `dedupsim __man` wrote (an old page left in the tree).
man)
  page="$root/usr/share/man/man1/dedupsim.1.gz"
  [ -f "$page" ] || fail "no $page"
  gzip -t "$page" || fail "$page is not gzip"
  "$root/usr/bin/dedupsim" __man >"$scratch/now.1"
  zcat "$page" | cmp -s - "$scratch/now.1" || fail "the installed page is not what the program writes"
  LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$page" >"$scratch/text" 2>"$scratch/err" ||
    fail "man -l exits non-zero"
  [ ! -s "$scratch/err" ] || { fail "man -l warns:"; cat "$scratch/err"; }
  grep -q '^COMMANDS' "$scratch/text" || fail "the rendered page has no COMMANDS"
  ;;

# Bash completion as a user's shell gets it: bash-completion's loader finds the installed
# script under the scratch root's share/ and the completion asks the installed program.
# Mutation caught: the script installed where bash-completion does not look, scenario
# names no longer offered (__complete without the SCENARIO values), or the script passing
# the words shifted by one (COMP_CWORD-1).
completion-bash)
  export PATH="$root/usr/bin:$PATH" XDG_DATA_DIRS="$root/usr/share" BASH_COMPLETION_USER_DIR="$scratch/none"
  cd "$root/usr/share/doc/dedupsim"
  # As in an interactive shell: bash-completion is not written for -e, -u or pipefail.
  set +euo pipefail
  # shellcheck disable=SC1091
  . /usr/share/bash-completion/bash_completion
  __load_completion dedupsim || fail "bash-completion does not find dedupsim's completion"
  complete -p dedupsim | grep -q -- '-F _dedupsim' || fail "no -F _dedupsim for dedupsim"
  # Completes the words given (the last one being typed) and prints the offers sorted.
  offers() {
    COMP_WORDS=(dedupsim "$@")
    COMP_CWORD=$#
    COMP_LINE="dedupsim $*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _dedupsim
    printf '%s\n' "${COMPREPLY[@]}" | grep -v '^$' | sort
  }
  expect() {
    local want="$1"
    shift
    local got
    got=$(offers "$@" | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ] || fail "dedupsim $* <TAB>: offered '$got', expected '$want'"
  }
  # Scenario names as the program lists them: a new lesson is offered with no edit.
  names=$(dedupsim list --format json | sed 's/^{"scenario":"\([^"]*\)".*/\1/' | sort)
  con=$(echo "$names" | grep '^con' | tr '\n' ' ' | sed 's/ $//')
  for s in concurrent concurrent-different concurrent-rollback; do
    case " $con " in *" $s "*) ;; *) fail "dedupsim list has no $s" ;; esac
  done
  expect "$con" run con
  expect "$con" explain con
  expect "$(printf '%s\n' $names all everything | sort | tr '\n' ' ' | sed 's/ $//')" run ""
  # Option values, as the options define them; and after --option=.
  expect "exit kill throw" run naive --crash-mode ""
  expect "postgres" run all --backend = p
  expect "postgres sqlite" run all --backend =
  expect "always auto never" --color ""
  # Commands and options; hidden ones are not offered.
  expect "explain explore" ex
  expect "--hold-ms" run concurrent --ho
  expect "" __
  expect "" run --test-only
  # Files where an option or argument takes one.
  expect "examples/consumers/inbox.toml" check examples/consumers/in
  expect "examples/consumers/inbox.toml" run naive --file examples/consumers/in
  ;;

# The zsh completion asks the same program: zsh's completion functions stand in as stubs
# that print what they are given.
# Mutation caught: the zsh script offering the answer from its first line (answer[1,-1]: the
# word "words" offered too).
completion-zsh)
  script="$root/usr/share/zsh/vendor-completions/_dedupsim"
  [ -f "$script" ] || fail "no $script"
  zoffers() {
    PATH="$root/usr/bin:$PATH" zsh -f -c '
      compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -l -- "$@"; }
      _files() { print -- "(files $*)"; }
      compset() { :; }
      words=(dedupsim "${@:2}"); CURRENT=$#words
      source "$1"' zsh "$script" "$@" | sort | tr '\n' ' ' | sed 's/ $//'
  }
  got=$(zoffers run concurrent-r)
  [ "$got" = "concurrent-rollback" ] || fail "zsh: dedupsim run concurrent-r <TAB> offered '$got'"
  got=$(zoffers run all --backend=p)
  [ "$got" = "--backend=postgres" ] || fail "zsh: --backend=p offered '$got'"
  got=$(zoffers check ex)
  [ "$got" = "(files )" ] || fail "zsh: check <TAB> did not complete files: '$got'"
  ;;

*)
  echo "unknown check $check"
  exit 2
  ;;
esac
[ "$failed" -eq 0 ] && echo "ok: $check"
exit "$failed"
