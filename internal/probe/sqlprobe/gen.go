package sqlprobe

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -D__TARGET_ARCH_x86" -target amd64 -type sq_stmt -type sq_counters -type sq_thread -type sq_tx_key -type sq_tx sqlstmt ../../../bpf/sqlstmt.bpf.c -- -I../../../bpf -I../../../bpf/include
