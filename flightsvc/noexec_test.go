package flightsvc

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluice-data/sluice/expr"
)

// TestRequestRunsNoProgram: a Flight request names a dataset, columns and
// a filter expression, never a pipeline, so none can bring an exec stage
// (a program to run on the server): one that tries is refused in one line.
func TestRequestRunsNoProgram(t *testing.T) {
	for _, cmd := range []string{
		`{"dataset": "t", "pipeline": "scan t | exec -- sh -c 'rm -rf ~' | show"}`,
		`{"dataset": "t", "stages": [{"stage": "exec", "argv": ["sh"]}]}`,
	} {
		_, err := ParseDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)})
		if err == nil || !strings.Contains(err.Error(), "command descriptor is not a request: json: unknown field") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	// A filter is an expression: a stage in it is a syntax error, not a stage.
	if _, err := expr.Parse("a > 1 | exec -- sh"); err == nil {
		t.Errorf("a pipeline in a filter parsed")
	}
}
