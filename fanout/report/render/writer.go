package render

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sluice-data/sluice/fanout/report"
)

// WriterFor is how a report is written to the file name names, by its
// extension: WriteHTML for .html or .htm, WritePNG for .png (any case).
// A caller picks it before reading a log, so that a name it cannot write
// fails at once; its errors name the flag that gives the file in sluice
// report, -o.
func WriterFor(name string) (func(io.Writer, *report.Report) error, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".html", ".htm":
		return WriteHTML, nil
	case ".png":
		return WritePNG, nil
	}
	if name == "" {
		return nil, errors.New("-o FILE.html or FILE.png is required")
	}
	return nil, fmt.Errorf("-o %q: want a .html or .png file", name)
}
