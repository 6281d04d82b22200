package fanout

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sluice-data/sluice/internal/size"
)

// WriteJobs writes jobs as a table, a line each: when each was created,
// its age at now, its phases committed of all ("?" when its spec cannot
// be read), its objects and bytes, and its URL (what RemoveJob takes).
func WriteJobs(w io.Writer, jobs []JobInfo, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "created\tage\tphases\tobjects\tsize\tjob\t")
	for _, j := range jobs {
		phases := "?"
		if j.Phases > 0 {
			phases = fmt.Sprintf("%d/%d", j.Committed, j.Phases)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t\n", j.Created.Local().Format("2006-01-02 15:04"), now.Sub(j.Created).Round(time.Second),
			phases, j.Objects, size.IEC(j.Bytes), j.URL)
	}
	return tw.Flush()
}
