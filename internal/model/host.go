package model

// Host is what the machine was, so that two runs can be compared knowingly.
type Host struct {
	Hostname      string `json:"hostname"`
	Kernel        string `json:"kernel"`
	Arch          string `json:"arch"`
	CPUModel      string `json:"cpu_model"`
	CPUsOnline    int    `json:"cpus_online"`
	CPUs          []CPU  `json:"cpus"`
	MemTotalBytes int64  `json:"mem_total_bytes"`
	// Storage describes where the workload's files live (absent for commands
	// and PIDs unless a directory is known).
	Storage *Storage `json:"storage,omitempty"`
}

// CPU is one logical CPU: its type and frequency policy.
type CPU struct {
	ID int `json:"id"`
	// Type is the decoded core type, e.g. "Cortex-A53" from ARM's CPU part 0xd03;
	// the model name on x86.
	Type        string `json:"type"`
	Implementer string `json:"implementer,omitempty"`
	Part        string `json:"part,omitempty"`
	CurFreqKHz  int64  `json:"cur_freq_khz,omitempty"`
	MaxFreqKHz  int64  `json:"max_freq_khz,omitempty"`
	Governor    string `json:"governor,omitempty"`
}

// Storage is the file system and block device behind a directory.
type Storage struct {
	Dir          string `json:"dir"`
	MountPoint   string `json:"mount_point"`
	FSType       string `json:"fs_type"`
	MountOptions string `json:"mount_options"`
	Source       string `json:"source"`
	// Device is the block device holding the file system (e.g. "vda"), and
	// Disks the whole disks under it (a partition's disk, a dm device's slaves).
	Device     string   `json:"device,omitempty"`
	Disks      []string `json:"disks,omitempty"`
	Scheduler  string   `json:"scheduler,omitempty"`
	Rotational *bool    `json:"rotational,omitempty"`
	SizeBytes  int64    `json:"size_bytes,omitempty"`
	FreeBytes  int64    `json:"free_bytes,omitempty"`
}
