#!/bin/sh
# Test stand-in for nvidia-smi (Molecule slurm, the lab's fault suite): -L lists two GPUs (the node
# check is content); the health query answers with the GPUs in /usr/local/share/gpulab-query.csv, the
# version query with their driver, the memory query with those GPUs idle (no process).
case "$*" in
  -L) printf 'GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)\nGPU 1: NVIDIA GeForce RTX 4090 (UUID: GPU-2)\n' ;;
  *--query-gpu=driver_version*) cut -d, -f5 /usr/local/share/gpulab-query.csv | tr -d ' ' ;;
  *--query-gpu=pci.bus_id,memory*) cut -d, -f4 /usr/local/share/gpulab-query.csv | sed 's/$/, 0, 24564/' ;;
  *--query-compute-apps=*) ;;
  *--query-gpu=*) cat /usr/local/share/gpulab-query.csv ;;
esac
