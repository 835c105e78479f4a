# shellcheck shell=bash
# Sourced by scripts/*.sh: install the Debian packages zarrfs needs to build, test and demo,
# only when one is missing. The remote-store tests run nginx (nginx-light), openssl and curl;
# bench/remote.sh also needs iproute2 (ip netns) and zarr-python's HTTP store (python3-fsspec,
# python3-aiohttp). test_refs.py writes NetCDF4/HDF5 files (python3-netcdf4, python3-h5py) and reads
# version-1 references through fsspec, which renders templates with python3-jinja2;
# test_variant_codecs.py has GDAL write Zarr (python3-gdal); test_strings.py writes AnnData
# (python3-anndata; xarray and msgpack for the writers still to test); test_tiff_view.py reads
# TIFF views with libtiff's tools, tifffile and PIL (libtiff-tools, python3-tifffile, python3-pil);
# test_netcdf_view.py reads netCDF views with ncdump, NCO, CDO and scipy (netcdf-bin, nco, cdo,
# python3-scipy). The zfp codecs build on libzfp (libzfp-dev); test_zfp.py writes zfpy arrays
# with numcodecs through python3-zfpy and v3 zfp chunks with the zfp command (zfp). Icechunk's
# reader is C++ over code flatc generates at build time (g++, flatbuffers-compiler,
# libflatbuffers-dev) and reads spec 1's config.yaml with libyaml (libyaml-dev).
# The GCS and Azure stores sign with OpenSSL's libcrypto (libssl-dev). test_metrics.py checks the
# metrics with promtool (prometheus) and serves them with prometheus-node-exporter's textfile
# collector (neither is started as a service in a container without systemd).
# tests/integration/icechunk_hostile.py re-encodes Icechunk files with flatc and the zstd command.
ZF_DEPS="meson ninja-build pkg-config gcc g++ flatbuffers-compiler libflatbuffers-dev libyaml-dev libssl-dev libfuse3-dev fuse3 libyajl-dev zlib1g-dev libdeflate-dev liblz4-dev
libzstd-dev libblosc-dev libbz2-dev liblzma-dev check python3-zarr python3-numcodecs
python3-numpy attr groff-base man-db systemd mount util-linux libcurl4-openssl-dev libxml2-dev libzip-dev libmsgpack-dev zip python3-vtk9
nginx-light openssl curl iproute2 python3-fsspec python3-aiohttp python3-h5py python3-netcdf4 python3-jinja2
python3-gdal python3-anndata python3-xarray python3-msgpack libtiff-tools python3-tifffile python3-pil
netcdf-bin nco cdo python3-scipy libzfp-dev python3-zfpy zfp
zstd prometheus prometheus-node-exporter"
# scripts/fuzz.sh: clang 14 (clang++ too) with its libFuzzer, ASan and UBSan runtimes; the zstd
# command decompresses Icechunk payloads for seeds (tests/fuzz/seeds.py).
ZF_FUZZ_DEPS="clang libclang-rt-14-dev zstd"

zf_install_deps() { # [PACKAGES] (default: $ZF_DEPS)
    local missing=()
    for p in ${1:-$ZF_DEPS}; do
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

# The integration tests read and write Zarr v3 with zarrita (npm), pinned in
# tests/integration/js/package-lock.json, and write Icechunk repositories with Icechunk's own npm
# package (its WebAssembly build: the native one needs glibc 2.38, Debian 12 has 2.36; Node.js
# >= 20.19) and zarrita, pinned in tests/integration/icechunk-js/package-lock.json and installed
# with `npm ci --cpu=wasm32` (which takes the wasm32-wasi package and leaves out the native
# ones). Install Debian's nodejs/npm only when npm is missing, and run `npm ci` in a directory
# only when its node_modules is missing or older than its lock file.
zf_install_js_deps() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "== installing: nodejs npm"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q nodejs npm
    fi
    zf_npm_ci tests/integration/js
    zf_npm_ci tests/integration/icechunk-js --cpu=wasm32
    zf_install_gcs_emulator
}

# The Cloud Storage emulator of firebase-tools (tests/integration/test_remote_gcs.py), about
# 300 MB and minutes to install: installed once per machine, not per clone or run, into
# $(zf_gcs_emulator_dir), a directory named after the lock file's SHA-256 (so that a new lock
# installs beside the old one); `npm ci` runs in a temporary directory renamed into place when
# it succeeds, so that an interrupted install is never taken for a finished one.
# tests/integration/gcs_emulator.py computes the same path.
zf_gcs_emulator_dir() {
    local lock=tests/integration/gcs-js/package-lock.json sum
    sum=$(sha256sum "$lock" | cut -c1-12)
    echo "${ZF_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zarrfs-tests}/gcs-js-$sum"
}

zf_install_gcs_emulator() {
    local dir tmp
    dir=$(zf_gcs_emulator_dir)
    [ -f "$dir/node_modules/firebase-tools/package.json" ] && return 0
    mkdir -p "$(dirname "$dir")"
    tmp=$(mktemp -d "$dir.tmp.XXXXXX")
    cp tests/integration/gcs-js/package.json tests/integration/gcs-js/package-lock.json "$tmp/"
    echo "== npm ci firebase-tools into $dir (once per machine)"
    if npm ci --prefix "$tmp" --no-audit --no-fund --loglevel=error >/dev/null &&
        mv -T "$tmp" "$dir" 2>/dev/null; then
        return 0
    fi
    rm -rf "$tmp"
    [ -f "$dir/node_modules/firebase-tools/package.json" ] # another install won the rename
}

zf_npm_ci() { # DIR [NPM OPTIONS]
    local dir=$1
    shift
    if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
        [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        echo "== npm ci --prefix $dir $*"
        npm ci --prefix "$dir" "$@" --no-audit --no-fund --loglevel=error >/dev/null
    fi
}
