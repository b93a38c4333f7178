LIM=540 tools/device_s35.sh full   # carry [".carry/bins.tar.xz", ".carry/lib"], kind nvidia-h100-x1
