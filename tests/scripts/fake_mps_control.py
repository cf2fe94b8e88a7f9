#!/usr/bin/env python3
"""A stand-in for nvidia-cuda-mps-control in tests/scripts/test_mps.sh, which behaves as the real
one does where scripts/with-mps looks: `-d` starts a daemon, which makes the control socket in
$CUDA_MPS_PIPE_DIRECTORY; a command on stdin (get_server_list, quit) fails where no daemon
answers; quit ends the daemon and leaves its socket behind. The daemon's state is a file beside
the socket; every start and quit is logged to $FAKE_MPS_CALLS."""
import os
import socket
import sys

pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
state = os.path.join(pipe, "state")


def log(line):
    with open(os.environ["FAKE_MPS_CALLS"], "a") as f:
        f.write(line + "\n")


def running():
    return os.path.exists(state) and open(state).read().strip() == "up"


if sys.argv[1:] == ["-d"]:
    if not (os.path.isdir(pipe) and os.path.isdir(os.environ.get("CUDA_MPS_LOG_DIRECTORY", ""))):
        sys.exit("no pipe or log folder")
    socket.socket(socket.AF_UNIX).bind(os.path.join(pipe, "control"))
    with open(state, "w") as f:
        f.write("up\n")
    log("start " + pipe)
    sys.exit(0)
command = sys.stdin.readline().strip()
if not running():
    sys.exit(1)
if command == "quit":
    with open(state, "w") as f:
        f.write("down\n")
    log("quit")
