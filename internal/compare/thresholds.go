package compare

// The thresholds below decide when a measured quantity "differs" between two
// runs. Most runs on each side are single runs, whose noise is unknown, so
// each threshold sits above what identical runs showed: four identical
// `observe sqlite --rows 2000` runs each of WAL+NORMAL and DELETE+FULL on the
// 2-vCPU development VM (virtio disk, ext4), the figures quoted with each
// constant. docs/compare.md has the table.

// materialChange is the smallest change in the headline that compare sets
// out to explain when the noise is unknown: the same 10% that makes a
// resource a bottleneck in diagnose (analyze's materialChange: 7% under IO
// pressure was "not the bottleneck" in the field report, 36-52% was).
const materialChange = 0.10

// driftNote says why a change beyond both sides' noise must still be
// material (materialChange) to be significant: A's and B's repeats were
// made one batch after the other, and a shared machine drifts between
// batches by more than it moves within one. Two batches of five identical
// `diagnose --conditions baseline --repeat 5 sqlite --rows 500` runs, one
// after the other on the development VM, were 7% apart (interval [-9%,
// -1%], noise ±6% and ±4%) and 9% apart (interval [-2%, +14%]).
const driftNote = "that two batches of identical runs made one after the other drift apart on a shared machine: " + driftAdvice

// noiseSigmas: a side's noise, and the rounds' noise of an interleaved
// comparison, are two robust standard deviations (analyze's noiseSigmas).
const noiseSigmas = 2

// driftAdvice is how to compare without drift between batches.
const driftAdvice = "run A and B interleaved on one machine (perfsleuth compare --run 'A's workload' --run 'B's workload')"

// minCauseShare: a candidate cause is named only when its evidence accounts
// for at least a tenth of the headline's time difference; smaller ones are
// within what identical runs' accounting moves by (materialChange).
const minCauseShare = 0.10

// maxCauses is how many candidate causes the explanation lists.
const maxCauses = 3

// shareGap: a category's share of the busy threads' time differs when it
// moved by 20 points or more. Identical DELETE+FULL runs moved storage-sync's
// share by up to 14 points (33-47%); 20 is twice the 10 points that would
// change the result by the material 10%.
const shareGap = 0.20

// accountingMinBusySec: shares are judged only when both runs' busy threads
// were accounted for a second or more. Identical WAL+NORMAL runs of 0.2-0.4
// s moved lock and sleep by up to 30 points: in a short window the set-up
// and tear-down around the measured phase weigh as much as the work.
const accountingMinBusySec = 1.0

// countRatio: a count per unit of work (sync calls, block requests, context
// switches) differs at twice or half. Identical runs kept these within 1.35x
// (syncs per transaction exactly, block write requests per transaction 1.35x
// at WAL checkpoints, voluntary switches 1.25x, involuntary 1.55x).
const countRatio = 2.0

// countMinEvents: counts are judged when one side has 100 events or more
// over its run; fewer are a run's start-up and tear-down.
const countMinEvents = 100

// preemptMinEvents: involuntary context switches are caused by the other
// tasks on the machine, not by the workload: identical runs with 80-450 of
// them differed 5.6x, with 2,500-3,800 1.55x. They are judged from 1,000.
const preemptMinEvents = 1000

// latencyRatio and latencyMinSamples: a mean latency (sync calls, block
// service and queue time) differs at twice or half, when both sides have
// 1,000 or more samples. With thousands of samples identical runs' means
// stayed within 1.2x (fdatasync 1.12x over 24,000 calls, flush service 1.18x,
// write service 1.2x); with about 200 they moved up to 2.9x.
const (
	latencyRatio      = 2.0
	latencyMinSamples = 1000
)

// sizeRatio: the mean size of the workload's block requests differs at twice
// or half: one step of the probe's log2 size histogram. Identical runs moved
// it up to 1.42x (WAL checkpoints, 192-272 KiB).
const sizeRatio = 2.0

// cacheHitRatioMin and cacheMinLookups are analyze's cache.miss_heavy
// thresholds: below a 0.9 hit ratio one page in ten comes from the device,
// which outweighs the hits; fewer than 1,000 lookups are a cold start.
// hitRatioGap: a 10-point change in the hit ratio is as many extra device
// reads per page as cacheHitRatioMin allows in all. Identical runs: 1.0.
const (
	cacheHitRatioMin = 0.9
	cacheMinLookups  = 1000
	hitRatioGap      = 0.10
)

// concurrencyGap: busy threads at once (their accounted seconds over the
// window) differ by half a thread or more: half a CPU's worth of parallel
// work. Identical single-threaded runs differed by under 0.01.
const concurrencyGap = 0.5

// memTolerance: the machines' memory differs beyond 5%; MemTotal moves by
// a few MiB between kernels and boots (memory the kernel reserves).
const memTolerance = 0.05

// adviceRepeat is the repeats compare suggests to learn a run's noise: with
// diagnose's default of 3 the bootstrap interval excludes zero only when the
// runs barely overlap, and TestExperimentSyncBound needed 5 on the CI machine.
const adviceRepeat = 5
