#!/bin/sh
# Writes register contents into the chips of an i2c-stub bus (guest side: POSIX sh + i2c-tools).
#
#   i2c-load.sh BUS FILE           apply every "ADDR REG HEXBYTES" line of FILE (i2c-load.txt),
#                                  read each back, exit 1 naming the first line that fails
#   i2c-load.sh --steps BUS FILE   run a "SECONDS ADDR REG HEXBYTES" schedule (i2c-steps.txt):
#                                  each line is applied SECONDS after the start, then exit
#                                  (1 if any line failed; every failure is logged as it happens)
#
# BUS is the N of /dev/i2c-N. HEXBYTES go to REG, REG+1, … in one transfer (the stub
# auto-increments). Blank lines and lines starting with # are skipped. FILE is checked in
# full before anything is written.
#
# Environment:
#   I2C_TOOL=i2ctransfer|i2cset  how to write (default: i2ctransfer when installed). i2ctransfer
#                                sends a line as ONE I2C_RDWR message [REG, bytes…], so the agent
#                                never reads half of a 6-byte sample; i2cset writes byte by byte
#                                (SMBus byte data), for a stub without I2C_RDWR.
#   I2C_VERIFY=1|0               read each line back after writing it (default 1)
#   I2C_WAIT=SECONDS             wait this long for /dev/i2c-BUS to appear (default 10)
#   I2C_DEVICE=PATH              the node to wait for instead of /dev/i2c-BUS (tests)
set -u
set -f # no pathname expansion: lines are split into words, never globbed

me=${I2C_LOAD_NAME:-i2c-load.sh}
mode=load
if [ "${1:-}" = "--steps" ]; then
    mode=steps
    shift
fi
if [ $# -ne 2 ]; then
    echo "usage: $me [--steps] BUS FILE" >&2
    exit 2
fi
bus=$1
file=$2
verify=${I2C_VERIFY:-1}

case $bus in
    ''|*[!0-9]*) echo "$me: BUS must be the number N of /dev/i2c-N, not '$bus'" >&2; exit 2 ;;
esac
if [ ! -r "$file" ]; then
    echo "$me: cannot read $file" >&2
    exit 2
fi

tool=${I2C_TOOL:-}
if [ -z "$tool" ]; then
    if command -v i2ctransfer >/dev/null 2>&1; then tool=i2ctransfer; else tool=i2cset; fi
fi
case $tool in
    i2ctransfer) need="i2ctransfer" ;;
    i2cset) need="i2cset i2cget" ;;
    *) echo "$me: I2C_TOOL must be i2ctransfer or i2cset, not '$tool'" >&2; exit 2 ;;
esac
for t in $need; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "$me: $t not found (install i2c-tools)" >&2
        exit 2
    fi
done

# ---- parsing (sets: l_secs l_addr l_reg l_bytes l_count, or l_error)

is_hex() { # 1-2 hex digits after 0x
    case $1 in
        0x[0-9a-fA-F]|0x[0-9a-fA-F][0-9a-fA-F]) return 0 ;;
        *) return 1 ;;
    esac
}

parse_line() { # $1 = "steps" or "load", $2 = the line (comments/blank already skipped)
    l_error=
    l_secs=0
    # shellcheck disable=SC2046 # word splitting is the point
    # lower case once a line, not once a byte: every fork costs ~50 ms in the emulated guest
    set -- "$1" $(printf '%s' "$2" | tr 'A-F' 'a-f')
    kind=$1
    shift
    if [ "$kind" = steps ]; then
        case ${1:-} in
            ''|*[!0-9]*) l_error="SECONDS must be a whole number of seconds, not '${1:-}'"; return 1 ;;
        esac
        l_secs=$1
        shift
    fi
    if [ $# -lt 3 ]; then
        l_error="want $( [ "$kind" = steps ] && printf 'SECONDS ')ADDR REG HEXBYTES"
        return 1
    fi
    if ! is_hex "$1"; then l_error="ADDR must be 0xNN, not '$1'"; return 1; fi
    if ! is_hex "$2"; then l_error="REG must be 0xNN, not '$2'"; return 1; fi
    l_addr=$(printf '0x%02x' "$(($1))")
    l_reg=$(printf '0x%02x' "$(($2))")
    if [ "$(($1))" -lt 3 ] || [ "$(($1))" -gt 119 ]; then l_error="ADDR $1 is not a 7-bit device address (0x03-0x77)"; return 1; fi
    shift 2
    l_bytes=
    l_count=0
    for b in "$@"; do
        case $b in
            [0-9a-fA-F][0-9a-fA-F]) ;;
            *) l_error="'$b' is not a hex byte (two hex digits, no 0x)"; return 1 ;;
        esac
        l_bytes="$l_bytes $b"
        l_count=$((l_count + 1))
    done
    if [ $((l_reg + l_count)) -gt 256 ]; then
        l_error="$l_count bytes from $l_reg run past register 0xff"
        return 1
    fi
    return 0
}

# ---- bus access

