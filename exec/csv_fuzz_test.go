package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzFromCSV: any text on from-csv's input gives typed batches or an
// error, never a panic, and leaves no memory behind; every value read
// can be printed.
func FuzzFromCSV(f *testing.F) {
	for _, s := range []string{
		"a,b,c\n1,2.5,x\n2,,y\n",
		"d,t,ok\n2024-01-02,2024-01-02 03:04:05,true\n,,false\n",
		"a\n1\n2\nx\n", "a,b\n1\n", "\"q\nx\",b\n\"1\"\"\",2\n", "", "\n\n", "a,a\n1,2\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		_ = Run(context.Background(), Pipeline{Source: FromCSV(nil, strings.NewReader(in), CSVOptions{BatchRows: 3}), Stages: []Stage{readEveryValue()}}, Options{Open: testOpen, Mem: mem, Workers: 1})
	})
}
