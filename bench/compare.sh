#!/usr/bin/env bash
# buddy side by side with the peers, in one run: installs pydantic-ai-slim and openai-agents
# into their own venv under bench/.peers (git-ignored; once, pinned by the peers' lock file),
# copies the peers' workload scripts next to it, then runs bench/run_buddy.sh interleaved
# (A B A B …, REPS=3) and prints the median table with ratios buddy/peer.
#
#   bench/compare.sh                       # W1, W2, W3 and the end-to-end turns
#   PARTS="w1 w23" bench/compare.sh        # any run_buddy.sh setting passes through
#
# PEERS_SRC (default /work/shared/bench/peers): the peers' scripts and requirements.lock.txt.
# Needs the package registry the first time only. Run nothing else meanwhile (noisy cores).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_SRC=${PEERS_SRC:-/work/shared/bench/peers}
HOME_DIR=bench/.peers
PY=${PY:-.venv/bin/python}

if [ ! -x "$HOME_DIR/venv/bin/python" ]; then
  echo "== installing the peers into $HOME_DIR/venv" >&2
  "$PY" -m venv "$HOME_DIR/venv"
  "$HOME_DIR/venv/bin/pip" install -q -c "$PEERS_SRC/requirements.lock.txt" \
    pydantic-ai-slim openai-agents PyYAML
fi
rm -rf "$HOME_DIR/peers"
cp -r "$PEERS_SRC" "$HOME_DIR/peers"   # a writable copy: the peers write __pycache__
chmod -R u+w "$HOME_DIR/peers"
"$HOME_DIR/venv/bin/python" -c 'import importlib.metadata as m, sys
for name in ("pydantic-ai-slim", "openai-agents", "openai", "pydantic"):
    print(name, m.version(name), file=sys.stderr)'

PEERS_DIR=$HOME_DIR/peers PEERS_PY=$HOME_DIR/venv/bin/python PY=$PY \
  OUT=${OUT:-bench/results/compare.jsonl} exec bench/run_buddy.sh
