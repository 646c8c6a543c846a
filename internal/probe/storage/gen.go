package storage

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -D__TARGET_ARCH_x86" -target amd64 -type st_dev_key -type st_dev_stats -type st_disk -type st_rq -type st_cache -type st_file_key -type st_file -type st_pos -type st_event -type st_counters -type st_ring storage ../../../bpf/storage.bpf.c -- -I../../../bpf -I../../../bpf/include
