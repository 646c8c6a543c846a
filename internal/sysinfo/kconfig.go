package sysinfo

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// KernelConfig is the running kernel's build configuration, option to value
// ("CONFIG_HZ" to "250", "CONFIG_IRQ_TIME_ACCOUNTING" to "y"; an option not
// set is absent), read once from /proc/config.gz or, without it,
// /boot/config-RELEASE; ok is false when neither can be read.
func KernelConfig() (cfg map[string]string, ok bool) {
	c := kernelConfig()
	return c, c != nil
}

var kernelConfig = sync.OnceValue(func() map[string]string {
	var rd io.Reader
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			rd = z
		}
	}
	if rd == nil {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return nil
		}
		f, err := os.Open("/boot/config-" + unix.ByteSliceToString(u.Release[:]))
		if err != nil {
			return nil
		}
		defer f.Close()
		rd = f
	}
	cfg := map[string]string{}
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = v
		}
	}
	if sc.Err() != nil && len(cfg) == 0 {
		return nil
	}
	return cfg
})

// KernelHZ is the kernel's tick rate (CONFIG_HZ) from its configuration;
// 0 when the configuration cannot be read.
func KernelHZ() int {
	cfg, _ := KernelConfig()
	hz, _ := strconv.Atoi(cfg["CONFIG_HZ"])
	return hz
}
