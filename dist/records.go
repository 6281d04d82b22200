package dist

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"

	"github.com/zeebo/xxh3"
)

// Where a job's objects live, relative to its prefix. Task outputs carry
// their attempt's token in the name, so two attempts of one task never
// write the same object; only the driver's manifest says which one
// counts.
const specKey = "job.json"

// Outputs are spread over 256 prefixes by a hash of the task: S3 limits
// requests per second per prefix and splits a busy key range only by
// its prefixes, so a shuffle's many reads must not all share one.
func dataKey(phase, task int, token, ext string) string {
	return fmt.Sprintf("p%d/%02x/t%05d-%s.%s", phase, spread(task), task, token, ext)
}

func spread(task int) byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(task))
	return byte(xxh3.Hash(b[:]))
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
	// Parts index a shuffle object: part r is bytes [Off, Off+Len).
	Parts []Part `json:"parts,omitempty"`
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
	Task    int    `json:"task"`
	Attempt string `json:"attempt"`
	Worker  string `json:"worker,omitempty"`
	Error   string `json:"error"`
}

// Manifest lists the committed output of every task of a phase, by task.
type Manifest struct {
	Phase   int      `json:"phase"`
	Outputs []Output `json:"outputs"`
}

var tokenRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

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
	case !tokenRE.MatchString(o.Attempt):
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
