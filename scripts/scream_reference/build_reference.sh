#!/bin/sh
# Build the authors' SCReAM v2 simulator (EricssonResearch/scream, code/scream_simulator.cpp)
# outside rtcbench, with its bottleneck constants read from the environment so that
# compare.py can run it on several bottlenecks. Nothing of the reference is stored in rtcbench:
# this script copies a checkout you give it, edits eight constants by name and builds it.
#
#   scripts/scream_reference/build_reference.sh SRC BUILD
#
# SRC is a checkout (or `git archive`) of https://github.com/EricssonResearch/scream; BUILD a
# new folder outside the project. The binary is BUILD/src/bin/scream_sim.
#
# The edits (environment variable, default = the simulator's own value):
#   scream_simulator.cpp  Tmax        SCREAM_TMAX      run length, s (20)
#                         isChRate    SCREAM_CH_RATE   1: capacity dips to 5 Mbit/s at 3-6 s (1)
#                         ecnCapable  SCREAM_ECN       1: packets ECN-capable (1)
#                         isL4s       SCREAM_L4S       1: L4S (ECT(1) + ramp marker) (1)
#                         RTT         SCREAM_RTT       path delay before the bottleneck, s (0.025)
#                         capacity    SCREAM_RATE      bottleneck rate, bit/s (10e6)
#   NetQueue.cpp          l4sThLo     SCREAM_TH_LO     marking ramp start, s (0.008)
#                         l4sThHi     SCREAM_TH_HI     marking ramp end, s (0.012)
set -eu
if [ $# -ne 2 ]; then echo "usage: $0 SRC BUILD" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$1" && pwd)
mkdir -p "$2"
build=$(cd "$2" && pwd)
[ -f "$src/code/scream_simulator.cpp" ] || { echo "$src: no code/scream_simulator.cpp" >&2; exit 1; }
rm -rf "$build/src" "$build/cmake"
cp -r "$src" "$build/src"
sim="$build/src/code/scream_simulator.cpp"
netq="$build/src/code/NetQueue.cpp"
sed -i \
  -e 's/^const float Tmax = [^;]*;/const float Tmax = rtcbench_env("SCREAM_TMAX", 20.0f);/' \
  -e 's/^const bool isChRate = [^;]*;/const bool isChRate = rtcbench_env("SCREAM_CH_RATE", 1.0f) != 0.0f;/' \
  -e 's/^const bool ecnCapable = [^;]*;/const bool ecnCapable = rtcbench_env("SCREAM_ECN", 1.0f) != 0.0f;/' \
  -e 's/^const bool isL4s = [^;]*;/const bool isL4s = rtcbench_env("SCREAM_L4S", 1.0f) != 0.0f \&\& ecnCapable;/' \
  -e 's/^const float RTT = [^;]*;/const float RTT = rtcbench_env("SCREAM_RTT", 0.025f);/' \
  -e 's/netQueueRate = new NetQueue(0.0f, 10e6,/netQueueRate = new NetQueue(0.0f, rtcbench_env("SCREAM_RATE", 10e6f),/' \
  "$sim"
sed -i \
  -e 's/^const float l4sThLo = [^;]*;/const float l4sThLo = rtcbench_env("SCREAM_TH_LO", 0.008f);/' \
  -e 's/^const float l4sThHi = [^;]*;/const float l4sThHi = rtcbench_env("SCREAM_TH_HI", 0.012f);/' \
  "$netq"
edits=$(cat "$sim" "$netq" | grep -c 'rtcbench_env(')
if [ "$edits" -ne 8 ]; then
  echo "expected 8 edited constants, found $edits: this version of the simulator differs; edit by hand" >&2
  exit 1
fi
# -O2: the simulator walks its 10000-slot queue every 1/65536 s; unoptimised, 30 s take minutes.
flags="-O2 -include $here/rtcbench_env.h"
cmake -S "$build/src" -B "$build/cmake" -DCMAKE_CXX_FLAGS_DEBUG="$flags" \
  -DCMAKE_CXX_FLAGS_RELEASE="$flags" >"$build/cmake.log"
make -C "$build/cmake" scream_sim >"$build/make.log" 2>&1 || { tail -20 "$build/make.log" >&2; exit 1; }
echo "$build/src/bin/scream_sim"
