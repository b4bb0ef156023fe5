#!/usr/bin/env bash
# Rebuilds the trained demo model from nothing: corpus → tokenizer → training → export → test fixtures.
#   tools/train-demo/run.sh --seed S [--minutes M] [--out DIR]
# Everything intermediate goes to tools/train-demo/build/ (not committed); the model to --out (default models/demo).
# Only a run into models/demo replaces what the repository holds of it (tools/train-demo/loss.png and the engine's
# test fixtures in model/src/test/resources/io/moemesh/model/demo/); a run elsewhere puts both beside its model. Needs Debian's python3 with torch,
# numpy, regex and matplotlib (/usr/bin/python3) and a JDK 25 for bin/moemesh.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-/usr/bin/python3}
SEED=1 MINUTES=60 OUT=$ROOT/models/demo VOCAB=2048 MAX_LEN=1024
while (($#)); do
  case $1 in
    --seed) SEED=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --out) OUT=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 --seed S [--minutes M] [--out DIR]" >&2; exit 2 ;;
  esac
done
BUILD=$HERE/build
mkdir -p "$BUILD"
cd "$HERE"

echo "== corpus (seed $SEED)"
"$PY" corpus.py --seed "$SEED" --out "$BUILD"
echo "== tokenizer (vocab $VOCAB)"
"$ROOT/bin/moemesh" make-tokenizer --corpus "$BUILD/train.txt,$BUILD/chat-train.txt" --vocab-size "$VOCAB" \
  --model-max-length "$MAX_LEN" --out "$BUILD/tokenizer"
echo "== training ($MINUTES min; progress in $BUILD/train.log)"
nice -n 5 "$PY" train.py --data "$BUILD" --tokenizer "$BUILD/tokenizer" --out "$BUILD/run" --minutes "$MINUTES" \
  --seed "$SEED" | tee "$BUILD/train.log"
echo "== export"
"$PY" export.py --ckpt "$BUILD/run/ckpt.pt" --tokenizer "$BUILD/tokenizer" --out "$OUT"
cp "$BUILD/heldout.txt" "$OUT/heldout.txt"               # bench quality's text
cp "$BUILD/chat-heldout.jsonl" "$OUT/heldout-chat.jsonl" # bench quality's chat turns, with their expected answers
if [[ $OUT == "$(realpath -m "$ROOT/models/demo")" ]]; then
  CURVE=$HERE/loss.png FIXTURES=$ROOT/model/src/test/resources/io/moemesh/model/demo
else
  CURVE=$OUT/loss.png FIXTURES=$OUT/test-fixtures
fi
cp "$BUILD/run/loss.png" "$CURVE"
echo "== fixtures ($FIXTURES)"
"$PY" fixture.py --model "$OUT" --data "$BUILD" --out "$FIXTURES"
