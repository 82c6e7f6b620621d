#!/usr/bin/env bash
# buddy side by side with the peers (bench/WORKLOAD.md), in one command from a fresh clone:
#
#   bench/compare.sh                       # W1, W2, W3 and the end-to-end turns, 3 reps
#   PARTS="w1 w23" bench/compare.sh        # any run_buddy.sh setting passes through
#   REPS=1 PARTS=w1 W1_RUNS=1 OUT=bench/.peers/check.jsonl bench/compare.sh
#                                          # the quickest check that everything runs (git-ignored)
#
# 1. Makes the project's venv (.venv, as the README does) if it is missing.
# 2. The first time, and whenever bench/peers/requirements.lock.txt changes, installs the peers
#    into their own venv, bench/.peers/venv (git-ignored), with the same interpreter, every
#    package pinned by the lock: pydantic-ai-slim and openai-agents (+ PyYAML, for pydantic-ai's
#    yaml variant), then google-adk if it installs (ADK=0: don't try; without it the runner
#    skips it with a message). pip's output goes to bench/.peers/install.log.
# 3. Runs bench/run_buddy.sh with the peers of bench/peers, interleaved rep by rep: it prints
#    the machine and every version, the JSON lines, then the tables with the ratios buddy/peer
#    (also written to ${OUT%.jsonl}.md; OUT defaults to bench/results/compare.jsonl).
#
# PEERS_DIR: another folder of peer scripts with the same names (your own copy); PEERS_LOCK: its
# lock file. Needs the package registry the first time only. Run nothing else meanwhile: the
# figures are only comparable within one run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
HOME_DIR=bench/.peers
VENV=$HOME_DIR/venv
LOCK=${PEERS_LOCK:-${PEERS_DIR:-bench/peers}/requirements.lock.txt}
LOG=$HOME_DIR/install.log
ADK=${ADK:-1}

if [ -z "${PY:-}" ] && [ ! -x .venv/bin/python ]; then
  echo "== making .venv and installing buddy into it" >&2
  python3 -m venv .venv
  .venv/bin/pip install -q -e .
fi
PY=${PY:-.venv/bin/python}

if ! cmp -s "$LOCK" "$HOME_DIR/installed.lock.txt"; then
  echo "== installing the peers into $VENV (pinned by $LOCK; log: $LOG)" >&2
  mkdir -p "$HOME_DIR"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  pip=("$VENV/bin/pip" install -c "$LOCK")
  if ! "${pip[@]}" pydantic-ai-slim openai-agents PyYAML > "$LOG" 2>&1; then
    tail -n 20 "$LOG" >&2
    echo "== the peers did not install (above; whole log: $LOG)" >&2
    exit 1
  fi
  if [ "$ADK" = 1 ] && ! "${pip[@]}" google-adk >> "$LOG" 2>&1; then
    echo "== google-adk did not install (see $LOG): the runs go on without it" >&2
  fi
  cp "$LOCK" "$HOME_DIR/installed.lock.txt"
fi

PEERS_PY=$VENV/bin/python PY=$PY OUT=${OUT:-bench/results/compare.jsonl} \
  exec bench/run_buddy.sh
