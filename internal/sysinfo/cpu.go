package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// cpuinfoBlock is one "processor" stanza of /proc/cpuinfo as key -> value.
type cpuinfoBlock map[string]string

// parseCPUInfo splits /proc/cpuinfo into per-processor stanzas. procfs has a
// cpuinfo reader, but it picks its parser by the architecture perfsleuth was
// built for (an amd64 build drops "CPU part" lines), so an ARM fixture could
// not be tested on x86 and a cross-built binary would misread the host; the
// format is simple enough to read here for every architecture at once.
// Stanzas without a "processor" key (the trailing "Hardware"/"Serial" block
// of 32-bit ARM) are returned as extra, not as CPUs.
func parseCPUInfo(data []byte) (cpus []cpuinfoBlock, extra cpuinfoBlock) {
	extra = cpuinfoBlock{}
	cur := cpuinfoBlock{}
	flush := func() {
		if len(cur) == 0 {
			return
		}
		if _, ok := cur["processor"]; ok {
			cpus = append(cpus, cur)
		} else {
			for k, v := range cur {
				extra[k] = v
			}
		}
		cur = cpuinfoBlock{}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		// A new "processor" line without a blank line before it (some ARM
		// kernels) still starts a new CPU.
		if _, dup := cur[k]; dup && k == "processor" {
			flush()
		}
		if _, dup := cur[k]; !dup {
			cur[k] = v
		}
	}
	flush()
	return cpus, extra
}

// armPart names a core from its MIDR implementer and part number. The values
// are those of the Linux kernel's arch/arm64/include/asm/cputype.h.
type armPart struct {
	implementer uint64
	part        uint64
}

var armImplementers = map[uint64]string{
	0x41: "ARM",
	0x42: "Broadcom",
	0x43: "Cavium",
	0x46: "Fujitsu",
	0x48: "HiSilicon",
	0x4e: "NVIDIA",
	0x50: "APM",
	0x51: "Qualcomm",
	0x61: "Apple",
	0x6d: "Microsoft",
	0xc0: "Ampere",
}

var armParts = map[armPart]string{
	{0x41, 0xd03}: "Cortex-A53",
	{0x41, 0xd04}: "Cortex-A35",
	{0x41, 0xd05}: "Cortex-A55",
	{0x41, 0xd07}: "Cortex-A57",
	{0x41, 0xd08}: "Cortex-A72",
	{0x41, 0xd09}: "Cortex-A73",
	{0x41, 0xd0a}: "Cortex-A75",
	{0x41, 0xd0b}: "Cortex-A76",
	{0x41, 0xd0c}: "Neoverse-N1",
	{0x41, 0xd0d}: "Cortex-A77",
	{0x41, 0xd0e}: "Cortex-A76AE",
	{0x41, 0xd40}: "Neoverse-V1",
	{0x41, 0xd41}: "Cortex-A78",
	{0x41, 0xd42}: "Cortex-A78AE",
	{0x41, 0xd44}: "Cortex-X1",
	{0x41, 0xd46}: "Cortex-A510",
	{0x41, 0xd47}: "Cortex-A710",
	{0x41, 0xd48}: "Cortex-X2",
	{0x41, 0xd49}: "Neoverse-N2",
	{0x41, 0xd4b}: "Cortex-A78C",
	{0x41, 0xd4c}: "Cortex-X1C",
	{0x41, 0xd4d}: "Cortex-A715",
	{0x41, 0xd4e}: "Cortex-X3",
	{0x41, 0xd4f}: "Neoverse-V2",
	{0x41, 0xd80}: "Cortex-A520",
	{0x41, 0xd81}: "Cortex-A720",
	{0x41, 0xd82}: "Cortex-X4",
	{0x41, 0xd84}: "Neoverse-V3",
	{0x41, 0xd85}: "Cortex-X925",
	{0x41, 0xd87}: "Cortex-A725",
	{0x41, 0xd8e}: "Neoverse-N3",
	// Qualcomm: 0x800 is both Kryo 2xx Gold and Falkor v1 in cputype.h.
	// Kryo 5xx/6xx cores report ARM's own part numbers.
	{0x51, 0x200}: "Kryo",
	{0x51, 0x800}: "Kryo 2xx Gold / Falkor v1",
	{0x51, 0x801}: "Kryo 2xx Silver",
	{0x51, 0x802}: "Kryo 3xx Gold",
	{0x51, 0x803}: "Kryo 3xx Silver",
	{0x51, 0x804}: "Kryo 4xx Gold",
	{0x51, 0x805}: "Kryo 4xx Silver",
	{0x51, 0xc00}: "Falkor",
	{0x51, 0x001}: "Oryon",
	{0x61, 0x022}: "Apple M1 Icestorm",
	{0x61, 0x023}: "Apple M1 Firestorm",
	{0x61, 0x024}: "Apple M1 Pro Icestorm",
	{0x61, 0x025}: "Apple M1 Pro Firestorm",
	{0x61, 0x028}: "Apple M1 Max Icestorm",
	{0x61, 0x029}: "Apple M1 Max Firestorm",
	{0x61, 0x032}: "Apple M2 Blizzard",
	{0x61, 0x033}: "Apple M2 Avalanche",
	{0x61, 0x034}: "Apple M2 Pro Blizzard",
	{0x61, 0x035}: "Apple M2 Pro Avalanche",
	{0x61, 0x038}: "Apple M2 Max Blizzard",
	{0x61, 0x039}: "Apple M2 Max Avalanche",
	{0x4e, 0x003}: "NVIDIA Denver",
	{0x4e, 0x004}: "NVIDIA Carmel",
	{0x46, 0x001}: "Fujitsu A64FX",
	{0x48, 0xd01}: "HiSilicon TaiShan v110",
	{0x43, 0x0af}: "Cavium ThunderX2",
	{0xc0, 0xac3}: "Ampere-1",
	{0xc0, 0xac4}: "Ampere-1A",
}

