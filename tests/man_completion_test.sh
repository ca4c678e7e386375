#!/bin/sh
# The man page and bash completion say only what the binary does (issue 34): the man page (made by
# tools/make_man.sh from --help) has each subcommand once, the top-level help once, and every
# character readable in a UTF-8 and in an ASCII locale; completion offers exactly the subcommands,
# each subcommand's real options (each accepted by the binary: never "unknown option"), no option
# twice, the values of enumerated options, and model and GPU names for plan.
# usage: man_completion_test.sh GPUSCOPE_BINARY SOURCE_DIR. Exit 77 (skip) without help2man or man.
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v help2man >/dev/null || { echo "SKIP: help2man is not installed (tools/setup.sh installs it)"; exit 77; }
command -v man >/dev/null || { echo "SKIP: man is not installed (man-db; tools/setup.sh --test installs it)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
subs="analyze map reduce run synth plan diff tune"

# --- man page
sh "$src/tools/make_man.sh" "$bin" "$tmp/gpuscope.1"
grep -q '[^ -~]' "$tmp/gpuscope.1" && fail "raw non-ASCII bytes in the page (expected \\[uXXXX] escapes)"
for s in $subs; do
  n=$(grep -c "^\.SS $s\$" "$tmp/gpuscope.1" || true)
  [ "$n" = 1 ] || fail "man page: subcommand $s has $n sections"
done
n=$(grep -c '^\.SS' "$tmp/gpuscope.1")
[ "$n" = 9 ] || fail "man page: $n .SS sections (the 8 subcommands and the help's \"Subcommands:\")"
for loc in C.UTF-8 C; do
  page=$(LANG=$loc LC_ALL=$loc MANPAGER=cat man -l "$tmp/gpuscope.1" 2>/dev/null)
  echo "$page" | grep -q '???' && fail "man page in $loc: \"???\" where a character was"
  n=$(echo "$page" | grep -c 'diff compares two runs' || true)
  [ "$n" = 1 ] || fail "man page in $loc: the top-level help $n times"
done
page=$(LANG=C LC_ALL=C MANPAGER=cat man -l "$tmp/gpuscope.1" 2>/dev/null)
echo "$page" | grep -q 'workers, \.\.\. experi' || fail "man page in C: the ellipsis has no ASCII fallback"
page=$(LANG=C.UTF-8 LC_ALL=C.UTF-8 MANPAGER=cat man -l "$tmp/gpuscope.1" 2>/dev/null)
echo "$page" | grep -q 'capacity × (1 − headroom)' || fail "man page in C.UTF-8: × and − not rendered"

# --- completion
comp() {  # the completion of the words given (the last one is completed)
  bash -c ". '$src/tools/completion/gpuscope.bash'; COMP_WORDS=(\"\$@\"); COMP_CWORD=\$((\$# - 1)); _gpuscope; printf '%s\n' \"\${COMPREPLY[@]}\"" _ "$@"
}
got=$(comp "$bin" '' | tr '\n' ' ')
[ "$got" = "$subs --help --version " ] || fail "subcommands: $got"
cd "$tmp"
for s in $subs; do
  opts=$(comp "$bin" "$s" --)
  [ -n "$opts" ] || fail "$s: no options completed"
  dup=$(echo "$opts" | sort | uniq -d)
  [ -z "$dup" ] || fail "$s: offered twice: $dup"
  for o in $opts; do
    case $o in --nproc|--bf16|--batch-size) fail "$s: $o is from an example, not an option" ;; esac
    # Every offered option is the binary's: never "unknown option" (a value is given for those
    # that take one; the command fails for other reasons, in this empty folder).
    out=$(timeout 20 "$bin" "$s" "$o" gpuscope-no-such-input 2>&1 </dev/null || true)
    echo "$out" | grep -q "unknown option" && fail "$s $o: $out"
  done
done
[ "$(comp "$bin" analyze --color '' | tr '\n' ' ')" = "auto always never " ] || fail "analyze --color values"
[ "$(comp "$bin" plan --precision f | tr '\n' ' ')" = "fp32 fp16 fp8 " ] || fail "plan --precision f"
comp "$bin" plan --gpu h1 | grep -qx h100-sxm || fail "plan --gpu h1: no h100-sxm"
comp "$bin" plan --model llama-3 | grep -qx llama-3-8b || fail "plan --model llama-3: no llama-3-8b"
echo "man page: 8 subcommands once each, readable in C and C.UTF-8; completion: real options only, values for enumerations, models and GPUs"
