#!/usr/bin/env bash
# Regenerate every golden vector file under fixtures/golden/ from the REAL client libraries.
#
#   bash scripts/regen-golden.sh            # every kind with a golden generator
#   bash scripts/regen-golden.sh java       # only some kinds
#
# The kinds and their releases come from the registry of kinds (conformance/members/kinds): a kind
# whose module declares GOLDEN_VERSIONS has a generator, run by the function regen_<kind> below
# (dashes as underscores) for each of those releases.
#
# Idempotent: downloads go to the caches named in conformance/config.py (Maven repo, Go module
# cache, per-version venvs); a second run re-uses them and rewrites byte-identical files.
# Each output file is written to a temp file and renamed into place, so an interrupted run
# never leaves a half-written fixture. Needs network access only to the package registries,
# and only the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/bootstrap.sh >/dev/null
PY="$ROOT/.venv/bin/python"

cfg() { "$PY" -c "from conformance import config as c; print($1)"; }
# golden_versions KIND: the releases the kind's module names in GOLDEN_VERSIONS, space-separated.
golden_versions() { "$PY" -c "from conformance.members.kinds import golden_kinds; print(' '.join(golden_kinds()['$1']))"; }
GOLDEN_DIR=$(cfg 'c.GOLDEN_DIR')
MAVEN_REPO=$(cfg 'c.MAVEN_REPO')
GO_DIR=$(cfg 'c.GO_DIR')
VENVS_DIR=$(cfg 'c.VENVS_DIR')
mkdir -p "$GOLDEN_DIR" "$MAVEN_REPO" "$GO_DIR" "$VENVS_DIR"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# write_fixture RAW_JSON NAME: validate, pretty-print deterministically, rename into place.
write_fixture() {
  "$PY" - "$1" "$GOLDEN_DIR/$2" <<'EOF'
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as f:
    vectors = json.load(f)
if not isinstance(vectors, list) or not vectors:
    sys.exit(f"regen-golden: {src} holds no vectors")
ids = [v["id"] for v in vectors]
dups = sorted({i for i in ids if ids.count(i) > 1})
if dups:
    sys.exit(f"regen-golden: duplicate vector ids in {src}: {dups}")
tmp = dst + ".tmp"
with open(tmp, "w", encoding="utf-8") as f:
    json.dump(vectors, f, indent=1, ensure_ascii=False)
    f.write("\n")
os.replace(tmp, dst)
print(f"regen-golden: wrote {dst} ({len(vectors)} vectors)")
EOF
}

regen_java() {
  local dir="$ROOT/clients/java/golden" mvn=(mvn -q -B -Dstyle.color=never "-Dmaven.repo.local=$MAVEN_REPO")
  # Compiled once against the oldest API (the pom's default kafka.version, 2.4.1).
  (cd "$dir" && "${mvn[@]}" compile)
  for v in $(golden_versions java); do
    (cd "$dir" && "${mvn[@]}" dependency:build-classpath "-Dkafka.version=$v" \
        "-Dmdep.outputFile=$WORK/cp-$v.txt" >/dev/null)
    java -cp "$dir/target/classes:$(cat "$WORK/cp-$v.txt")" conformance.golden.GoldenVectors >"$WORK/java-$v.json"
    write_fixture "$WORK/java-$v.json" "java-$v.json"
  done
}

regen_sarama() {
  local src="$ROOT/clients/sarama/golden"
  export GOPATH="$GO_DIR" GOMODCACHE="$GO_DIR/pkg/mod" GOFLAGS=-modcacherw GOTOOLCHAIN=local
  "$PY" -c 'from conformance.members.kinds import sarama
for m, v, t in sarama.GOLDEN_RELEASES: print(m, v, t or "-")' | while read -r module v tags; do
    [ "$tags" = "-" ] && tags=""
    # One throw-away module per release: the generator's import path is rewritten to the release's
    # module path (github.com/Shopify/sarama before 1.40); nothing built is kept in the repository.
    local build="$WORK/sarama-$v"
    mkdir -p "$build"
    cp "$src"/*.go "$build/"
    sed -i "s#\"github.com/IBM/sarama\"#\"$module\"#" "$build"/*.go
    (cd "$build" && go mod init golden >/dev/null 2>&1 && go get "$module@$v" >/dev/null 2>&1 \
        && go mod tidy >/dev/null 2>&1 && go build -tags "$tags" -o golden . ) \
      || { echo "regen-golden: building the Sarama $v generator failed in $build" >&2; exit 1; }
    "$build/golden" -version "$v" >"$WORK/sarama-$v.json"
    write_fixture "$WORK/sarama-$v.json" "sarama-${v#v}.json"
  done
}

regen_franz_go() {
  local src="$ROOT/clients/franz-go/golden"
  export GOPATH="$GO_DIR" GOMODCACHE="$GO_DIR/pkg/mod" GOFLAGS=-modcacherw GOTOOLCHAIN=local
  for v in $(golden_versions franz-go); do
    # One throw-away module per release requiring github.com/twmb/franz-go at it; nothing built is kept.
    local build="$WORK/franz-go-$v"
    mkdir -p "$build"
    cp "$src"/*.go "$build/"
    (cd "$build" && go mod init golden >/dev/null 2>&1 && go get "github.com/twmb/franz-go@v$v" >/dev/null 2>&1 \
        && go mod tidy >/dev/null 2>&1 && go build -o golden . ) \
      || { echo "regen-golden: building the franz-go $v generator failed in $build" >&2; exit 1; }
    "$build/golden" -version "v$v" >"$WORK/franz-go-$v.json"
    write_fixture "$WORK/franz-go-$v.json" "franz-go-$v.json"
  done
}

regen_kafka_python() {
  for v in $(golden_versions kafka-python); do
    # One venv per release; .complete is written last, so a half-built venv is rebuilt.
    local venv="$VENVS_DIR/golden-kafka-python-$v"
    if [ ! -f "$venv/.complete" ]; then
      rm -rf "$venv"
      python3.11 -m venv "$venv"
      "$venv/bin/pip" install --quiet --disable-pip-version-check "kafka-python==$v"
      touch "$venv/.complete"
    fi
    "$venv/bin/python" "$ROOT/clients/kafka-python/golden/generate.py" >"$WORK/kafka-python-$v.json"
    write_fixture "$WORK/kafka-python-$v.json" "kafka-python-$v.json"
  done
}

known=$("$PY" -c "from conformance.members.kinds import golden_kinds; print(' '.join(golden_kinds()))")
targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$known"
for t in "${targets[@]}"; do
  fn="regen_${t//-/_}"
  if [[ " $known " != *" $t "* ]] || ! declare -F "$fn" >/dev/null; then
    echo "regen-golden: no golden generator for '$t' (kinds with one: $known)" >&2; exit 2
  fi
done
for t in "${targets[@]}"; do
  "regen_${t//-/_}"
done
