#!/bin/sh
# install-package.sh — make test's set-up: a Debian package it needs, installed with apt-get
# when it is missing, as root or through sudo, with one line saying so.
#
#   install-package.sh PACKAGE "WHAT IT IS"              GoogleTest: the tests need it
#   install-package.sh --optional PACKAGE "WHAT IT IS"   ccache: the build goes on without it
set -e
optional=""
if [ "$1" = "--optional" ]; then
    optional=yes
    shift
fi
package=$1
what=$2
echo "make test: installing $what (Debian package $package)" >&2

# Says why it could not, and fails, unless the package is optional.
give_up() {
    echo "make test: $1" >&2
    if [ -n "$optional" ]; then
        echo "make test: going on without $package (the build is slower)" >&2
        exit 0
    fi
    exit 1
}

if [ "$(id -u)" -eq 0 ]; then
    sudo=""
# An optional package is not worth a password prompt in the middle of a build.
elif command -v sudo >/dev/null 2>&1 && { [ -z "$optional" ] || sudo -n true 2>/dev/null; }; then
    sudo="sudo"
else
    give_up "$package is missing and this user can neither run apt-get nor sudo; as root, run: apt-get install -y $package"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    give_up "$package is missing and this is not a Debian or Ubuntu system (no apt-get); install it with this system's package manager"
fi
# apt-get's own chatter is shown only if it fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package"; } >"$log" 2>&1; then
    cat "$log" >&2
    give_up "installing $package failed (the messages above say why)"
fi
