#!/bin/sh
# Prints the path of a Python 3 that can `import zmq` (pyzmq), for the examples and the
# conformance tests; says on stderr which one it picked and anything it installed.
#
# Order:
#   1. $PYTHON_ZMQ, if set (must work, or this fails).
#   2. `python3` first on PATH, if it already has pyzmq.
#   3. As root: `python3 -m pip install pyzmq` into that same python3 (needs PyPI).
#   4. Debian's /usr/bin/python3 with python3-zmq (as root: apt-get install python3-zmq if missing).
#      Debian's python3-zmq only works with Debian's own /usr/bin/python3.
# Otherwise it fails and says what to run.
set -u
say() { echo "python-with-zmq: $*" >&2; }
has_zmq() { "$1" -c 'import sys, zmq; assert sys.version_info >= (3, 8)' >/dev/null 2>&1; }
version() { "$1" -c 'import sys, zmq; print("Python %d.%d, pyzmq %s, libzmq %s" % (sys.version_info[0], sys.version_info[1], zmq.__version__, zmq.zmq_version()))'; }
pick() { say "using $1 ($(version "$1"))"; echo "$1"; exit 0; }

if [ -n "${PYTHON_ZMQ:-}" ]; then
    has_zmq "$PYTHON_ZMQ" && pick "$PYTHON_ZMQ"
    say "error: PYTHON_ZMQ=$PYTHON_ZMQ cannot import zmq"
    exit 1
fi

root=no
[ "$(id -u)" -eq 0 ] && root=yes
py=$(command -v python3 || true)
if [ -n "$py" ]; then
    has_zmq "$py" && pick "$py"
    if [ "$root" = yes ]; then
        say "$py has no pyzmq: installing it with pip (root): $py -m pip install --quiet pyzmq"
        if PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip install --quiet pyzmq >&2 \
            && has_zmq "$py"; then
            pick "$py"
        fi
        say "pip could not install pyzmq for $py; trying Debian's python3-zmq"
    fi
fi

if [ -x /usr/bin/python3 ]; then
    has_zmq /usr/bin/python3 && pick /usr/bin/python3
    if [ "$root" = yes ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Debian's python3-zmq (apt-get, for /usr/bin/python3)"
        if apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-zmq >/dev/null \
            && has_zmq /usr/bin/python3; then
            pick /usr/bin/python3
        fi
    fi
fi

say "error: no Python 3 with pyzmq found."
say "  either: python3 -m pip install pyzmq        (for ${py:-python3})"
say "  or, on Debian as root: apt-get install python3-zmq, then run with PYTHON_ZMQ=/usr/bin/python3"
exit 1
