package age

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/perfsleuth/perfsleuth/internal/units"
)

// holesShare: below this share of the free space taken by the small
// files, the text says the allocator had untouched space for the aged
// write.
const holesShare = 0.5

// Text is the result for the terminal.
func (r *Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bench age: %s on %s (%s), %s free of %s\n", r.FS, r.Device, r.Config.Dir, units.FormatSize(r.FreeBytes), units.FormatSize(r.SizeBytes))
	if r.Interrupted {
		b.WriteString("  interrupted: what was measured before is below; everything the test made was removed\n")
	}
	each := onDisk(r.Config.Small, r.BlockSize)
	if r.Files > 0 {
		fmt.Fprintf(&b, "  ageing: %s small files of %s (%s each on the file system, %s in all), %s of them deleted (%.0f%%, spread evenly), in %.1f s\n",
			units.FormatCount(r.Files), units.FormatSize(r.Config.Small), units.FormatSize(each), units.FormatSize(r.Files*each),
			units.FormatCount(r.Deleted), r.Config.Delete*100, r.FillSec)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \twritten\tto the device\tamplification\trequests\textents\ttime\trate")
	row := func(name string, w *Write) {
		if w == nil {
			fmt.Fprintf(tw, "  %s\tnot measured\t\t\t\t\t\t\n", name)
			return
		}
		ext := "not told"
		if w.Extents >= 0 {
			ext = units.FormatCount(w.Extents)
		}
		rate := "-"
		if w.Seconds > 0 {
			rate = units.FormatSize(int64(float64(w.AppBytes)/w.Seconds)) + "/s"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.2fx\t%s\t%s\t%.2f s\t%s\n", name, units.FormatSize(w.AppBytes), units.FormatSize(w.DeviceBytes),
			w.Amplification, units.FormatCount(w.DeviceRequests), ext, w.Seconds, rate)
	}
	row("fresh", r.Fresh)
	row("aged", r.Aged)
	tw.Flush()
	if f, a := r.Fresh, r.Aged; f != nil && a != nil && f.Seconds > 0 && f.DeviceBytes > 0 && f.DeviceRequests > 0 {
		fmt.Fprintf(&b, "  the aged write took %.2fx the fresh one's time and wrote %.2fx its bytes to %s in %.1fx its requests",
			a.Seconds/f.Seconds, float64(a.DeviceBytes)/float64(f.DeviceBytes), r.Device, float64(a.DeviceRequests)/float64(f.DeviceRequests))
		if f.Extents > 0 && a.Extents >= 0 {
			fmt.Fprintf(&b, ", in %.1fx its extents (%s against %s)", float64(a.Extents)/float64(f.Extents), units.FormatCount(a.Extents), units.FormatCount(f.Extents))
		}
		b.WriteString("\n")
		if r.Root && r.RootReserveBytes >= r.Config.Write {
			fmt.Fprintf(&b, "  run as root, the writes may land in the %s the file system keeps for root (not in its free space), where no small file was: run bench age as another user, or on a file system without that reserve (tune2fs -m 0), to age all of it\n",
				units.FormatSize(r.RootReserveBytes))
		}
		if r.FreeBytes > 0 && float64(r.Files*each) < holesShare*float64(r.FreeBytes) {
			fmt.Fprintf(&b, "  the small files took %.0f%% of the free space: the file system could place the aged write where no small file had been; a file system ages when holes between files are most of its free space: give an --area near the free space less --write and 2%% of the file system\n",
				100*float64(r.Files*each)/float64(r.FreeBytes))
		}
	}
	fmt.Fprintf(&b, "  device bytes and requests: what %s completed for writes from the first write to the end of the fsync (/proc/diskstats), the file system's metadata and journal included, and other processes' writes to %s in that time\n", r.Device, r.Device)
	fmt.Fprintf(&b, "  the device's own writes: %s\n", r.DeviceWrites)
	own := func(name string, w *Write) {
		if w == nil || w.NVMeHostBytes == 0 && w.MediaBytes == 0 {
			return
		}
		fmt.Fprintf(&b, "    %s: the device says hosts sent it %s", name, units.FormatSize(w.NVMeHostBytes))
		if w.MediaBytes > 0 {
			fmt.Fprintf(&b, " and it wrote %s to its media, %.2fx what the application wrote", units.FormatSize(w.MediaBytes), w.MediaAmplification)
		} else {
			b.WriteString("; it does not say what it wrote to its media (no OCP log)")
		}
		b.WriteString("\n")
	}
	own("fresh", r.Fresh)
	own("aged", r.Aged)
	return b.String()
}
