#!/usr/bin/env bash
# Runs buddy's W1/W2/W3 and the end-to-end platform turns, optionally interleaved with the
# peers; collects the JSON lines in $OUT and writes the median tables to ${OUT%.jsonl}.md.
#
#   bench/run_buddy.sh                                   # buddy only
#   PEERS_PY=bench/.peers/venv/bin/python bench/run_buddy.sh   # with the peers (bench/compare.sh)
#
# Settings (defaults):
#   PARTS="w1 w23 e2e"   which parts to run
#   REPS=3 N_W2=2000 N_W3=2000 W1_RUNS=5 E2E_N=200 E2E_C="200 1000"
#   E2E_EXTRA_PATH=      if set, every E2E-seq run is repeated with this folder on PYTHONPATH
#                        (e.g. one holding sniffio, see README)
#   PEERS_PY=            the peers' interpreter; the peers run only when it is set
#   PEERS_DIR=bench/peers  their scripts (w1_SCRIPT.py, w2_PEER.py, w3_PEER.py)
#   PEERS="pydantic_ai openai_agents adk"  W1_PEER_SCRIPTS="SCRIPT:PEER:VARIANT ..."
#                        a peer whose framework PEERS_PY cannot import is skipped, with a message
#   OUT=bench/results/results.jsonl  PY=.venv/bin/python
#   PYTHONPATH=<checkout>/framework  measures that checkout of buddy, not the work tree
#                        (the peers always run without PYTHONPATH)
# W2/W3/E2E repetitions are interleaved across frameworks (rep loop outside) so that machine
# drift hits every framework alike. Run nothing else meanwhile (2 noisy cores).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=$(realpath -s "${PY:-.venv/bin/python}")
REPS=${REPS:-3}
N_W2=${N_W2:-2000}
N_W3=${N_W3:-2000}
W1_RUNS=${W1_RUNS:-5}
E2E_N=${E2E_N:-200}
E2E_C=${E2E_C:-200 1000}
E2E_EXTRA_PATH=${E2E_EXTRA_PATH:-}
PARTS=${PARTS:-w1 w23 e2e}
OUT=${OUT:-bench/results/results.jsonl}
PEERS_PY=${PEERS_PY:+$(realpath -s "$PEERS_PY")}
PEERS_DIR=${PEERS_PY:+$(realpath "${PEERS_DIR:-bench/peers}")}
PEERS=${PEERS:-pydantic_ai openai_agents adk}
W1_PEER_SCRIPTS=${W1_PEER_SCRIPTS:-pydantic_ai:pydantic-ai:python pydantic_ai_yaml:pydantic-ai:yaml openai_agents:openai-agents:python adk:google-adk:python adk_yaml:google-adk:yaml}
TIMER=$ROOT/bench/proc_time.py

peer() {  # run in the peers' folder with the peers' interpreter: peer SCRIPT ARGS...
  (cd "$PEERS_DIR" && env -u PYTHONPATH "$PEERS_PY" "$@")
}

framework_of() {  # the module a peer's scripts import: framework_of SCRIPT-OR-PEER
  case $1 in
    pydantic_ai*) echo pydantic_ai ;;
    openai_agents*) echo agents ;;
    adk*) echo google.adk ;;
  esac
}

installed() {  # does the peers' interpreter have this peer's framework?
  local module
  module=$(framework_of "$1")
  [ -z "$module" ] || peer -c "import importlib.util as u, sys; sys.exit(u.find_spec('$module') is None)" 2>/dev/null
}

