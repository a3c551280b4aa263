#!/usr/bin/env bash
# Installs the Debian packages hearth builds against, when run as root and any is missing.
# Tools that may come from outside Debian (node, npm) are checked as commands instead.
set -euo pipefail
PKGS="cmake make gcc g++ clang clang-format pkg-config libjansson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev python3"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup-deps: missing packages:$missing (run as root or install them)" >&2
  exit 1
fi
echo "setup-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq $missing >/dev/null
