#!/bin/sh
# arm64-native.sh — what a learner on an arm64 machine gets, tried on x86-64 without one: the
# course's own make targets run *natively* in a Debian 12 arm64 root, every program of it
# (make, g++, the tests) emulated by qemu-user through binfmt_misc. ARCH=aarch64 cross-builds
# on x86-64 and runs what it built under qemu; this runs the Makefile as an arm64 machine runs
# it, where `uname -m` says aarch64. Run as root (it mounts, registers binfmt_misc, chroots). Slow, as
# every compile is emulated: on the course's 2-core VM, the root made from nothing and stage 1
# tested took 430 s; `make run`'s stage 13 took 26 minutes.
#
#   scripts/arm64-native.sh [TARGET...]   default: test-lesson1 run-lesson1
#   ARM64_ROOT=/srv/arm64                 where the arm64 root is made once and kept
#
# The tree's committed state (HEAD) is cloned into the root's /root/course each time. The
# binfmt_misc entry it adds is removed again when it ends, as are its mounts. `make run`
# starts a server that runs until Ctrl-C, as it does natively.
set -eu
root=${ARM64_ROOT:-/srv/arm64}
tree=$(cd "$(dirname "$0")/.." && pwd)
[ "$#" -gt 0 ] || set -- test-lesson1 run-lesson1
[ "$(id -u)" -eq 0 ] || { echo "arm64-native.sh: run it as root (it mounts and chroots)" >&2; exit 2; }
case "$root" in /?*) ;; *) echo "arm64-native.sh: ARM64_ROOT must be an absolute path other than /" >&2; exit 2 ;; esac

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "arm64-native.sh: installing $2 (Debian package $2)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}
need debootstrap debootstrap
# A static qemu, so that the root needs no x86-64 library to start its programs (binfmt_misc's
# F flag opens it once, here, before the chroot). Taken out of Debian's qemu-user-static
# package without installing it: that package's own binfmt entries would outlive this run.
qemu=/var/cache/arm64-native/qemu-aarch64-static
if [ ! -x "$qemu" ]; then
    echo "arm64-native.sh: fetching qemu-aarch64-static (from Debian package qemu-user-static)" >&2
    work=$(mktemp -d)
    (cd "$work" && apt-get -q -o APT::Sandbox::User=root download qemu-user-static >/dev/null &&
        dpkg-deb -x qemu-user-static_*.deb x)
    mkdir -p "$(dirname "$qemu")"
    cp "$work/x/usr/bin/qemu-aarch64-static" "$qemu"
    rm -rf "$work"
fi

binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt"
entry=fib-arm64-native
cleanup() {
    [ -e "$binfmt/$entry" ] && echo -1 >"$binfmt/$entry"
    for m in dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ -e "$binfmt/$entry" ] || printf '%s' ":$entry:M::\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:$qemu:OCF" >"$binfmt/register"

# The root: Debian 12 with what the README asks a learner to install (g++, make, python3),
# and git for the clone; make installs GoogleTest itself, as it does on any machine.
if [ ! -x "$root/usr/bin/g++" ]; then
    echo "arm64-native.sh: making a Debian 12 arm64 root in $root (debootstrap: about 6 minutes)" >&2
    debootstrap --arch=arm64 --variant=minbase --include=make,g++,python3,git,ca-certificates \
        bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1 ||
        { tail -n 20 "$root.log" >&2; exit 1; }
fi
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t sysfs sys "$root/sys"
cp /etc/resolv.conf "$root/etc/resolv.conf"
rm -rf "$root/root/course"
git clone -q "$tree" "$root/root/course"
echo "arm64-native.sh: in $root, uname -m says $(chroot "$root" uname -m); make $*" >&2
chroot "$root" sh -c 'cd /root/course && exec make "$@"' make "$@"
