# Sourced at the start of every command on the GPU machine (it has no cJSON): the binaries
# built here link libcjson.so.1, carried in .carry/lib. NVLink multicast stays off (shared hosts).
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null || true
# The binaries packed by tools/device_pack.sh: unpacked once per machine into .carry/x/bd (again
# when the archive is newer); AGOQ_B names that directory (agoq, agoq_test_cuda, commit.stamp).
if [ -f .carry/bins.tar.xz ]; then
  if [ ! -f .carry/x/bd/commit.stamp ] || [ .carry/bins.tar.xz -nt .carry/x/bd/commit.stamp ]; then
    rm -rf .carry/x && mkdir -p .carry/x && tar -C .carry/x -xJf .carry/bins.tar.xz && touch .carry/x/bd/commit.stamp
  fi
  export AGOQ_B="$PWD/.carry/x/bd"
  echo "device_env: binaries of commit $(cat "$AGOQ_B/commit.stamp" 2>/dev/null) in $AGOQ_B"
fi
