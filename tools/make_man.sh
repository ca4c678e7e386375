#!/bin/sh
# Writes gpuscope(1) from the binary's own --help and each subcommand's --help (help2man), so the
# man page says what the binary does. usage: tools/make_man.sh GPUSCOPE_BINARY OUT.1
set -eu
bin=$(cd "$(dirname "$1")" && pwd)
out=$2
include=$(mktemp)
trap 'rm -f "$include"' EXIT
export PATH="$bin:$PATH"  # run as "gpuscope", so usage lines name the command, not the build path
# The "Subcommands:" list only, up to its end (the examples below it start with "  gpuscope").
subs=$(gpuscope --help | awk '/^Subcommands:/ { f = 1; next } f && /^$/ { exit } f && /^  [a-z]/ { print $1 }')
{
  echo "[SUBCOMMANDS]"
  for s in $subs; do
    echo ".SS $s"
    echo ".nf"
    # Roff: a leading dot or quote would be a request; backslashes are escapes.
    gpuscope "$s" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "The full documentation: /usr/share/doc/gpuscope (README.md and docs/)."
} >"$include"
help2man --locale=C.UTF-8 --no-info --no-discard-stderr --section=1 \
  --name="why your GPU training job under-uses the GPU, and what to change" \
  --include="$include" --output="$out.tmp" gpuscope
# help2man in a UTF-8 locale (in its default, C, every such character becomes "???"); then characters
# outside ASCII (…, ×, −, →) as groff's \[uXXXX] escapes: man renders them in a UTF-8
# locale and falls back to ASCII look-alikes in others.
# ASCII terminals: fallbacks where groff has none (… would vanish, η and µ print as "?").
perl -CSD -pe 's/([^\x00-\x7f])/sprintf("\\[u%04X]", ord($1))/ge;
  $_ .= ".fchar \\[u2026] ...\n.fchar \\[u03B7] eta\n.fchar \\[u00B5] u\n" if /^\.TH /' \
  "$out.tmp" >"$out"
rm -f "$out.tmp"