// armCoreName decodes "CPU implementer" and "CPU part" (hex strings as
// /proc/cpuinfo prints them) into a core name.
func armCoreName(implementer, part string) string {
	imp, errI := strconv.ParseUint(implementer, 0, 32)
	p, errP := strconv.ParseUint(part, 0, 32)
	if errI != nil || errP != nil {
		return fmt.Sprintf("ARM implementer %s part %s", implementer, part)
	}
	if name, ok := armParts[armPart{imp, p}]; ok {
		return name
	}
	if vendor, ok := armImplementers[imp]; ok {
		return fmt.Sprintf("%s part %#x", vendor, p)
	}
	return fmt.Sprintf("ARM implementer %#x part %#x", imp, p)
}

// collectCPUs reads /proc/cpuinfo and the cpufreq directories under sysRoot.
func collectCPUs(procRoot, sysRoot string) (cpus []model.CPU, cpuModel string, warnings []string) {
	data, err := os.ReadFile(filepath.Join(procRoot, "cpuinfo"))
	if err != nil {
		return nil, "", []string{fmt.Sprintf("cpu types unknown: %v", err)}
	}
	blocks, extra := parseCPUInfo(data)
	hybrid := intelHybridTypes(sysRoot)
	for _, b := range blocks {
		id, err := strconv.Atoi(b["processor"])
		if err != nil {
			continue
		}
		c := model.CPU{ID: id}
		switch {
		case b["cpu implementer"] != "" && b["cpu part"] != "":
			c.Implementer = b["cpu implementer"]
			c.Part = b["cpu part"]
			c.Type = armCoreName(c.Implementer, c.Part)
		case b["model name"] != "":
			c.Type = b["model name"]
			if t := hybrid[id]; t != "" {
				c.Type += " (" + t + ")"
			}
		default:
			// Other architectures: "cpu" (ppc64), "uarch" (riscv).
			c.Type = firstNonEmpty(b["cpu"], b["uarch"], b["isa"])
		}
		cpus = append(cpus, c)
	}
	sort.Slice(cpus, func(i, j int) bool { return cpus[i].ID < cpus[j].ID })
	cpuModel = cpuModelName(blocks, extra, cpus)
	fillFrequencies(sysRoot, cpus)
	return cpus, cpuModel, nil
}

