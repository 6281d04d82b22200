package fanout

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"time"
)

// Where a job's objects live, relative to its prefix. Task outputs carry
// their attempt's token in the name, so two attempts of one task never
// write the same object; only the driver's manifest says which one
// counts.
const specKey = "job.json"

// A phase's data objects are spread over Spec.Spread key prefixes
// (p0/00/ .. p0/ff/ at most), so that no prefix takes more than its share
// of S3's per-prefix request rate: S3 partitions a bucket by key prefix
// and answers 503 SlowDown above 3,500 writes and 5,500 reads a second on
// one, and a shuffle's reducers read every map object at once. Task t of
// a phase goes under prefix t mod spread (spread 1: all under p0/),
// which puts consecutive tasks, started together, under different
// prefixes, and each prefix in a key range of its own.
func dataKey(phase, task, spread int, token, ext string) string {
	if spread <= 1 {
		return fmt.Sprintf("p%d/t%05d-%s.%s", phase, task, token, ext)
	}
	return fmt.Sprintf("p%d/%02x/t%05d-%s.%s", phase, task%spread, task, token, ext)
}

// MaxSpread is the most prefixes a phase's objects are spread over.
const MaxSpread = 256

// spreadFor is the default spread of a job whose largest phase has tasks
// tasks: a prefix per map task's object, up to MaxSpread. A reducer reads
// part of every map object, all at once, so every object is hot while
// the reduce phase runs; with a prefix each, a prefix takes one request a
// reducer (R at once at most, against 3,500 or 5,500 a second). Past 256
// objects, 256 prefixes take 1.4 M reads a second, beyond any job here.
func spreadFor(tasks int) int {
	return min(max(tasks, 1), MaxSpread)
}

// doneKey is the record an attempt writes once its output is complete:
// the claim the driver commits (or, for a second attempt, ignores).
func doneKey(phase, task int, token string) string {
	return fmt.Sprintf("p%d/done/t%05d-%s.json", phase, task, token)
}

// failKey is where an attempt that failed leaves its error for the driver.
func failKey(phase, task int, token string) string {
	return fmt.Sprintf("p%d/fail/t%05d-%s.json", phase, task, token)
}

func taskPrefix(dir string, phase, task int) string {
	return fmt.Sprintf("p%d/%s/t%05d-", phase, dir, task)
}

func manifestKey(phase int) string { return fmt.Sprintf("p%d/manifest.json", phase) }

// destKey names a task's output at a job's destination (Spec.Out): the
// part's number first, so the parts list in order, then the job and the
// attempt, so that the job's cleanup finds what it wrote and nothing else.
func destKey(task int, job, token, ext string) string {
	return fmt.Sprintf("part-%05d.%s.%s.%s", task, job, token, ext)
}

// destManifestKey lists, at the destination, the parts a job committed.
const destManifestKey = "manifest.json"

// Output is what one attempt of a task wrote: its done record, and an
// entry of its phase's manifest once committed.
type Output struct {
	Task    int    `json:"task"`
	Attempt string `json:"attempt"`
	Worker  string `json:"worker,omitempty"`
	Key     string `json:"key"`
	// Dest says Key is under the job's destination, not its prefix.
	Dest bool  `json:"dest,omitempty"`
	Size int64 `json:"size"`
	// CRC is the CRC-32C of an IPC stream output, checked by the driver.
	CRC  uint32 `json:"crc32c,omitempty"`
	Rows int64  `json:"rows"`
	// Retries counts the attempt's requests tried again after a
	// retryable error, such as a 503 SlowDown.
	Retries int64 `json:"retries,omitempty"`
	// Parts index a shuffle object: part r is bytes [Off, Off+Len).
	Parts []Part `json:"parts,omitempty"`
	// Scan is what a map task's scan read.
	Scan *ScanCounts `json:"scan,omitempty"`
	// InRows and InBytes are what the attempt read: a map task's scan
	// (rows, bytes fetched), a reducer's parts of the map outputs.
	InRows  int64 `json:"in_rows,omitempty"`
	InBytes int64 `json:"in_bytes,omitempty"`
	// Start and End are the worker's clock when the attempt began and
	// when its output was complete, for the event log.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// MaxRSS is the worker's peak resident set, in bytes, when it
	// committed (0: unknown).
	MaxRSS int64 `json:"max_rss,omitempty"`
}

// ScanCounts are what a map task's scan read, in the terms of scan.Stats;
// the driver sums them over a phase's committed attempts.
type ScanCounts struct {
	Rows            int64 `json:"rows"`
	RowGroups       int   `json:"row_groups"`
	RowGroupsPruned int   `json:"row_groups_pruned,omitempty"`
	BytesNeeded     int64 `json:"bytes_needed"`
	BytesFetched    int64 `json:"bytes_fetched"`
	Requests        int64 `json:"requests"`
}

// String says what the scans of tasks map tasks read, in the words of
// scan.Stats.
func (c ScanCounts) String(tasks int) string {
	ratio := 0.0
	if c.BytesNeeded > 0 {
		ratio = float64(c.BytesFetched) / float64(c.BytesNeeded)
	}
	return fmt.Sprintf("scan: %d rows from %d row groups (%d row groups pruned) in %d map tasks\nscan: %.1f MiB needed, %.1f MiB fetched (%.2fx) in %d requests",
		c.Rows, c.RowGroups, c.RowGroupsPruned, tasks, float64(c.BytesNeeded)/(1<<20), float64(c.BytesFetched)/(1<<20), ratio, c.Requests)
}

