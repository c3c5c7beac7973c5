wd() {
  local m=/tmp/ac-$1
  [ -f $m/model.safetensors ] || $bin synth-model --preset $1 --out $m --seed 11 --quiet >/dev/null
  AGENTCOMPILE_FAST_CONFIG=$3 timeout ${4:-120} $bin generate $m --prompt-tokens $w2_prompt --max-tokens 128 --ignore-eos --backend cuda \
    --cuda-route fast --json > "$out/runs/$1-$2.json" 2> "$out/runs/$1-$2.err" || { echo "$1 $2 FAILED rc=$?: $(tail -1 "$out/runs/$1-$2.err")"; return; }
  python3 - "$out/runs/$1-$2.json" "$1" "$2" <<'PY'
import json, sys, zlib
g = json.load(open(sys.argv[1])); t = g["timings"]
print(f"{sys.argv[2]:14s} {sys.argv[3]:34s} decode {t['decode_ms_per_token']:.4f} ms/token  tokens crc {zlib.crc32(str(g['tokens']).encode()):08x} {g['tokens'][:6]}")
PY
}
