#!/bin/sh
# install-gtest.sh — make test's one set-up step: GoogleTest (Debian's libgtest-dev),
# installed with apt-get when it is missing, as root or through sudo.
set -e
echo "make test: installing GoogleTest (Debian package libgtest-dev), which the tests are written in" >&2
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "make test: GoogleTest is missing and this user can neither run apt-get nor sudo;" \
         "as root, run: apt-get install -y libgtest-dev" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: GoogleTest is missing and this is not a Debian or Ubuntu system (no apt-get);" \
         "install GoogleTest's headers and libgtest with this system's package manager" >&2
    exit 1
fi
# apt-get's own chatter is shown only if it fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libgtest-dev; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "make test: installing libgtest-dev failed (the messages above say why)" >&2
    exit 1
fi
