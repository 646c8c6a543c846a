package timeacct

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -D__TARGET_ARCH_x86" -target amd64 -type ta_thread -type ta_ranges -type ta_counters -type ta_sync_stats -type ta_sync_start -type ta_agg -type ta_file_key -type ta_file -type ta_sys_key -type ta_sys_stats -type ta_offcpu_key -type ta_offcpu -type ta_enq timeacct ../../../bpf/timeacct.bpf.c -- -I../../../bpf -I../../../bpf/include
//go:generate ./gensysnames.sh
