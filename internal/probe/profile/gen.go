package profile

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -D__TARGET_ARCH_x86" -target amd64 -type pr_key -type pr_val -type pr_counters profile ../../../bpf/profile.bpf.c -- -I../../../bpf -I../../../bpf/include
