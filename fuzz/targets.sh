# targets.sh: what each libFuzzer target is made of and how it is built; sourced by fuzz/run.sh
# and fuzz/smoke.sh. Binaries are cached under $WORK/bin, named by a hash of everything that goes
# into them (sources, flags, compiler), so an unchanged target is never rebuilt.
#
# Two ways a target is built:
#  - "lib": the harness with `@testable import OSHCore`, linked against all of OSHCore built once
#    (instrumented the same way) and shared by every such target;
#  - "own": the harness compiled in one module with the few OSHCore files it needs (the older
#    targets, which were written that way; the WebSocket one stubs a type instead of OSHCore).

FUZZ_TARGETS=(nmea config websocket swe om spool http)

# target_spec TARGET: sets MODULE, HARNESS, OWN_SOURCES (empty: "lib"), MAX_LEN, DICT, SWIFT_EXTRA.
target_spec() {
    local core=$ROOT/Sources/OSHCore
    OWN_SOURCES=()
    DICT=
    SWIFT_EXTRA=()
    MAX_LEN=4096
    case "$1" in
        nmea)
            MODULE=FuzzNMEA; MAX_LEN=2048; DICT=$HERE/nmea/nmea.dict
            OWN_SOURCES=("$core"/GPS/*.swift "$core/Util/ISOTime.swift" "$core/JSON/ByteBuffer.swift"
                         "$core/JSON/JSONWriter.swift" "$core/Decoding/JSONValue.swift") ;;
        websocket)
            MODULE=FuzzWebSocket
            OWN_SOURCES=("$core"/WebSocket/*.swift "$core/Util/SHA1.swift" "$core/Util/Base64.swift"
                         "$core/JSON/ByteBuffer.swift" "$HERE/websocket/Stubs.swift" "$core/Util/SHA256.swift"
                         "$core/Util/BlockHash.swift") ;;
        config) MODULE=FuzzConfig; DICT=$HERE/config/config.dict ;;
        swe) MODULE=FuzzSWE; DICT=$HERE/swe/swe.dict ;;
        om) MODULE=FuzzOM; DICT=$HERE/om/om.dict ;;
        spool) MODULE=FuzzSpool; MAX_LEN=8192; OWN_SOURCES=("$core/Publishing/SpoolFormat.swift") ;;
        http)
            MODULE=FuzzHTTP; DICT=$HERE/http/http.dict
            # The header callback lives in OSHPlatform next to libcurl's handle; only these two files come along.
            SWIFT_EXTRA=(-I "$ROOT/Sources/CCurl" "$ROOT/Sources/OSHPlatform/HTTP/HTTPTransfer.swift"
                         "$ROOT/Sources/OSHPlatform/HTTP/HTTPResult.swift") ;;
        *) return 1 ;;
    esac
    HARNESS=$HERE/$1/$MODULE.swift
}

# fuzz_toolchain_check: exit 2 when swiftc cannot -sanitize=fuzzer.
fuzz_toolchain_check() {
    TOOLCHAIN_BIN=$(dirname -- "$(readlink -f -- "$(command -v "$SWIFTC")")")
    if ! compgen -G "$TOOLCHAIN_BIN/../lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null; then
        echo "fuzz: this toolchain ($TOOLCHAIN_BIN) has no libFuzzer runtime (libclang_rt.fuzzer-$(uname -m).a); it cannot -sanitize=fuzzer" >&2
        exit 2
    fi
    LINKER=()
    if command -v ld.lld >/dev/null 2>&1 || [[ -x $TOOLCHAIN_BIN/ld.lld ]]; then LINKER=(-use-ld=lld); fi
}

# hash_of FILES... FLAGS...: a short key for the cache (file contents, flags, compiler version).
hash_of() {
    { for a in "$@"; do if [[ -f $a ]]; then sha256sum <"$a"; else echo "$a"; fi; done
      "$SWIFTC" --version 2>&1; } | sha256sum | cut -c1-16
}

# build_core SANITIZE OPT: all of OSHCore as a static library for the "lib" targets; prints its directory.
build_core() {
    local sanitize=$1 opt=$2 core_files key dir
    mapfile -t core_files < <(find "$ROOT/Sources/OSHCore" -name '*.swift' | sort)
    key=$(hash_of "${core_files[@]}" "$sanitize" "$opt")
    dir=$WORK/bin/OSHCore-$key
    if [[ ! -f $dir/libOSHCore.a ]]; then
        rm -rf "$dir.tmp"
        mkdir -p "$dir.tmp"
        echo "fuzz: building OSHCore (-sanitize=$sanitize $opt) into $dir" >&2
        (cd "$dir.tmp" && nice "$SWIFTC" -sanitize="$sanitize" -parse-as-library "$opt" -g -enable-testing -wmo -num-threads 2 \
            -module-name OSHCore -emit-module -emit-module-path "$dir.tmp/OSHCore.swiftmodule" \
            -emit-library -static -o "$dir.tmp/libOSHCore.a" "${core_files[@]}") >&2 || return 1
        rm -rf "$dir"
        mv "$dir.tmp" "$dir"
    fi
    echo "$dir"
}

# build_target TARGET SANITIZE OPT: builds (or reuses) the target's binary; prints its path.
build_target() {
    local target=$1 sanitize=$2 opt=$3 key bin lib=
    target_spec "$target" || { echo "fuzz: no target '$target' (${FUZZ_TARGETS[*]})" >&2; return 1; }
    if [[ ${#OWN_SOURCES[@]} == 0 ]]; then
        lib=$(build_core "$sanitize" "$opt") || return 1
    fi
    key=$(hash_of "$HARNESS" "${OWN_SOURCES[@]}" "${SWIFT_EXTRA[@]}" "$sanitize" "$opt" "$lib")
    bin=$WORK/bin/fuzz-$target-$key
    if [[ ! -x $bin ]]; then
        echo "fuzz: building $bin (-sanitize=$sanitize $opt)" >&2
        local link=()
        [[ -n $lib ]] && link=(-I "$lib" -L "$lib" -lOSHCore)
        mkdir -p "$WORK/bin/tmp-$target"
        (cd "$WORK/bin/tmp-$target" && nice "$SWIFTC" -sanitize="$sanitize" -parse-as-library "$opt" -g "${LINKER[@]}" \
            -module-name "$MODULE" -o "$bin.tmp" "$HARNESS" "${OWN_SOURCES[@]}" "${SWIFT_EXTRA[@]}" "${link[@]}") >&2 || return 1
        mv "$bin.tmp" "$bin"
    fi
    echo "$bin"
}

# seed_dirs TARGET DIR: fills DIR with seeds that are not in the committed corpus (config examples,
# the NMEA golden logs in 24-line pieces) and prints DIR when it has any.
seed_dirs() {
    local target=$1 dir=$2
    rm -rf "$dir"
    mkdir -p "$dir"
    case "$target" in
        config) cp "$ROOT/deploy/osh-edge.conf.example" "$ROOT"/board/profiles/*.conf "$dir/" ;;
        nmea)
            local f
            for f in "$ROOT"/Tests/OSHCoreTests/Fixtures/nmea/gpsd-3.22/*.log; do
                split -l 24 -d -a 3 "$f" "$dir/$(basename "$f" .log)-"
            done ;;
        *) return 0 ;;
    esac
    echo "$dir"
}

# fuzz_stats LOG: sets EXECS, TIME_S, RATE, COV from a libFuzzer log.
fuzz_stats() {
    local log=$1
    EXECS=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [[ -n $EXECS ]] || EXECS=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    TIME_S=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    # -fork (--jobs) prints no "Done" line, but how long it ran when it exits.
    [[ -n $TIME_S ]] || TIME_S=$(sed -n 's/^INFO: exiting: [0-9]* time: \([0-9]*\)s.*/\1/p' "$log" | tail -1)
    COV=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    RATE=
    [[ -n $EXECS && -n $TIME_S && $TIME_S -gt 0 ]] && RATE=$((EXECS / TIME_S))
    : "${EXECS:=0}" "${COV:=?}"
}

# findings DIR: crash/timeout/oom/leak files libFuzzer left there.
findings() {
    compgen -G "$1/crash-*" ; compgen -G "$1/timeout-*" ; compgen -G "$1/oom-*" ; compgen -G "$1/leak-*"
    true
}
