# Shell functions shared by scripts/check_wheel.sh and scripts/check_wheel_aarch64.sh
# (sourced, not run): their logging helpers, and the checks both wheels must pass in the
# same words.

t0=$SECONDS
# step TEXT: a numbered heading with the seconds since this file was sourced
step() { printf '\n=== [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
pipq() { # a pip command, without the notes about absent extra indexes of this machine's
    "$@" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }
    return "${PIPESTATUS[0]}"
}
logged() { # logged LOG command... : output to LOG; its tail on success, more on failure
    local log=$1
    shift
    if "$@" >"$log" 2>&1; then
        grep -v "^WARNING: Location '.*' is ignored" "$log" | tail -n 3
    else
        tail -n 80 "$log"
        echo "FAIL: $* (full log: $log)" >&2
        return 1
    fi
}

# check_manylinux_tag SHOW WHEEL ARCH: SHOW is `auditwheel show WHEEL` of the repaired
# wheel; its platform tag and the wheel's file name must both be manylinux_*_ARCH.
check_manylinux_tag() {
    local show=$1 whl=$2 arch=$3 tag
    tag=$(tr '\n' ' ' <<<"$show" | sed -n 's/.*platform tag: *"\([^"]*\)".*/\1/p')
    case "$tag" in
    manylinux*_"$arch") echo "platform tag: $tag" ;;
    *) echo "FAIL: auditwheel show reports no manylinux $arch tag (got '${tag:-none}')" >&2; return 1 ;;
    esac
    case "$(basename "$whl")" in
    *-manylinux*_"$arch"*.whl) ;;
    *) echo "FAIL: the repaired wheel's name carries no manylinux $arch tag: $whl" >&2; return 1 ;;
    esac
}

# extract_core_so PYTHON WHEEL DIR: extracts the wheel's one gemmkit/_core*.so into DIR
# and prints its path.
extract_core_so() {
    "$1" - "$2" "$3" <<'PYEOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = [n for n in z.namelist() if n.startswith("gemmkit/_core") and n.endswith(".so")]
assert len(names) == 1, names
print(z.extract(names[0], sys.argv[2]))
PYEOF
}
