#!/usr/bin/env bash
# Writes the committed seed corpora of parser_fuzzers/ (docs/robustness.md) with a built larc (BUILD_DIR holds
# tools/larc/larc and tests/cli/safetensors_sample_writer):
#   corpus/safetensors/  whole safetensors files: small larc fixtures, the every-dtype sample, an empty one
#   corpus/fixture/      a small fixture of every mechanism, framed as fixture_fuzzer.cpp reads them
#                        (the JSON header, a NUL byte, the byte buffer)
#   corpus/cli/          argv of every command, arguments separated by NUL bytes
# Inputs that once crashed a fuzzer are kept beside these (e.g. number-overflow.safetensors) and left
# alone. usage: parser_fuzzers/make_seed_corpus.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
larc=$build/tools/larc/larc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$here/corpus/safetensors" "$here/corpus/fixture" "$here/corpus/cli"

# A fixture per mechanism, [1, 3, 1, 2, 2], alternately bf16 and fp32.
dtype=bf16
for m in $("$larc" gate --list | sed -n 's/^  \([a-z0-9-]*\): .*/\1/p'); do
  (cd "$tmp" && "$larc" fixtures gen --mechanism "$m" --dtype "$dtype" --shape 1,3,1,2,2 --seed 1 --out "$m.safetensors" > /dev/null)
  # framed: drop the 8-byte length, put a NUL between the header and the buffer
  n=$(od -An -t u8 -N8 "$tmp/$m.safetensors" | tr -d ' ')
  { head -c $((8 + n)) "$tmp/$m.safetensors" | tail -c "$n"; printf '\0'; tail -c +$((9 + n)) "$tmp/$m.safetensors"; } \
    > "$here/corpus/fixture/$m-$dtype"
  dtype=$([ "$dtype" = bf16 ] && echo fp32 || echo bf16)
done
cp "$tmp/gdn.safetensors" "$tmp/log-linear.safetensors" "$tmp/la-ratio.safetensors" "$here/corpus/safetensors/"
"$build/tests/cli/safetensors_sample_writer" "$tmp/samples" > /dev/null
cp "$tmp/samples/sample.safetensors" "$here/corpus/safetensors/every-dtype.safetensors"
printf '\x08\0\0\0\0\0\0\0{}      ' > "$here/corpus/safetensors/empty.safetensors"

# argv files: one per line below, words separated by spaces.
i=0
while read -r line; do
  [ -n "$line" ] || continue
  # shellcheck disable=SC2086
  printf '%s\0' $line | head -c -1 > "$here/corpus/cli/$(printf '%02d' $i)"
  i=$((i + 1))
done <<'ARGS'
gate --list
gate --mechanism gdn --dtype bf16 --shape 1,64,2,16,16 --seed 3 --knob collinearity=0.9 --no-grid
gate --random 4 --fixtures fixtures/golden --shard 1/4 --json g.json --junit g.xml --markdown g.md --progress
gate --subject ref-chunked-f32 --shard-count 8 --random 0
diff fixture.safetensors out.safetensors --kernel fla.chunk --prefix oracle. --json d.json
fuzz --cases 200 --seed 7 --max-shape 2,256,2,64,64 --subject ref-serial-f32 --mechanism kla --dtype fp16
fuzz --minutes 1.5 --corpus c --json f.json --resume --progress
fuzz --target error --cases 50 --mechanism log-linear --shard 0/2
merge a.json b.json --json m.json --markdown m.md --junit m.xml
fixtures show fixture.safetensors --json --values
fixtures gen --mechanism hla --dtype fp32 --shape 1,8,1,4,4 --seed 2 --knob decay_max=3 --out x.safetensors
fixtures gen --golden fixtures/golden
gate --help
ARGS
echo "seed corpus: $(ls "$here/corpus/safetensors" | wc -l) safetensors, $(ls "$here/corpus/fixture" | wc -l) fixture, $(ls "$here/corpus/cli" | wc -l) cli inputs"
