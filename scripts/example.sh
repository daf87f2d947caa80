#!/bin/sh
# example.sh — README command 1: install what is missing, build, run examples/saxpy.lua
# (on the GPU when CUDA is usable, else on the reference backend; it says which).
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
. scripts/env.sh
exec lua5.4 examples/saxpy.lua "$@"