if [ -n "$PEERS_PY" ]; then  # drop the peers that are not installed (google-adk is optional)
  kept=""
  for p in $PEERS; do
    if installed "$p"; then kept="$kept $p"; else echo "== $p: $(framework_of "$p") is not installed for $PEERS_PY, skipped" >&2; fi
  done
  PEERS=${kept# }
  kept=""
  for spec in $W1_PEER_SCRIPTS; do
    if installed "${spec%%:*}"; then kept="$kept $spec"; fi
  done
  W1_PEER_SCRIPTS=${kept# }
fi

mkdir -p "$(dirname "$OUT")"
: > "$OUT"
echo "== machine and versions" >&2
"$PY" bench/environment.py buddy buddy pydantic pydantic-core PyYAML Jinja2 jsonschema \
  httpx httpcore websockets fastapi uvicorn sniffio | tee -a "$OUT"
if [ -n "$PEERS_PY" ]; then
  peer "$ROOT/bench/environment.py" --same-machine peers pydantic-ai-slim pydantic-graph openai-agents openai \
    google-adk google-genai pydantic pydantic-core PyYAML | tee -a "$OUT"
fi

has() { [[ " $PARTS " == *" $1 "* ]]; }

if has w1; then
echo "== W1 (whole process: import + build agent), $W1_RUNS runs each" >&2
"$PY" bench/w1_none.py | tee -a "$OUT"
"$PY" "$TIMER" -n "$W1_RUNS" --label "none:W1-process:python-only" -- "$PY" bench/w1_none.py | tee -a "$OUT"
"$PY" bench/w1_buddy.py | tee -a "$OUT"
"$PY" bench/w1_buddy.py --turn | tee -a "$OUT"
"$PY" "$TIMER" -n "$W1_RUNS" --label "buddy:W1-process:yaml" -- "$PY" bench/w1_buddy.py | tee -a "$OUT"
"$PY" "$TIMER" -n "$W1_RUNS" --label "buddy:W1+turn-process:yaml" -- "$PY" bench/w1_buddy.py --turn | tee -a "$OUT"
# The same with the compiled-buddy cache off: every start compiles the manifest.
BUDDY_NO_CACHE=1 "$PY" "$TIMER" -n "$W1_RUNS" --label "buddy:W1+turn-process:yaml-nocache" -- "$PY" bench/w1_buddy.py --turn | tee -a "$OUT"
if [ -n "$PEERS_DIR" ]; then
  for spec in $W1_PEER_SCRIPTS; do
    IFS=: read -r script name variant <<<"$spec"
    peer "w1_$script.py" | tee -a "$OUT"                       # in-process figure
    peer "$TIMER" -n "$W1_RUNS" --label "$name:W1-process:$variant" -- "$PEERS_PY" "w1_$script.py" | tee -a "$OUT"
    peer "$TIMER" -n "$W1_RUNS" --label "$name:W1+turn-process:$variant" -- "$PEERS_PY" "w1_$script.py" --turn | tee -a "$OUT"
  done
fi
fi

for rep in $(seq 1 "$REPS"); do
  echo "== rep $rep/$REPS: $PARTS" >&2
  if has w23; then
    "$PY" bench/w2_buddy.py "$N_W2" | tee -a "$OUT"
    "$PY" bench/w2_buddy.py "$N_W2" --fresh-agent | tee -a "$OUT"
    if [ -n "$PEERS_DIR" ]; then
      for p in $PEERS; do peer "w2_$p.py" "$N_W2" | tee -a "$OUT"; done
    fi
    "$PY" bench/w3_buddy.py "$N_W3" | tee -a "$OUT"
    "$PY" bench/w3_buddy.py "$N_W3" --fresh-agent | tee -a "$OUT"
    if [ -n "$PEERS_DIR" ]; then
      for p in $PEERS; do peer "w3_$p.py" "$N_W3" | tee -a "$OUT"; done
    fi
  fi
  if has e2e; then
    # A failed end-to-end run prints a JSON line with "failed" and does not stop the others.
    "$PY" bench/e2e_platform.py seq "$E2E_N" | tee -a "$OUT" || true
    if [ -n "$E2E_EXTRA_PATH" ]; then
      PYTHONPATH="$E2E_EXTRA_PATH${PYTHONPATH:+:$PYTHONPATH}" "$PY" bench/e2e_platform.py seq "$E2E_N" | tee -a "$OUT" || true
    fi
    for c in $E2E_C; do
      "$PY" bench/e2e_platform.py conc "$c" | tee -a "$OUT" || true
    done
  fi
done

"$PY" bench/summarize.py "$OUT" > "${OUT%.jsonl}.md"
cat "${OUT%.jsonl}.md"