apply() { # write l_bytes at l_addr/l_reg; then read back when verifying. Sets a_error.
    a_error=
    if [ "$tool" = i2ctransfer ]; then
        args=
        for b in $l_bytes; do args="$args 0x$b"; done
        # shellcheck disable=SC2086
        if ! out=$(i2ctransfer -y "$bus" "w$((l_count + 1))@$l_addr" "$l_reg" $args 2>&1 </dev/null); then
            a_error="i2ctransfer: $out"
            return 1
        fi
    else
        i=0
        for b in $l_bytes; do
            r=$(printf '0x%02x' $((l_reg + i)))
            if ! out=$(i2cset -y -f "$bus" "$l_addr" "$r" "0x$b" 2>&1 </dev/null); then
                a_error="i2cset at register $r: $out"
                return 1
            fi
            i=$((i + 1))
        done
    fi
    [ "$verify" = 1 ] || return 0
    if [ "$tool" = i2ctransfer ]; then
        if ! out=$(i2ctransfer -y "$bus" "w1@$l_addr" "$l_reg" "r$l_count" 2>&1 </dev/null); then
            a_error="reading back with i2ctransfer: $out"
            return 1
        fi
    else
        out=
        i=0
        while [ "$i" -lt "$l_count" ]; do
            r=$(printf '0x%02x' $((l_reg + i)))
            if ! v=$(i2cget -y -f "$bus" "$l_addr" "$r" 2>&1 </dev/null); then
                a_error="reading back register $r with i2cget: $v"
                return 1
            fi
            out="$out $v"
            i=$((i + 1))
        done
    fi
    got=
    for v in $out; do
        case $v in
            0x[0-9a-fA-F]|0x[0-9a-fA-F][0-9a-fA-F]) got="$got $(printf '%02x' "$((v))")" ;;
            *) got="$got $v" ;;
        esac
    done
    if [ "$got" != "$l_bytes" ]; then
        a_error="read back${got:- nothing} instead of$l_bytes"
        return 1
    fi
    return 0
}

wait_for_bus() {
    dev=${I2C_DEVICE:-/dev/i2c-$bus}
    n=${I2C_WAIT:-10}
    while [ ! -e "$dev" ]; do
        if [ "$n" -le 0 ]; then
            echo "$me: $dev does not exist (modprobe i2c-dev and the stub first)" >&2
            exit 1
        fi
        sleep 1
        n=$((n - 1))
    done
}

# ---- check the whole file first

lineno=0
lines=0
last_secs=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    case $line in ''|'#'*) continue ;; esac
    if [ -z "$(printf '%s' "$line" | tr -d ' \t\r')" ]; then continue; fi
    line=$(printf '%s' "$line" | tr '\t\r' '  ')
    if ! parse_line "$mode" "$line"; then
        echo "$me: $file:$lineno: $l_error: $line" >&2
        exit 1
    fi
    if [ "$mode" = steps ] && [ "$l_secs" -lt "$last_secs" ]; then
        echo "$me: $file:$lineno: SECONDS go backwards ($l_secs after $last_secs): $line" >&2
        exit 1
    fi
    last_secs=$l_secs
    lines=$((lines + 1))
done <"$file"

wait_for_bus

# ---- run

sleep_pid=
trap 'if [ -n "$sleep_pid" ]; then kill "$sleep_pid" 2>/dev/null; fi; exit 143' TERM
trap 'if [ -n "$sleep_pid" ]; then kill "$sleep_pid" 2>/dev/null; fi; exit 130' INT
trap 'if [ -n "$sleep_pid" ]; then kill "$sleep_pid" 2>/dev/null; fi; exit 129' HUP

start=$(date +%s)
failed=0
applied=0
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    case $line in ''|'#'*) continue ;; esac
    if [ -z "$(printf '%s' "$line" | tr -d ' \t\r')" ]; then continue; fi
    line=$(printf '%s' "$line" | tr '\t\r' '  ')
    parse_line "$mode" "$line" || exit 1 # checked above
    if [ "$mode" = steps ]; then
        now=$(date +%s)
        wait_s=$((start + l_secs - now))
        if [ "$wait_s" -gt 0 ]; then
            # in the background, so TERM stops us at once rather than after the sleep
            sleep "$wait_s" &
            sleep_pid=$!
            wait "$sleep_pid"
            sleep_pid=
        fi
    fi
    if apply; then
        applied=$((applied + 1))
        if [ "$mode" = steps ]; then
            echo "$me: t+$(($(date +%s) - start))s $file:$lineno: $l_addr $l_reg$l_bytes"
        fi
    else
        echo "$me: $file:$lineno: $a_error: $line" >&2
        if [ "$mode" = load ]; then exit 1; fi
        failed=$((failed + 1))
    fi
done <"$file"

if [ "$mode" = load ]; then
    echo "$me: $file: $applied line(s) written to /dev/i2c-$bus with $tool$( [ "$verify" = 1 ] && printf ' and read back')"
else
    echo "$me: $file: schedule done after $(($(date +%s) - start)) s, $applied applied, $failed failed"
fi
[ "$failed" -eq 0 ]
