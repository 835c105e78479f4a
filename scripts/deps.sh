# shellcheck shell=bash
# Sourced by scripts/*.sh: install the Debian packages zarrfs needs to build, test and demo,
# only when one is missing.
ZF_DEPS="meson ninja-build pkg-config gcc libfuse3-dev fuse3 libyajl-dev zlib1g-dev liblz4-dev
libzstd-dev libblosc-dev libbz2-dev liblzma-dev check python3-zarr python3-numcodecs
python3-numpy attr"

zf_install_deps() {
    local missing=()
    for p in $ZF_DEPS; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "== installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q "${missing[@]}"
    fi
}