// cpuModelName is the x86 "model name", or on ARM (which has none) the mix of
// core types, e.g. "4x Cortex-A53 + 4x Cortex-A73".
func cpuModelName(blocks []cpuinfoBlock, extra cpuinfoBlock, cpus []model.CPU) string {
	if len(blocks) > 0 && blocks[0]["model name"] != "" && blocks[0]["cpu part"] == "" {
		return blocks[0]["model name"]
	}
	var order []string
	count := map[string]int{}
	for _, c := range cpus {
		if c.Type == "" {
			continue
		}
		if count[c.Type] == 0 {
			order = append(order, c.Type)
		}
		count[c.Type]++
	}
	parts := make([]string, 0, len(order))
	for _, t := range order {
		parts = append(parts, fmt.Sprintf("%dx %s", count[t], t))
	}
	if len(parts) > 0 {
		return strings.Join(parts, " + ")
	}
	return firstNonEmpty(extra["model name"], extra["hardware"], extra["model"])
}

// intelHybridTypes maps CPU ids to "P-core"/"E-core" on Intel hybrid parts,
// where every core reports the same model name and the kernel exposes one PMU
// per core type instead.
func intelHybridTypes(sysRoot string) map[int]string {
	out := map[int]string{}
	for dir, name := range map[string]string{"cpu_core": "P-core", "cpu_atom": "E-core"} {
		b, err := os.ReadFile(filepath.Join(sysRoot, "devices", dir, "cpus"))
		if err != nil {
			continue
		}
		for _, id := range ParseCPUList(string(b)) {
			out[id] = name
		}
	}
	return out
}

// ParseCPUList parses the kernel's CPU list format ("0-3,5,7-8"); parts
// that are not numbers or ranges of ids from 0 to MaxCPUID are skipped.
func ParseCPUList(s string) []int {
	var ids []int
	for r := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		if r == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > MaxCPUID {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b > MaxCPUID {
				continue
			}
		}
		for i := a; i <= b; i++ {
			ids = append(ids, i)
		}
	}
	return ids
}

// MaxCPUID is the largest CPU id ParseCPUList takes: Linux's NR_CPUS goes
// to 8192 on the largest configurations, and a list of ids past this
// (a broken file, a typing mistake) would otherwise be a list of billions.
const MaxCPUID = 1<<16 - 1

// FormatCPUList writes ascending CPU ids in the kernel's CPU list format.
func FormatCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// fillFrequencies adds cpufreq data from
// /sys/devices/system/cpu/cpuN/cpufreq. VMs usually have no cpufreq at all,
// which is not worth a warning.
//
// procfs/sysfs has a cpufreq reader (SystemCpufreq), but it needs
// golang.org/x/sync, which is not in go.mod, fails as a whole when one file
// is unreadable, and reads cpuinfo_cur_freq (root only, slow on some
// drivers); three small files per CPU are read here instead.
func fillFrequencies(sysRoot string, cpus []model.CPU) {
	for i := range cpus {
		dir := filepath.Join(sysRoot, "devices/system/cpu", "cpu"+strconv.Itoa(cpus[i].ID), "cpufreq")
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		cpus[i].CurFreqKHz = readInt(filepath.Join(dir, "scaling_cur_freq"))
		cpus[i].MaxFreqKHz = readInt(filepath.Join(dir, "cpuinfo_max_freq"))
		if cpus[i].MaxFreqKHz == 0 {
			cpus[i].MaxFreqKHz = readInt(filepath.Join(dir, "scaling_max_freq"))
		}
		cpus[i].Governor = ReadString(filepath.Join(dir, "scaling_governor"))
	}
}

// readInt reads a sysfs file holding one integer; 0 when absent or unreadable
// (some drivers write "<unknown>").
func readInt(path string) int64 {
	v, err := strconv.ParseInt(ReadString(path), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// ReadString is a file's text, trimmed of white space; "" when it cannot
// be read (a /proc or /sys file that is not there).
func ReadString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