// add adds what one more scan read.
func (c *ScanCounts) add(o ScanCounts) {
	c.Rows += o.Rows
	c.RowGroups += o.RowGroups
	c.RowGroupsPruned += o.RowGroupsPruned
	c.BytesNeeded += o.BytesNeeded
	c.BytesFetched += o.BytesFetched
	c.Requests += o.Requests
}

// Part is one reducer's share of a shuffle object: an Arrow IPC stream.
type Part struct {
	Off  int64  `json:"off"`
	Len  int64  `json:"len"`
	CRC  uint32 `json:"crc32c"`
	Rows int64  `json:"rows"`
}

// Failure is what a failed attempt leaves behind.
type Failure struct {
	Task    int       `json:"task"`
	Attempt string    `json:"attempt"`
	Worker  string    `json:"worker,omitempty"`
	Error   string    `json:"error"`
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
	// Lost, when set, is the committed output of the phase before that
	// the attempt found missing or corrupt: the driver recomputes it
	// rather than retry a task that cannot succeed.
	Lost *Lost `json:"lost,omitempty"`
	// Permanent says no other attempt can succeed (the pipeline is
	// invalid where it runs: a program not found, a column it lacks):
	// the driver fails the job at once instead of retrying the task.
	Permanent bool `json:"permanent,omitempty"`
}

// Lost names a committed output: task Task of phase Phase, at Key under
// the job's prefix.
type Lost struct {
	Phase int    `json:"phase"`
	Task  int    `json:"task"`
	Key   string `json:"key"`
}

// LostInputError is a task's failure to read a committed output of the
// phase before (missing, or not what its checksum says).
type LostInputError struct {
	Lost Lost
	Err  error
}

func (e *LostInputError) Error() string { return e.Err.Error() }
func (e *LostInputError) Unwrap() error { return e.Err }

// Manifest lists the committed output of every task of a phase, by task.
type Manifest struct {
	Phase   int      `json:"phase"`
	Outputs []Output `json:"outputs"`
}

// isToken reports whether s is 1 to 64 lower-case letters, digits and
// '-' (an attempt's name). Checked by hand: the regular expression, with
// its 64 repeats, took a tenth of every sluice process's start to compile.
func isToken(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func parseOutput(b []byte, phase Phase) (*Output, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if err := o.check(phase); err != nil {
		return nil, err
	}
	return &o, nil
}

func (o *Output) check(phase Phase) error {
	switch {
	case o.Task < 0 || o.Task >= phase.Tasks:
		return fmt.Errorf("task %d of %d", o.Task, phase.Tasks)
	case !isToken(o.Attempt):
		return fmt.Errorf("attempt %q", o.Attempt)
	case o.Key == "" || strings.Contains(o.Key, ".."):
		return fmt.Errorf("output key %q", o.Key)
	case o.Size < 0 || o.Rows < 0:
		return fmt.Errorf("size %d rows %d", o.Size, o.Rows)
	}
	if phase.Output != OutShuffle {
		if len(o.Parts) != 0 {
			return fmt.Errorf("%d parts in a %s output", len(o.Parts), phase.Output)
		}
		return nil
	}
	if len(o.Parts) != phase.Parts {
		return fmt.Errorf("%d parts, the shuffle has %d", len(o.Parts), phase.Parts)
	}
	var end int64
	for r, p := range o.Parts {
		if p.Off != end || p.Len <= 0 || p.Rows < 0 {
			return fmt.Errorf("part %d [%d, +%d) does not follow the one before (at %d)", r, p.Off, p.Len, end)
		}
		end += p.Len
	}
	if end > o.Size {
		return fmt.Errorf("parts end at %d, past the object's %d bytes", end, o.Size)
	}
	return nil
}

func parseManifest(b []byte, phaseIndex int, phase Phase) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest of phase %d: %w", phaseIndex, err)
	}
	if m.Phase != phaseIndex || len(m.Outputs) != phase.Tasks {
		return nil, fmt.Errorf("manifest of phase %d: it is for phase %d with %d outputs, want %d", phaseIndex, m.Phase, len(m.Outputs), phase.Tasks)
	}
	for i := range m.Outputs {
		if err := m.Outputs[i].check(phase); err != nil {
			return nil, fmt.Errorf("manifest of phase %d: output %d: %w", phaseIndex, i, err)
		}
		if m.Outputs[i].Task != i {
			return nil, fmt.Errorf("manifest of phase %d: output %d is task %d's", phaseIndex, i, m.Outputs[i].Task)
		}
	}
	return &m, nil
}

// A shuffle object is its parts, one Arrow IPC stream per reducer, then
// the index (the parts as JSON), the index's length as 4 bytes
// little-endian and shuffleMagic; the manifest carries the same index, so
// reducers read their parts without reading the footer.
var shuffleMagic = []byte("SLUICESH")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func shuffleFooter(parts []Part) ([]byte, error) {
	idx, err := json.Marshal(parts)
	if err != nil {
		return nil, err
	}
	out := append(idx, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out[len(idx):], uint32(len(idx)))
	return append(out, shuffleMagic...), nil
}
