# redis_tools.py — lesson 13: redis-server and redis-tools for the scripts that talk to them, installed when missing.
#
# They are peers to compare with and measure against (Debian's packages), never
# linked into the course: scripts/redis-compare.py and scripts/bench-redis.py call
# ensure_redis_tools() first, which installs both with one line saying so.
import os
import shutil
import subprocess
import sys


def ensure_redis_tools(needed_by):
    if all(shutil.which(tool) for tool in ("redis-server", "redis-cli", "redis-benchmark")):
        return
    print(f"== installing redis-server redis-tools (Debian packages) for {needed_by}", flush=True)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    environment = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "redis-server", "redis-tools"]):
        if subprocess.run(sudo + command, env=environment, stdout=subprocess.DEVNULL).returncode != 0:
            sys.exit(f"{needed_by}: could not install redis-server and redis-tools ({' '.join(command)} failed)")
