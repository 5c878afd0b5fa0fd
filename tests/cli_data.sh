# cli_data.sh: small test data made with plain POSIX tools (printf, dd,
# gzip), sourced by the end-to-end tests (cli_test.sh, mpi_test.sh). They
# set TMP, a folder of their own, first.

# byte N: writes the byte whose value is N (0..255).
byte() {
    # shellcheck disable=SC2059 # the format is the byte itself
    printf "\\$(printf '%03o' "$1")"
}

# be32 N: N as 4 big-endian bytes (IDX sizes).
be32() {
    byte $((($1 >> 24) & 255))
    byte $((($1 >> 16) & 255))
    byte $((($1 >> 8) & 255))
    byte $(($1 & 255))
}

# A deterministic pixel source: the bytes 0..255, repeated 1024 times
# (enough for 334 images of 28x28).
make_pattern() {
    i=0
    while [ $i -lt 256 ]; do
        byte $i
        i=$((i + 1))
    done >"$TMP/pattern"
    i=0
    while [ $i -lt 10 ]; do
        cat "$TMP/pattern" "$TMP/pattern" >"$TMP/pattern2"
        mv "$TMP/pattern2" "$TMP/pattern"
        i=$((i + 1))
    done
}

# idx_images FILE N: an IDX image file with N 28x28 images.
idx_images() {
    {
        printf '\000\000\010\003'
        be32 "$2"
        be32 28
        be32 28
        dd if="$TMP/pattern" bs=784 count="$2" 2>/dev/null
    } >"$1"
}

# idx_labels FILE N: an IDX label file whose label i is i % 10 (N a
# multiple of 10, so every label occurs N / 10 times).
idx_labels() {
    {
        printf '\000\000\010\001'
        be32 "$2"
        i=0
        while [ $i -lt "$2" ]; do
            printf '\000\001\002\003\004\005\006\007\010\011'
            i=$((i + 10))
        done
    } >"$1"
}

# mnist_dir DIR NTRAIN NTEST GZ: the four MNIST files (gzipped when GZ is 1).
mnist_dir() {
    mkdir -p "$1"
    idx_images "$1/train-images-idx3-ubyte" "$2"
    idx_labels "$1/train-labels-idx1-ubyte" "$2"
    idx_images "$1/t10k-images-idx3-ubyte" "$3"
    idx_labels "$1/t10k-labels-idx1-ubyte" "$3"
    if [ "$4" = 1 ]; then
        gzip -n "$1"/*-ubyte
    fi
}

# tiny_jpeg: an 8x8 RGB baseline JPEG (289 bytes, written by libjpeg with
# optimized Huffman tables).
tiny_jpeg() {
    printf '\377\330\377\333\000\103\000\020\013\014\016\014\012\020\016\015\016\022\021\020\023\030\050\032'
    printf '\030\026\026\030\061\043\045\035\050\072\063\075\074\071\063\070\067\100\110\134\116\100\104\127'
    printf '\105\067\070\120\155\121\127\137\142\147\150\147\076\115\161\171\160\144\170\134\145\147\143\377'
    printf '\333\000\103\001\021\022\022\030\025\030\057\032\032\057\143\102\070\102\143\143\143\143\143\143'
    printf '\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143'
    printf '\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\143\377\300\000\021'
    printf '\010\000\010\000\010\003\001\042\000\002\021\001\003\021\001\377\304\000\025\000\001\001\000\000'
    printf '\000\000\000\000\000\000\000\000\000\000\000\000\000\003\377\304\000\027\020\001\001\001\001\000'
    printf '\000\000\000\000\000\000\000\000\000\000\000\000\005\042\061\377\304\000\025\001\001\001\000\000'
    printf '\000\000\000\000\000\000\000\000\000\000\000\000\002\004\377\304\000\033\021\000\002\001\005\000'
    printf '\000\000\000\000\000\000\000\000\000\000\000\003\004\000\001\022\023\041\061\377\332\000\014\003'
    printf '\001\000\002\021\003\021\000\077\000\204\370\134\300\011\312\311\056\354\150\066\134\064\334\377'
    printf '\331'
}

