# Sourced at the start of every command on the GPU machine (it has no cJSON): the binaries
# built here link libcjson.so.1, carried in .carry/lib. NVLink multicast stays off (shared hosts).
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null || true
