#!/bin/sh
# layers.sh: the library's layers call downward only. core < ops < pipeline
# < devices < exec (DESIGN.md): a function defined in one folder may be
# called from the same folder or one above it, never from one below. Reads
# the symbols of the built objects (nm), so a call hidden behind a public
# header is found too. The sluice program (tools/) and the bindings call the
# public API only: no sl__ function. Prints each call that breaks a rule and
# fails on any; ends with "N passed, M failed" like the other scripts.

set -u
top_builddir=${top_builddir:-.}

rank() {
    case $1 in
    core) echo 0 ;; ops) echo 1 ;; pipeline) echo 2 ;; devices) echo 3 ;; exec) echo 4 ;;
    *) echo -1 ;;
    esac
}

list=$(mktemp "${TMPDIR:-/tmp}/sluice-layers.XXXXXX") || exit 99
trap 'rm -f "$list"' 0
trap 'exit 1' INT TERM HUP

# One line per symbol: "<D|U> <layer rank> <layer> <symbol> <object>".
objects=0
for layer in core ops pipeline devices exec; do
    r=$(rank "$layer")
    for o in $(find "$top_builddir/$layer" -name 'libsluice_internal_la-*.o'); do
        objects=$((objects + 1))
        nm "$o" | awk -v r="$r" -v l="$layer" -v o="${o#"$top_builddir"/}" '
            NF == 3 && $2 ~ /^[TDBR]$/ && $3 ~ /^sl/ { print "D", r, l, $3, o }
            NF == 2 && $1 == "U" && $2 ~ /^sl/ { print "U", r, l, $2, o }'
    done
done >"$list"

if [ "$objects" -eq 0 ]; then
    echo "layers.sh: no objects of libsluice_internal under $top_builddir (run make first)"
    exit 99
fi

# Each call to a function defined in a higher layer.
bad=$(awk '
    $1 == "D" { def_rank[$4] = $2; def_layer[$4] = $3; def_obj[$4] = $5; next }
    { use[NR] = $0 }
    END {
        for (i in use) {
            split(use[i], f, " ")
            s = f[4]
            if ((s in def_rank) && def_rank[s] > f[2])
                printf "%s (%s) calls %s, defined in %s (%s)\n", f[5], f[3], s, def_obj[s], def_layer[s]
        }
    }' "$list" | sort)

# The program and the bindings use the public API only (include/sluice/):
# no internal (sl__) function of the library.
for dir in tools bindings; do
    [ -d "$top_builddir/$dir" ] || continue
    for o in $(find "$top_builddir/$dir" -name '*.o'); do
        objects=$((objects + 1))
        nm "$o" | awk -v o="${o#"$top_builddir"/}" -v d="$dir" '
            $1 == "U" && $2 ~ /^sl__/ { printf "%s (%s) calls %s, internal to the library\n", o, d, $2 }'
    done
done >"$list.public"
if [ -s "$list.public" ]; then
    bad=$(printf '%s\n%s' "$bad" "$(sort -u "$list.public")" | sed '/^$/d')
fi
rm -f "$list.public"

echo "$objects objects read"
if [ -n "$bad" ]; then
    echo "FAIL: calls that break the layering:"
    echo "$bad" | sed 's/^/    /'
    echo "0 passed, 1 failed"
    exit 1
fi
echo "PASS: no call goes up a layer (core < ops < pipeline < devices < exec), and tools/ and"
echo "      bindings/ call no internal (sl__) function"
echo "1 passed, 0 failed"
