#!/usr/bin/env bash
# Installs the Debian package built by `make package-debug` on this machine, checks what it
# installed (lethe --version, lethe demo, the window through WebDriver), removes it and checks
# that nothing of it is left. Leaves the machine as it found it, so a second run works too.
#   tests/package/check.sh target/package/lethe_<version>_amd64.deb <version>
# $SUDO is empty when run as root (the Makefile sets it).
set -euo pipefail
deb=$(realpath "$1")
version=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
SUDO=${SUDO:-}
apt_get() { DEBIAN_FRONTEND=noninteractive $SUDO apt-get -y -qq "$@"; }
say() { printf '\n== package: %s\n' "$*"; }
tmp=$(mktemp -d)
cleanup() {
	local rc=$?
	if dpkg -s lethe >/dev/null 2>&1; then apt_get remove --purge lethe >/dev/null || rc=1; fi
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT

say "control fields"
dpkg-deb -f "$deb" Package Version Depends
[ "$(dpkg-deb -f "$deb" Package)" = lethe ] || { echo "package name is not lethe"; exit 1; }
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || { echo "package version is not the workspace's $version"; exit 1; }
dpkg-deb -f "$deb" Depends | grep -q libwebkit2gtk-4.1-0 || { echo "WebKitGTK is not declared"; exit 1; }

say "install"
# A package left by an interrupted run is replaced, not kept.
apt_get install --reinstall "$deb" >/dev/null
for f in /usr/bin/lethe /usr/bin/lethe-app /usr/share/applications/Lethe.desktop \
	/usr/share/icons/hicolor/128x128/apps/lethe-app.png /usr/share/lethe/potion-base-8M/model.int8.safetensors; do
	[ -e "$f" ] || { echo "missing after install: $f"; exit 1; }
done
(cd /usr/share/lethe/potion-base-8M && sha256sum -c --quiet "$root/src-tauri/engine/model.sha256")

say "lethe --version"
got=$(/usr/bin/lethe --version)
echo "$got"
[ "$got" = "lethe $version" ] || { echo "expected 'lethe $version'"; exit 1; }

say "lethe demo"
/usr/bin/lethe --db "$tmp/demo.db" demo >"$tmp/demo.json"
grep -q '"stored"' "$tmp/demo.json" || { cat "$tmp/demo.json"; exit 1; }
/usr/bin/lethe --db "$tmp/demo.db" stats | grep -q '"recall_mode": "semantic' ||
	{ echo "the installed lethe does not find the installed recall model"; exit 1; }

say "the installed window (WebDriver)"
(cd "$root/tests/e2e" && LETHE_APP=/usr/bin/lethe-app LETHE_CLI=/usr/bin/lethe LETHE_DEMO_DB="$tmp/demo.db" \
	xvfb-run -a -s "-screen 0 1280x800x24" node --test --test-concurrency=1 ./installed.mjs)

say "remove"
apt_get remove --purge lethe >/dev/null
left=""
for f in /usr/bin/lethe /usr/bin/lethe-app /usr/share/applications/Lethe.desktop /usr/share/lethe \
	/usr/share/icons/hicolor/128x128/apps/lethe-app.png; do
	[ -e "$f" ] && left="$left $f"
done
[ -z "$left" ] || { echo "left after remove:$left"; exit 1; }
dpkg -s lethe >/dev/null 2>&1 && { echo "dpkg still knows lethe"; exit 1; }
say "ok"
